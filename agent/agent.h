// The agent: wires the task executor to the coordinator connection.
//
//   Connection (reader thread) ──OnMessage──▶ Executor (posts, never blocks)
//                              ──rendezvous──▶ RendezvousRelay (its thread)
//   Executor (its thread) ──Outbox::Send──▶ Connection (writer thread)
//
// Start-up: scan <work-dir>/tasks (restart), gather the inventory (a child
// process, 10 s timeout), then connect. Thread: Start and Stop are called
// from the main thread; MakeHello/OnConnected/OnMessage run on the
// connection's threads.
#ifndef CMAX_AGENT_AGENT_H_
#define CMAX_AGENT_AGENT_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agent/connection.h"
#include "agent/executor.h"
#include "agent/remediation_actions.h"
#include "agent/rendezvous_relay.h"
#include "agent/watch_runner.h"
#include "cmax/v1/inventory.pb.h"

namespace cmax::agent {

struct AgentOptions {
  std::string coordinator;  // HOST:PORT
  std::string node_name;
  std::string work_dir;
  std::string token;       // bearer token (never logged)
  std::string tls_ca_pem;  // empty: insecure
  std::string tls_cert_pem;  // client certificate for mutual TLS; empty: none
  std::string tls_key_pem;   // its private key (never logged)
  std::string root;        // --root for suites that take it; empty: none
  std::string bench_dir;   // where cmax-bench lives
  // Directories whose files plans may name (CMAX_ALLOW_READ for suites) and
  // roots the storage suite may write under (CMAX_STORAGE_ROOTS; the first
  // is CMAX_STORAGE_DIR, the default --path). Start() creates the roots.
  std::vector<std::string> allow_read;
  std::vector<std::string> storage_roots;
  int64_t clock_offset_ns = 0;
  int64_t inventory_timeout_ms = 10000;
  // Addresses reported in Hello (--advertise); empty: ReachableAddresses().
  std::vector<std::string> advertise;
  // The passive watch between runs (watch_runner.h); false: not started.
  bool watch = true;
  std::vector<std::string> watch_services;
  std::vector<std::string> watch_filesystems = {"/"};
  double watch_fs_full_percent = 95;
  double watch_interval_s = 5;
  // Units a remediation step may restart (--remediation-units); the
  // coordinator can never name one outside it (remediation_actions.h).
  std::vector<std::string> remediation_units;
};

class Agent : public ConnectionHandler {
 public:
  explicit Agent(AgentOptions options);
  ~Agent() override;  // Stop()

  // Non-OK when the work dir cannot be scanned.
  absl::Status Start();
  // Stops the connection, then every child (SIGTERM, SIGKILL after 5 s).
  void Stop();

  v1::Hello MakeHello() override;
  void OnConnected(uint64_t generation) override;
  void OnMessage(const v1::CoordinatorMessage& message) override;

  const std::string& boot_id() const { return boot_id_; }
  // The Prometheus exposition of --metrics-listen: connected to the
  // coordinator, children running and held, records waiting for
  // acknowledgement, spool bytes, last task end per suite. Thread-safe.
  std::string MetricsText() const;

 private:
  const AgentOptions options_;
  const std::string boot_id_;
  v1::Inventory inventory_;
  std::unique_ptr<Connection> connection_;
  std::unique_ptr<RendezvousRelay> relay_;  // before executor_: it outlives it
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<WatchRunner> watch_;  // null with --watch=false
  std::unique_ptr<RemediationRunner> remediation_;  // made in Start (needs the GPU count)
  std::atomic<uint64_t> generation_{0};  // the stream's, for remediation results
  bool started_ = false;
};

// A random 128-bit id as 32 hex digits.
std::string RandomBootId();

}  // namespace cmax::agent

#endif  // CMAX_AGENT_AGENT_H_
