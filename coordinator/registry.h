// The agents the coordinator knows: connection state, heartbeats, clock
// offsets and inventories.
//
//   (Hello) ──▶ connected ──(stream ends)──▶ disconnected ──(heartbeat timeout)──▶ lost
//                 ▲  │                          │                                   │
//                 │  └──(silent past timeout)───┼───────────────────────────────────┘
//                 └──────────(Hello again)──────┴───────────────────────────────────┘
//
// Thread: owned by the coordinator core thread; not thread-safe.
#ifndef CMAX_COORDINATOR_REGISTRY_H_
#define CMAX_COORDINATOR_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cmax/v1/service.pb.h"

namespace cmax::coordinator {

// The coordinator's end of one agent stream. Implemented by the gRPC reactor
// (service.cc) and by fakes in tests. Send never blocks.
class AgentSession {
 public:
  virtual ~AgentSession() = default;
  virtual void Send(const v1::CoordinatorMessage& message) = 0;
  // Ends the stream (e.g. replaced by a newer connection of the same node).
  virtual void Close(const std::string& reason) = 0;
  virtual std::string peer() const = 0;
  // When the stream last delivered a message (monotonic ns), stamped as it
  // is read, before the core gets to it; 0 when not known. An agent is lost
  // when its stream is silent, not when the core is behind on its queue.
  virtual int64_t last_receive_mono_ns() const { return 0; }
};

enum class AgentState { kConnected, kDisconnected, kLost };
const char* AgentStateName(AgentState state);

struct AgentEntry {
  std::string node;
  AgentState state = AgentState::kLost;
  AgentSession* session = nullptr;  // non-null only while connected
  v1::Inventory inventory;
  std::vector<std::string> addresses;
  std::string boot_id;
  int64_t last_heard_ns = 0;         // coordinator clock (monotonic)
  int64_t last_heard_unix_ns = 0;    // for display
  int64_t state_since_ns = 0;        // monotonic
  // Clock estimate from the Ping/Pong with the smallest round trip among the
  // recent ones: offset = agent clock - coordinator clock.
  double offset_ns = 0;
  double rtt_ns = -1;
  int pong_count = 0;
};

class Registry {
 public:
  explicit Registry(int64_t heartbeat_timeout_ns) : timeout_ns_(heartbeat_timeout_ns) {}

  // A Hello arrived on `session`. Returns the session it replaces (to be
  // closed by the caller), or nullptr.
  AgentSession* OnHello(const v1::Hello& hello, AgentSession* session, int64_t now_ns,
                        int64_t now_unix_ns);
  // Any message from the session's agent: refreshes its heartbeat.
  void OnHeard(AgentSession* session, int64_t now_ns, int64_t now_unix_ns);
  // Clock sample. t4 is the coordinator's receive time (wall clock).
  void OnPong(AgentSession* session, const v1::Pong& pong, int64_t t4_unix_ns);
  // The stream ended. Returns the node, or "" when the session was unknown or
  // already replaced.
  std::string OnStreamEnded(AgentSession* session, int64_t now_ns);
  // Nodes that turn lost now: connected but silent for longer than the
  // heartbeat timeout (heard: the latest of OnHeard and the session's
  // last_receive_mono_ns), or disconnected for longer than the timeout and
  // kMinReconnectGraceNs: an agent whose stream ended (a coordinator
  // restart, a reset connection) redials after its backoff, at most 10 s
  // + 25 % jitter (agent/connection.h), and must not be lost meanwhile to a
  // timeout set shorter than that.
  std::vector<std::string> ExpireSilent(int64_t now_ns);
  static constexpr int64_t kMinReconnectGraceNs = 15'000'000'000;
  // Known-but-not-connected nodes loaded at start (from the store) so that
  // they turn lost if they never come back.
  void AddRemembered(const std::string& node, const v1::Inventory& inventory, int64_t now_ns);

  const AgentEntry* Find(const std::string& node) const;
  std::string NodeOf(AgentSession* session) const;
  bool IsConnected(const std::string& node) const;
  std::vector<const AgentEntry*> All() const;
  std::vector<std::string> ConnectedNodes() const;

  // Up to `n` connected nodes after the last one this returned, wrapping
  // around: successive calls sweep every connected node in turn.
  std::vector<std::string> NextToPing(size_t n);
  size_t ConnectedCount() const;
  // The silence after which ExpireSilent declares a node lost.
  void set_timeout_ns(int64_t ns) { timeout_ns_ = ns; }
  int64_t timeout_ns() const { return timeout_ns_; }

  // Agent clock time corresponding to coordinator wall time `unix_ns`.
  int64_t ToAgentClock(const std::string& node, int64_t unix_ns) const;

 private:
  int64_t timeout_ns_;
  std::map<std::string, AgentEntry> agents_;
  std::map<AgentSession*, std::string> by_session_;
  std::string ping_cursor_;  // NextToPing resumes after this node
};

// Node names agents may use: [A-Za-z0-9_.-]{1,64}.
bool IsValidNodeName(const std::string& name);

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_REGISTRY_H_
