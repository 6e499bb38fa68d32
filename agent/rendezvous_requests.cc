// The coordinator's side of the relay: a pending request goes out on the
// current stream (SendLocked) and again after a reconnect (OnConnected,
// marked resent so a barrier the coordinator still holds is not an error);
// a reply is routed to the connection that asked, with the client's own
// request id and a barrier's start instant converted from the agent's clock
// to the real one (AgentClock); requests past their timeout plus grace get
// a timeout error, and TCP connections that sent no secret within
// auth_timeout_ms are closed.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/rendezvous_relay.h"
#include "agent/rendezvous_relay_internal.h"

namespace cmax::agent {

void RendezvousRelay::OnReply(const v1::RendezvousReply& reply) {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(reply.request_id());
  if (it == pending_.end()) return;  // its rank went away, or a duplicate
  Pending& p = it->second;
  if (!reply.ok() && p.resent && p.request.op() == "barrier" &&
      absl::StrContains(reply.error(), "already waiting")) {
    return;  // the first arrival still waits at the coordinator
  }
  v1::RendezvousReply out = reply;
  out.set_request_id(p.client_id);
  if (reply.ok() && p.request.op() == "barrier") {
    int64_t start = 0;
    if (absl::SimpleAtoi(reply.value(), &start)) {
      out.set_value(absl::StrCat(clock_.ToRealNs(start)));
    }
  }
  const uint64_t conn = p.conn_id;
  pending_.erase(it);
  ReplyLocked(conn, out);
  Wake();
}

void RendezvousRelay::OnConnected(uint64_t generation) {
  absl::MutexLock lock(&mu_);
  generation_ = generation;
  for (auto& [id, p] : pending_) {
    if (p.sent_generation != 0) p.resent = true;
    SendLocked(p);
  }
}

void RendezvousRelay::SendLocked(Pending& p) {
  if (generation_ == 0) return;
  v1::AgentMessage m;
  *m.mutable_rendezvous() = p.request;
  if (outbox_->Send(generation_, std::move(m))) p.sent_generation = generation_;
}

void RendezvousRelay::ExpireLocked(int64_t now_mono) {
  std::vector<uint64_t> expired;
  for (const auto& [id, p] : pending_) {
    if (p.deadline_mono_ns <= now_mono) expired.push_back(id);
  }
  for (uint64_t id : expired) {
    Pending p = std::move(pending_[id]);
    pending_.erase(id);
    v1::RendezvousReply r;
    r.set_request_id(p.client_id);
    r.set_ok(false);
    r.set_error(absl::StrCat(p.request.op(), " '", p.request.key().substr(0, 64),
                             "' timed out: no answer from the coordinator",
                             p.sent_generation == 0 ? " (the coordinator stream is down)" : ""));
    ReplyLocked(p.conn_id, r);
  }
  std::vector<uint64_t> slow;
  for (const auto& [id, c] : conns_) {
    if (!c->authed && now_mono - c->accepted_mono_ns > options_.auth_timeout_ms * 1000000) {
      slow.push_back(id);
    }
  }
  for (uint64_t id : slow) CloseConnLocked(id);
}

}  // namespace cmax::agent
