// The agent's side of the group rendezvous: ranks speak JSON lines to a
// socket of their agent (common/rendezvous_client.h), the agent relays each
// request over its coordinator stream (AgentMessage.rendezvous) and routes
// the reply (CoordinatorMessage.rendezvous) back to the rank.
//
// Per group task (one `group`, one attempt) the relay opens:
//   - a Unix socket `<work-dir>/rv/<16 hex digits>.sock` (directory 0700,
//     socket 0600; a short path so it fits sun_path whatever the task id),
//     given to the ranks as CMAX_RENDEZVOUS=unix:<path>;
//   - for the mpirun launcher, also a TCP listener on the given address
//     (ephemeral port), CMAX_RENDEZVOUS=tcp://addr:port, whose connections
//     must first send {"secret": "<the task's random secret>"}.
// Both go away at Close (when the task's last local child ended).
//
// Checks and limits: a request line is at most 128 KiB; at most
// `max_outstanding` requests wait per connection; the rank must be one this
// agent launched for the group; request_id (unique per agent) and group are
// filled by the relay. The client may send its own request_id, which is
// echoed back. A reply with request_id 0 is about the connection.
//
// Barrier replies carry the start instant in the agent's clock (which a test
// may shift with --test-clock-offset-ms); the relay converts it to the real
// local clock so the rank can sleep until it.
//
// Coordinator stream down: requests wait (up to their own timeout plus a
// grace) and are sent again after the reconnect; the coordinator treats a
// resent set/get as idempotent, and a resent barrier arrival that it still
// holds ("already waiting") is not an error. A barrier released while the
// stream was down is lost with it; the rank's wait then times out (an error,
// never a wrong start).
//
// Threads: one relay thread polls every socket. Open/Close are called from
// the executor thread, OnReply/OnConnected from the connection's threads;
// all are thread-safe and never block on a rank.
//
// The code is split by idea (agent/rendezvous_relay_internal.h lists the
// files): rendezvous_relay.cc (the thread and its poll loop),
// rendezvous_endpoints.cc (the group table), rendezvous_wire.cc (the ranks'
// JSON lines) and rendezvous_requests.cc (the coordinator's side, timeouts).
#ifndef CMAX_AGENT_RENDEZVOUS_RELAY_H_
#define CMAX_AGENT_RENDEZVOUS_RELAY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/agent_clock.h"
#include "agent/outbox.h"
#include "cmax/v1/service.pb.h"

namespace cmax::agent {

struct RelayEndpoint {
  std::string address;      // unix:/path or tcp://host:port (what ranks get)
  std::string secret;       // tcp only
  std::string socket_path;  // the Unix socket (always opened)
  std::string tcp_address;  // host:port when a TCP listener was opened
};

// What the executor needs from the relay (a seam for tests).
class RendezvousEndpoints {
 public:
  virtual ~RendezvousEndpoints() = default;
  // Opens the endpoints of `group`; `ranks` are the ranks this agent starts
  // for it; `tcp_host` non-empty also opens a TCP listener on that address.
  // Reopening a group closes its previous endpoints first.
  virtual absl::StatusOr<RelayEndpoint> Open(const std::string& group, std::set<int> ranks,
                                             const std::string& tcp_host) = 0;
  // Closes the group's sockets and connections and removes the socket file.
  virtual void Close(const std::string& group) = 0;
};

struct RelayOptions {
  std::string work_dir;
  int64_t clock_offset_ns = 0;          // --test-clock-offset-ms
  size_t max_line_bytes = 128 * 1024;
  int max_outstanding = 4;              // per connection
  int max_connections = 1024;           // per group
  int64_t grace_ms = 5000;              // beyond a request's own timeout
  int64_t auth_timeout_ms = 5000;       // tcp: secret must arrive by then
  int64_t default_timeout_ms = 60000;   // request without timeout_ms
  int64_t max_timeout_ms = 10 * 60 * 1000;
};

class RendezvousRelay : public RendezvousEndpoints {
 public:
  // `outbox` must outlive the relay.
  RendezvousRelay(RelayOptions options, Outbox* outbox);
  ~RendezvousRelay() override;  // Stop()

  absl::Status Start();
  void Stop();

  absl::StatusOr<RelayEndpoint> Open(const std::string& group, std::set<int> ranks,
                                     const std::string& tcp_host) override;
  void Close(const std::string& group) override;

  // A reply from the coordinator. Thread-safe, non-blocking.
  void OnReply(const v1::RendezvousReply& reply);
  // Stream `generation` is up: requests not yet answered go out again.
  void OnConnected(uint64_t generation);

  // Tests.
  size_t open_groups() const;
  size_t pending_requests() const;

 private:
  struct Group;
  struct Conn;
  struct Pending {
    uint64_t conn_id = 0;
    uint64_t client_id = 0;
    v1::RendezvousRequest request;
    int64_t deadline_mono_ns = 0;
    uint64_t sent_generation = 0;  // 0: not sent on any stream yet
    bool resent = false;
  };

  void Loop();
  void Wake();
  void AcceptLocked(Group& g, int listen_fd, bool tcp) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReadLocked(Conn& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleLineLocked(Conn& c, const std::string& line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReplyLocked(uint64_t conn_id, const v1::RendezvousReply& reply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ErrorLocked(Conn& c, uint64_t client_id, const std::string& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushLocked(Conn& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseConnLocked(uint64_t conn_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseGroupLocked(const std::string& group) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendLocked(Pending& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpireLocked(int64_t now_mono) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RelayOptions options_;
  const AgentClock clock_;  // options_.clock_offset_ns
  Outbox* const outbox_;
  int wake_fds_[2] = {-1, -1};
  std::thread thread_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_request_id_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_conn_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::unique_ptr<Group>> groups_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::unique_ptr<Conn>> conns_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);  // by agent request id
};

}  // namespace cmax::agent

#endif  // CMAX_AGENT_RENDEZVOUS_RELAY_H_
