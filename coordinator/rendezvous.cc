#include "coordinator/rendezvous.h"

#include "absl/strings/str_cat.h"

namespace cmax::coordinator {

RendezvousOut Rendezvous::Reply(const Waiter& w, bool ok, const std::string& value,
                                const std::string& error) {
  RendezvousOut o;
  o.node = w.node;
  o.reply.set_request_id(w.request_id);
  o.reply.set_ok(ok);
  o.reply.set_value(value);
  o.reply.set_error(error);
  return o;
}

void Rendezvous::Open(const std::string& group, int world_size) {
  Group& g = groups_[group];
  g.world_size = world_size;
}

void Rendezvous::Close(const std::string& group, std::vector<RendezvousOut>* out) {
  auto it = groups_.find(group);
  if (it == groups_.end()) return;
  for (auto& [key, waiters] : it->second.getters) {
    for (const auto& w : waiters) out->push_back(Reply(w, false, "", "group ended"));
  }
  for (auto& [name, waiters] : it->second.barriers) {
    for (const auto& w : waiters) out->push_back(Reply(w, false, "", "group ended"));
  }
  groups_.erase(it);
}

void Rendezvous::Handle(const std::string& node, const v1::RendezvousRequest& req,
                        int64_t now_unix_ns, std::vector<RendezvousOut>* out) {
  int64_t timeout_ms = req.timeout_ms() > 0 ? std::min(req.timeout_ms(), kMaxRendezvousTimeoutMs)
                                            : 60000;
  Waiter w{node, req.request_id(), now_unix_ns + timeout_ms * 1000000, req.rank()};
  auto it = groups_.find(req.group());
  if (it == groups_.end()) {
    out->push_back(Reply(w, false, "", absl::StrCat("unknown group '", req.group().substr(0, 128),
                                                    "' (no such running group task)")));
    return;
  }
  Group& g = it->second;
  if (req.key().empty() || req.key().size() > kMaxRendezvousKey) {
    out->push_back(Reply(w, false, "",
                         absl::StrCat("key must be 1 to ", kMaxRendezvousKey, " bytes")));
    return;
  }
  if (req.rank() < 0 || req.rank() >= g.world_size) {
    out->push_back(Reply(w, false, "", absl::StrCat("rank ", req.rank(), " outside world of ",
                                                    g.world_size)));
    return;
  }
  if (req.op() == "set") {
    if (req.value().size() > kMaxRendezvousValue) {
      out->push_back(Reply(w, false, "",
                           absl::StrCat("value of ", req.value().size(), " bytes exceeds ",
                                        kMaxRendezvousValue)));
      return;
    }
    if (!g.kv.count(req.key()) && g.kv.size() >= kMaxRendezvousKeys) {
      out->push_back(Reply(w, false, "", "too many keys in this group"));
      return;
    }
    g.kv[req.key()] = req.value();
    out->push_back(Reply(w, true, "", ""));
    auto gw = g.getters.find(req.key());
    if (gw != g.getters.end()) {
      for (const auto& waiter : gw->second) out->push_back(Reply(waiter, true, req.value(), ""));
      g.getters.erase(gw);
    }
    return;
  }
  if (req.op() == "get") {
    auto kv = g.kv.find(req.key());
    if (kv != g.kv.end()) {
      out->push_back(Reply(w, true, kv->second, ""));
    } else {
      g.getters[req.key()].push_back(w);
    }
    return;
  }
  if (req.op() == "barrier") {
    auto& arrived = g.barriers[req.key()];
    for (const auto& a : arrived) {
      if (a.rank == req.rank()) {
        out->push_back(Reply(w, false, "", "rank already waiting at this barrier"));
        return;
      }
    }
    arrived.push_back(w);
    if (static_cast<int>(arrived.size()) >= g.world_size) {
      const int64_t start = now_unix_ns + lead_ns_;
      for (const auto& a : arrived) {
        out->push_back(Reply(a, true, absl::StrCat(to_agent_clock_(a.node, start)), ""));
      }
      g.barriers.erase(req.key());
    }
    return;
  }
  out->push_back(Reply(w, false, "", absl::StrCat("unknown op '", req.op().substr(0, 32),
                                                  "' (set, get, barrier)")));
}

void Rendezvous::Expire(int64_t now_unix_ns, std::vector<RendezvousOut>* out) {
  auto expire = [&](std::map<std::string, std::vector<Waiter>>& waiting, const char* what) {
    for (auto it = waiting.begin(); it != waiting.end();) {
      auto& ws = it->second;
      for (auto w = ws.begin(); w != ws.end();) {
        if (w->deadline_ns <= now_unix_ns) {
          out->push_back(Reply(*w, false, "", absl::StrCat(what, " '", it->first, "' timed out")));
          w = ws.erase(w);
        } else {
          ++w;
        }
      }
      it = ws.empty() ? waiting.erase(it) : std::next(it);
    }
  };
  for (auto& [name, g] : groups_) {
    expire(g.getters, "get");
    expire(g.barriers, "barrier");
  }
}

}  // namespace cmax::coordinator
