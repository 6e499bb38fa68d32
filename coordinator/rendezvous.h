// Key-value store and barriers for the ranks of group tasks (gang, barrier,
// pairs). Ranks reach it through their agent (a Unix socket relayed over the
// agent's stream). NCCL exchanges its unique id here; Gloo uses it as its
// store; barrier suites learn their common start instant here.
//
// Ops: set(key, value); get(key) waits until the key exists or the deadline;
// barrier(name) waits until every rank of the group arrived, then every
// waiter gets the release instant plus a lead, in its own node's clock
// (decimal nanoseconds), so ranks can start together.
//
// Limits: keys up to 256 bytes, values up to 64 KiB, 4096 keys per group,
// timeouts up to 10 minutes. A group exists only while its task runs;
// requests for other groups are refused.
//
// Thread: owned by the coordinator core thread; not thread-safe.
#ifndef CMAX_COORDINATOR_RENDEZVOUS_H_
#define CMAX_COORDINATOR_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cmax/v1/rendezvous.pb.h"

namespace cmax::coordinator {

inline constexpr size_t kMaxRendezvousKey = 256;
inline constexpr size_t kMaxRendezvousValue = 64 * 1024;
inline constexpr size_t kMaxRendezvousKeys = 4096;
inline constexpr int64_t kMaxRendezvousTimeoutMs = 10 * 60 * 1000;

struct RendezvousOut {
  std::string node;  // where the reply goes
  v1::RendezvousReply reply;
};

class Rendezvous {
 public:
  // `to_agent_clock(node, unix_ns)` converts a coordinator instant into a
  // node's clock; `lead_ns` is how far after release a barrier's start lies.
  Rendezvous(std::function<int64_t(const std::string&, int64_t)> to_agent_clock,
             int64_t lead_ns)
      : to_agent_clock_(std::move(to_agent_clock)), lead_ns_(lead_ns) {}

  void Open(const std::string& group, int world_size);
  // Drops the group; pending waiters get an error.
  void Close(const std::string& group, std::vector<RendezvousOut>* out);
  bool IsOpen(const std::string& group) const { return groups_.count(group) > 0; }

  void Handle(const std::string& node, const v1::RendezvousRequest& request, int64_t now_unix_ns,
              std::vector<RendezvousOut>* out);
  // Replies with an error to waiters whose deadline passed.
  void Expire(int64_t now_unix_ns, std::vector<RendezvousOut>* out);

 private:
  struct Waiter {
    std::string node;
    uint64_t request_id;
    int64_t deadline_ns;
    int rank;
  };
  struct Group {
    int world_size = 0;
    std::map<std::string, std::string> kv;
    std::map<std::string, std::vector<Waiter>> getters;     // key -> waiting gets
    std::map<std::string, std::vector<Waiter>> barriers;    // name -> arrived ranks
  };
  static RendezvousOut Reply(const Waiter& w, bool ok, const std::string& value,
                             const std::string& error);

  std::function<int64_t(const std::string&, int64_t)> to_agent_clock_;
  int64_t lead_ns_;
  std::map<std::string, Group> groups_;
};

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_RENDEZVOUS_H_
