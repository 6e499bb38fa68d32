// Who may call what (docs/security.md, coordinator/credentials.h), against a
// real coordinator, agents and cmaxctl: a node's credentials are refused every
// operator call, the roles read, run and admin each do what they say, and an
// operator's token is not an agent's.
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/integration/cluster.h"
#include "tests/scratch_dir.h"

using cmax::testing::Cluster;
using namespace std::chrono_literals;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteSecret(const std::string& path, const std::string& secret) {
  std::ofstream(path) << secret << "\n";
  chmod(path.c_str(), 0600);
}

// cmaxctl against the cluster's coordinator with the credentials in
// `credentials` (--token-file F, --tls-cert F --tls-key F ...) instead of the
// cluster's own.
cmax::CommandResult CtlWith(Cluster& c, const std::vector<std::string>& credentials,
                            const std::vector<std::string>& command) {
  std::vector<std::string> argv = {Cluster::BinDir() + "/cmaxctl", "--coordinator", c.address()};
  argv.insert(argv.end(), credentials.begin(), credentials.end());
  if (c.using_netns() && !absl::StrContains(absl::StrJoin(credentials, " "), "--tls-ca")) {
    argv.push_back("--allow-insecure");  // the coordinator is on the test bridge, no TLS
  }
  argv.insert(argv.end(), command.begin(), command.end());
  return c.OnHub(argv, 60s);
}

// Every operator call cmaxctl makes, each as the command a user types.
std::vector<std::vector<std::string>> EveryOperatorCommand(const std::string& plan,
                                                           const std::string& run_id,
                                                           const std::string& out) {
  return {{"agents"},
          {"runs"},
          {"run", "--plan", plan, "--no-wait"},
          {"watch", run_id},
          {"cancel", run_id},
          {"report", run_id, "-o", out},
          {"export", run_id, "-o", out},
          {"history"},
          {"history", "node-1"},
          {"schedule", "add", "--plan", plan, "--every", "7d"},
          {"schedule", "list"},
          {"schedule", "pause", "1"},
          {"compare", run_id, run_id}};
}

}  // namespace

TEST_CASE("mutual TLS: a node's certificate and the agent credential are refused every "
          "operator call",
          "[integration][security]") {
  Cluster c("cr1", {.agents = 2, .token = "the operators' admin token", .tls = true,
                    .mtls = true});
  auto s = c.Start();  // each agent dials with its node's certificate and the agent token
  INFO(s.ToString());
  REQUIRE(s.ok());
  const std::string plan = c.WritePlan("cr1", "name: cr1\nsuites:\n  - suite: selftest\n");
  auto first = c.Ctl({"run", "--plan", plan}, 120s);  // the operator's own run
  INFO(first.out << first.err);
  const std::string run_id = Cluster::RunIdFrom(first.out);
  REQUIRE(!run_id.empty());

  const std::string tls = c.dir() + "/tls/";
  const std::vector<std::string> node_credentials = {
      "--token-file", c.agent_token_file(), "--tls-ca", tls + "ca.pem",
      "--tls-cert",   tls + "node-0.pem",   "--tls-key", tls + "node-0.key"};
  for (const auto& command : EveryOperatorCommand(plan, run_id, c.dir() + "/stolen.out")) {
    auto r = CtlWith(c, node_credentials, command);
    INFO(absl::StrJoin(command, " ") << ": exit " << r.exit.code << "\n" << r.out << r.err);
    CHECK(r.exit.code == cmax::testing::kExitCredentials);
    CHECK(absl::StrContains(r.err, "refused this credential the call"));
  }
  // A node's certificate stays a node's with the operators' token too.
  const std::vector<std::string> node_with_admin_token = {
      "--token-file", c.token_file(),     "--tls-ca", tls + "ca.pem",
      "--tls-cert",   tls + "node-1.pem", "--tls-key", tls + "node-1.key"};
  auto agents = CtlWith(c, node_with_admin_token, {"agents"});
  INFO(agents.out << agents.err);
  CHECK(agents.exit.code == cmax::testing::kExitCredentials);
  CHECK(absl::StrContains(agents.err, "names node 'node-1'"));

  // Nothing the node asked for happened: one run, completed; no schedule.
  auto runs = c.Ctl({"runs", "--json"});
  INFO(runs.out << runs.err);
  CHECK(runs.exit.code == 0);
  size_t listed = 0;
  for (size_t at = runs.out.find("\"run_id\""); at != std::string::npos;
       at = runs.out.find("\"run_id\"", at + 1)) {
    ++listed;
  }
  CHECK(listed == 1);
  CHECK(!absl::StrContains(runs.out, "cancelled"));
  auto schedules = c.Ctl({"schedule", "list", "--json"});
  INFO(schedules.out << schedules.err);
  CHECK(schedules.exit.code == 0);
  CHECK(!absl::StrContains(schedules.out, "\"id\""));
  const std::string log = Slurp(c.dir() + "/coordinator.log");
  // Each refusal is logged with the call and the node the certificate names
  // (the certificate decides before the token: the agent credential alone,
  // without a node's certificate, is the next case's).
  CHECK(absl::StrContains(log, "SubmitRun from"));
  CHECK(absl::StrContains(log, "names node 'node-0': a node's certificate never acts as an "
                               "operator"));
}

TEST_CASE("roles: read reads, run runs, admin schedules, the agent credential is no "
          "operator's and an operator's token no agent's",
          "[integration][security]") {
  cmax::testing::ScratchDir scratch;
  const std::string read_token = scratch.path + "/read-token";
  const std::string run_token = scratch.path + "/run-token";
  WriteSecret(read_token, "a read-only token for cr2");
  WriteSecret(run_token, "a run token for cr2");
  Cluster c("cr2", {.agents = 1,
                    .coordinator_args = {"--read-token-file", read_token, "--run-token-file",
                                         run_token}});
  auto s = c.Start();
  INFO(s.ToString());
  REQUIRE(s.ok());
  const std::string plan = c.WritePlan("cr2", "name: cr2\nsuites:\n  - suite: selftest\n");

  // The agent credential: no listing, no run.
  for (std::vector<std::string> command : {std::vector<std::string>{"agents"},
                                           std::vector<std::string>{"run", "--plan", plan}}) {
    auto r = CtlWith(c, {"--token-file", c.agent_token_file()}, command);
    INFO(command[0] << ": " << r.out << r.err);
    CHECK(r.exit.code == cmax::testing::kExitCredentials);
    CHECK(absl::StrContains(r.err, "accepted on the agent stream alone"));
  }
  // read: lists, but neither runs nor schedules.
  auto listed = CtlWith(c, {"--token-file", read_token}, {"agents"});
  INFO(listed.out << listed.err);
  CHECK(listed.exit.code == 0);
  CHECK(absl::StrContains(listed.out, "node-0"));
  auto read_run = CtlWith(c, {"--token-file", read_token}, {"run", "--plan", plan});
  INFO(read_run.out << read_run.err);
  CHECK(read_run.exit.code == cmax::testing::kExitCredentials);
  CHECK(absl::StrContains(read_run.err, "SubmitRun needs the run role; this token has the read"));
  // run: runs, but adds no schedule.
  auto run = CtlWith(c, {"--token-file", run_token}, {"run", "--plan", plan});
  INFO(run.out << run.err);
  CHECK(run.exit.code == cmax::testing::kExitNotRated);
  auto run_schedule = CtlWith(c, {"--token-file", run_token},
                              {"schedule", "add", "--plan", plan, "--every", "7d"});
  INFO(run_schedule.out << run_schedule.err);
  CHECK(run_schedule.exit.code == cmax::testing::kExitCredentials);
  CHECK(absl::StrContains(run_schedule.err, "AddSchedule needs the admin role"));
  // admin: schedules.
  auto admin_schedule = c.Ctl({"schedule", "add", "--plan", plan, "--every", "7d"});
  INFO(admin_schedule.out << admin_schedule.err);
  CHECK(admin_schedule.exit.code == 0);

  // An agent that presents an operator's token is refused its stream.
  cmax::SpawnOptions so;
  so.argv = {Cluster::BinDir() + "/cmax-agent", "--coordinator", c.address(),
             "--node-name", "operator-token", "--work-dir", c.dir() + "/extra",
             "--bench-dir", Cluster::BinDir(), "--token-file", c.token_file()};
  if (c.using_netns()) {
    so.argv.push_back("--allow-insecure");
    so.argv.insert(so.argv.begin(), {"ip", "netns", "exec", "cr2-hub"});
  }
  so.stdout_path = c.dir() + "/extra.log";
  so.stderr_path = so.stdout_path;
  auto agent = cmax::Subprocess::Spawn(so);
  REQUIRE(agent.ok());
  std::this_thread::sleep_for(4s);
  (*agent)->SignalGroup(SIGKILL);
  (*agent)->Wait();
  const std::string log = Slurp(c.dir() + "/coordinator.log");
  INFO(log);
  CHECK(absl::StrContains(log, "is not an agent's credential"));
  auto agents = c.Ctl({"agents"});
  CHECK(!absl::StrContains(agents.out, "operator-token"));
}
