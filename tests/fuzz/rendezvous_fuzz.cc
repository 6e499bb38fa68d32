// libFuzzer target: the coordinator's rendezvous protocol. The input is
// decoded into a sequence of operations on one Rendezvous: requests from
// agents (set / get / barrier / anything, with arbitrary groups, keys,
// values, ranks and timeouts), clock advances with Expire, and groups opened
// and closed as their tasks start and end.
//
// Properties: every request gets exactly one reply, sent to the node that
// asked, once its group is closed at the latest; no reply answers a request
// that was never made or already answered; a successful barrier's value is
// a decimal instant; a successful get returns the last value set.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "coordinator/rendezvous.h"

namespace {

using cmax::coordinator::Rendezvous;
using cmax::coordinator::RendezvousOut;

struct Pending {
  std::string node, group, op, key;
};

[[noreturn]] void Fail(const char* what, uint64_t id) {
  fprintf(stderr, "rendezvous property violated: %s (request %llu)\n", what,
          static_cast<unsigned long long>(id));
  abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const char* kNodes[] = {"n0", "n1", "n2"};
  const char* kGroups[] = {"g0", "g1", "g2"};
  const char* kOps[] = {"set", "get", "barrier"};
  Rendezvous rv([](const std::string& node, int64_t t) { return t + (node == "n1" ? 5 : -5); },
                500000000);
  int64_t now = 1700000000000000000;
  uint64_t next_id = 1;
  std::map<uint64_t, Pending> pending;
  std::map<std::string, std::map<std::string, std::string>> kv;  // what set stored

  auto take = [&](std::vector<RendezvousOut>& out) {
    for (const auto& o : out) {
      const uint64_t id = o.reply.request_id();
      auto it = pending.find(id);
      if (it == pending.end()) Fail("reply to no pending request", id);
      if (it->second.node != o.node) Fail("reply sent to another node", id);
      if (o.reply.ok() && it->second.op == "barrier") {
        int64_t t;
        if (!absl::SimpleAtoi(o.reply.value(), &t)) Fail("barrier value is not an instant", id);
      }
      if (o.reply.ok() && it->second.op == "get") {
        auto g = kv[it->second.group].find(it->second.key);
        if (g == kv[it->second.group].end() || g->second != o.reply.value()) {
          Fail("get returned something never set", id);
        }
      }
      if (!o.reply.ok() && o.reply.error().empty()) Fail("refusal without a reason", id);
      pending.erase(it);
    }
    out.clear();
  };

  std::vector<RendezvousOut> out;
  int steps = 0;
  while (in.remaining_bytes() > 0 && ++steps < 2000) {
    switch (in.ConsumeIntegralInRange<int>(0, 9)) {
      case 0: {  // a group task starts
        std::string g = kGroups[in.ConsumeIntegralInRange<int>(0, 2)];
        if (!rv.IsOpen(g)) {
          rv.Open(g, in.ConsumeIntegralInRange<int>(0, 4));
          kv.erase(g);
        }
        break;
      }
      case 1: {  // a group task ends
        std::string g = kGroups[in.ConsumeIntegralInRange<int>(0, 2)];
        rv.Close(g, &out);
        take(out);
        break;
      }
      case 2:  // time passes
        now += in.ConsumeIntegralInRange<int64_t>(0, int64_t{700} * 1000000000);
        rv.Expire(now, &out);
        take(out);
        break;
      default: {  // a request from an agent
        cmax::v1::RendezvousRequest req;
        req.set_request_id(next_id++);
        const std::string node = kNodes[in.ConsumeIntegralInRange<int>(0, 2)];
        if (in.ConsumeBool()) {
          req.set_group(kGroups[in.ConsumeIntegralInRange<int>(0, 2)]);
        } else {
          req.set_group(in.ConsumeRandomLengthString(300));
        }
        if (in.ConsumeIntegralInRange<int>(0, 7) > 0) {
          req.set_op(kOps[in.ConsumeIntegralInRange<int>(0, 2)]);
        } else {
          req.set_op(in.ConsumeRandomLengthString(64));
        }
        req.set_key(in.ConsumeBool() ? std::string(1, 'a' + in.ConsumeIntegralInRange<int>(0, 3))
                                     : in.ConsumeRandomLengthString(400));
        const int value_kind = in.ConsumeIntegralInRange<int>(0, 9);
        if (value_kind == 0) {
          req.set_value(std::string(cmax::coordinator::kMaxRendezvousValue +
                                        in.ConsumeIntegralInRange<int>(0, 1),
                                    'v'));
        } else {
          req.set_value(in.ConsumeRandomLengthString(64));
        }
        req.set_timeout_ms(in.ConsumeIntegral<int64_t>());
        req.set_rank(in.ConsumeIntegralInRange<int32_t>(-2, 5));
        pending[req.request_id()] = {node, req.group(), req.op(), req.key()};
        rv.Handle(node, req, now, &out);
        // What a successful set stored, for checking later gets.
        for (const auto& o : out) {
          if (o.reply.request_id() == req.request_id() && o.reply.ok() && req.op() == "set") {
            kv[req.group()][req.key()] = req.value();
          }
        }
        take(out);
        break;
      }
    }
  }
  for (const char* g : kGroups) rv.Close(g, &out);
  take(out);
  if (!pending.empty()) Fail("request never answered", pending.begin()->first);
  return 0;
}
