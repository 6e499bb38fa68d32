// A real cmax cluster for integration tests: a coordinator and N agents as
// separate processes. Agents run in network namespaces of their own on a
// bridge (tests/hosts.sh) where the machine allows it; otherwise on loopback,
// and the cluster says so. Everything is torn down by the destructor.
#ifndef CMAX_TESTS_INTEGRATION_CLUSTER_H_
#define CMAX_TESTS_INTEGRATION_CLUSTER_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cmax/v1/service.pb.h"
#include "common/subprocess.h"

namespace cmax::testing {

// `cmaxctl run` / `watch` exit code of a run that completed without failures
// but is not rated (README, "Using it"): every plan that does not evaluate
// Compute, Networking, Storage, Reliability and Security on (nearly) every
// node, which is every plan these tests run on CPU-only agents.
inline constexpr int kExitNotRated = 4;
// ... and of a run in which nothing was measured: every task could not run
// (exit 2) or was cancelled, none completed or failed.
inline constexpr int kExitNothingMeasured = 5;
// ... and of any command the coordinator refused the credentials: no token, a
// wrong one, or a role without the call (README, "Exit codes").
inline constexpr int kExitCredentials = 6;

struct ClusterOptions {
  int agents = 3;
  bool netns = true;             // try namespaces; fall back to loopback
  // The coordinator's own default (--heartbeat-timeout 15): a loaded test
  // machine must not lose an agent a deployment would keep. Tests of loss
  // detection set their own.
  int heartbeat_timeout_s = 15;
  // The coordinator always requires a token, as deployed: this one, or a
  // random one made for the test when empty. no_token: --no-token instead.
  std::string token;
  bool no_token = false;
  // The agents present a credential of their own (--agent-token-file, as
  // deployed), a random one made for the test; shared_agent_token: they
  // present `token` instead (the shared token of older installations).
  bool shared_agent_token = false;
  bool tls = false;              // server TLS with certificates made for the test
  // With tls: the coordinator requires client certificates (--tls-client-ca)
  // and each agent presents its node's certificate (tls/node-N.pem: the
  // coordinator binds a certificate to the node it names), Ctl tls/client.pem.
  bool mtls = false;
  std::vector<std::string> agent_roots;  // per agent --root (fixture trees), may be short
  std::vector<int> clock_offsets_ms;     // per agent --test-clock-offset-ms
  // Per agent --advertise; empty entries (or none): 127.0.0.1 on loopback (so
  // trial agents on one machine talk over loopback), the namespace's own
  // address otherwise (the agent's default).
  std::vector<std::string> advertise;
  // Added to every agent's environment (and so to its suites'): e.g. a PATH
  // with a fake tool first (tests/integration/rdma_test.cc).
  std::map<std::string, std::string> agent_env;
  // Added to every agent's command line (e.g. --watch-interval 0.5).
  std::vector<std::string> agent_args;
  // Every agent's --bench-dir; empty: the build's own (BinDir()). A folder
  // with a stand-in cmax-bench, e.g. the hostile rank of rdma_test.cc.
  std::string bench_dir;
  // Added to the coordinator's command line (e.g. --http-listen 127.0.0.1:0,
  // which listens on the loopback of the coordinator's namespace: reach it
  // with OnHub).
  std::vector<std::string> coordinator_args;
};

class Cluster {
 public:
  // `prefix`: 1-8 of [a-z0-9], unique per test case (namespaces, temp dir).
  Cluster(std::string prefix, ClusterOptions options);
  ~Cluster();

  // Starts everything and waits until every agent is connected.
  absl::Status Start();
  absl::Status StartCoordinator();
  void StopCoordinator(int sig);
  absl::Status StartAgent(int i);
  void StopAgent(int i, int sig);
  // Waits until `n` agents report `state` (connected, lost, ...).
  absl::Status WaitForAgents(int n, const std::string& state, std::chrono::seconds timeout);

  // Runs cmaxctl against the coordinator (from the hub namespace), with the
  // cluster's token and CA.
  CommandResult Ctl(const std::vector<std::string>& args,
                    std::chrono::seconds timeout = std::chrono::seconds(60));
  // Runs a command in host i's namespace (or directly on loopback).
  CommandResult OnHost(int i, const std::vector<std::string>& argv,
                       std::chrono::seconds timeout = std::chrono::seconds(30));
  // Runs a command where the coordinator runs (the hub namespace, or
  // directly on loopback).
  CommandResult OnHub(const std::vector<std::string>& argv,
                      std::chrono::seconds timeout = std::chrono::seconds(30));
  // tests/hosts.sh subcommands (cut, heal, slow, block) for host i.
  absl::Status Hosts(const std::vector<std::string>& args);

  bool using_netns() const { return netns_; }
  const std::string& address() const { return address_; }
  // HOST:PORT of the web view from the coordinator's "web on" line; empty
  // without --http-listen in coordinator_args.
  const std::string& web_address() const { return web_address_; }
  const std::string& dir() const { return dir_; }
  std::string node(int i) const { return "node-" + std::to_string(i); }
  std::string agent_work_dir(int i) const;
  std::string data_dir() const { return dir_ + "/coordinator"; }
  // A directory every agent may use as a storage root (--storage-roots), as
  // a shared file system would be; created by the test that uses it.
  std::string shared_storage_dir() const { return dir_ + "/shared-storage"; }
  std::string token_file() const { return dir_ + "/token"; }
  // What the agents present: agent-token, or token_file() with
  // shared_agent_token (or without a token).
  std::string agent_token_file() const;
  pid_t agent_pid(int i) const;
  // A suite process (cmax-bench*) that agent i runs, whose command line holds
  // `cmdline_part` (e.g. "--soak="), or -1 when there is none now.
  pid_t SuiteProcessOf(int i, const std::string& cmdline_part) const;
  pid_t coordinator_pid() const;  // -1 when it is not running
  // Writes a plan file into the cluster's dir and returns its path.
  std::string WritePlan(const std::string& name, const std::string& yaml) const;
  // The run id printed by `cmaxctl run` ("run <id>: ...").
  static std::string RunIdFrom(const std::string& ctl_output);

  static std::string BinDir();
  static std::string SourceDir();

 private:
  std::vector<std::string> InNamespace(const std::string& ns,
                                       std::vector<std::string> argv) const;

  std::string prefix_;
  ClusterOptions options_;
  bool netns_ = false;
  std::string dir_;
  std::string address_;
  std::string web_address_;
  std::string hub_addr_;
  std::vector<std::string> host_addrs_;
  int port_ = 0;
  std::unique_ptr<Subprocess> coordinator_;
  std::vector<std::unique_ptr<Subprocess>> agents_;
};

}  // namespace cmax::testing

#endif  // CMAX_TESTS_INTEGRATION_CLUSTER_H_
