// The walking skeleton end to end: real coordinator, agents and cmaxctl.
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/record_io.h"
#include "common/time_util.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/cluster.h"
#include "tests/integration/export_records.h"
#include "tests/scratch_dir.h"

using cmax::testing::Cluster;
using cmax::testing::kExitNotRated;
using cmax::testing::kExitNothingMeasured;
using cmax::testing::Export;
using cmax::testing::ClusterOptions;
using namespace std::chrono_literals;

namespace {

std::string Fixture(const std::string& name) {
  return Cluster::SourceDir() + "/tests/fixtures/hostcheck/" + name;
}

std::string Scorecard(Cluster& c, const std::string& run_id) {
  auto r = c.Ctl({"report", run_id, "--format", "json"});
  REQUIRE(r.exit.code == 0);
  return r.out;
}

void WaitUntilBusy(Cluster& c, int n) {
  auto s = c.WaitForAgents(n, "busy", 20s);
  INFO(s.ToString());
  REQUIRE(s.ok());
}

}  // namespace

TEST_CASE("a quick run over three agents gives a scorecard with every node", "[integration]") {
  ClusterOptions o;
  o.agent_roots = {Fixture("healthy-8xh100"), Fixture("missing-gpu"), Fixture("cpu-only")};
  Cluster c("sk1", o);
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());
  if (!c.using_netns()) WARN("network namespaces unavailable: agents ran on loopback");

  auto run = c.Ctl({"run", "--plan", Cluster::SourceDir() + "/benchmarks/plans/quick.yaml"});
  INFO(run.out << run.err);
  CHECK(run.exit.code == kExitNotRated);
  std::string run_id = Cluster::RunIdFrom(run.out);
  REQUIRE(!run_id.empty());
  CHECK(run.out.find("scorecard: ") != std::string::npos);

  // Every node's hostcheck records are stored, with the GPU counts of its tree.
  std::map<std::string, double> gpus;
  for (const auto& r : Export(c, run_id)) {
    CHECK((r.suite() == "hostcheck" || r.suite() == "connectivity"));
    if (r.record().has_measurement() && r.record().measurement().metric() == "gpu_count") {
      gpus[r.node()] = r.record().measurement().value();
    }
  }
  CHECK(gpus == std::map<std::string, double>{{"node-0", 8}, {"node-1", 7}, {"node-2", 0}});
  // The JSON a user reads says the 0: a measured zero is not a missing value.
  auto exported = c.Ctl({"export", run_id});
  REQUIRE(exported.exit.code == 0);
  bool zero_written = false;
  for (absl::string_view line : absl::StrSplit(exported.out, '\n')) {
    if (absl::StrContains(line, "\"node\":\"node-2\"") &&
        absl::StrContains(line, "\"metric\":\"gpu_count\"")) {
      INFO(std::string(line));
      zero_written = absl::StrContains(line, "\"value\":0");
      CHECK(zero_written);
    }
  }
  CHECK(zero_written);

  std::string card = Scorecard(c, run_id);
  for (const char* node : {"node-0", "node-1", "node-2"}) {
    CHECK(card.find(std::string("\"node\": \"") + node + "\"") != std::string::npos);
  }
  CHECK(card.find("\"verdict\"") != std::string::npos);
  CHECK(card.find("\"tier\"") != std::string::npos);
  for (const char* f : {"json", "md", "html"}) {
    std::ifstream in(c.data_dir() + "/reports/" + run_id + "/scorecard." + f);
    CHECK(in.good());
  }

  SECTION("an expectation the nodes miss fails them and the run exits 1") {
    std::string plan = c.WritePlan("expect8",
                                   "name: expect8\nexpect:\n  gpus_per_node: 8\n"
                                   "suites:\n  - suite: hostcheck\n");
    auto r = c.Ctl({"run", "--plan", plan});
    INFO(r.out << r.err);
    CHECK(r.exit.code == 1);
    std::string id = Cluster::RunIdFrom(r.out);
    std::string md = c.Ctl({"report", id, "--format", "md"}).out;
    CHECK(md.find("node-1") != std::string::npos);
    CHECK(md.find("found 7") != std::string::npos);
  }
}

TEST_CASE("an agent killed mid-task leaves its task lost and the run exits 1", "[integration]") {
  Cluster c("sk2", {});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("sleep", R"(name: sleep
suites:
  - suite: selftest
    timeout: 60s
    params: {mode: sleep, seconds: 6}
)");
  auto submit = c.Ctl({"run", "--plan", plan, "--no-wait"});
  REQUIRE(submit.exit.code == 0);
  std::string run_id = Cluster::RunIdFrom(submit.out);
  WaitUntilBusy(c, 3);
  c.StopAgent(1, SIGKILL);
  auto watch = c.Ctl({"watch", run_id}, 60s);
  INFO(watch.out << watch.err);
  CHECK(watch.exit.code == 1);
  CHECK(watch.out.find("FAIL node-1 selftest: lost") != std::string::npos);
  std::string card = Scorecard(c, run_id);
  CHECK(card.find("lost") != std::string::npos);
  // The agent comes back and is connected for new runs.
  REQUIRE(c.StartAgent(1).ok());
  CHECK(c.WaitForAgents(3, "connected", 20s).ok());
}

TEST_CASE("a hung suite is killed at its timeout and a crash keeps its stderr",
          "[integration]") {
  Cluster c("sk3", {.agents = 2});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("faults", R"(name: faults
suites:
  - suite: selftest
    name: hang
    timeout: 2s
    params: {mode: sleep, seconds: 300}
  - suite: selftest
    name: crash
    params: {mode: crash, records: 3}
  - suite: selftest
    name: after
    params: {mode: ok, records: 2}
)");
  auto start = std::chrono::steady_clock::now();
  auto r = c.Ctl({"run", "--plan", plan}, 90s);
  INFO(r.out << r.err);
  CHECK(r.exit.code == 1);
  CHECK(std::chrono::steady_clock::now() - start < 40s);
  CHECK(r.out.find("timed_out") != std::string::npos);
  CHECK(r.out.find("signal 6") != std::string::npos);
  CHECK(r.out.find("about to crash") != std::string::npos);
  // Neither stopped the run or the agents: the last suite ran everywhere.
  std::string run_id = Cluster::RunIdFrom(r.out);
  int after = 0;
  for (const auto& rec : Export(c, run_id)) {
    if (rec.task_id().find(".2.") != std::string::npos && rec.record().has_measurement()) ++after;
  }
  CHECK(after == 4);
}

TEST_CASE("cancel stops every child on every agent", "[integration]") {
  Cluster c("sk4", {});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("long", R"(name: long
suites:
  - suite: selftest
    timeout: 5m
    params: {mode: sleep, seconds: 120}
)");
  auto submit = c.Ctl({"run", "--plan", plan, "--no-wait"});
  REQUIRE(submit.exit.code == 0);
  std::string run_id = Cluster::RunIdFrom(submit.out);
  WaitUntilBusy(c, 3);
  const int64_t started_ns = cmax::NowUnixNs();
  auto cancel = c.Ctl({"cancel", run_id});
  INFO(cancel.out << cancel.err);
  CHECK(cancel.exit.code == 0);
  auto watch = c.Ctl({"watch", run_id}, 30s);
  CHECK(watch.exit.code == 3);
  // Within a few seconds no selftest child is left anywhere.
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    auto ps = cmax::RunCommand({"pgrep", "-f", "cmax-bench selftest --mode=sleep --seconds=120"},
                               5s);
    gone = ps.ok() && ps->exit.code == 1;
    if (!gone) std::this_thread::sleep_for(200ms);
  }
  CHECK(gone);
  // Each kill is noted for the health suite's Xid 43/45 attribution.
  std::ifstream kills("/run/cmax/kills");
  int64_t ns = 0, newest = 0;
  int pid = 0;
  while (kills >> ns >> pid) newest = std::max(newest, ns);
  CHECK(newest >= started_ns);
}

TEST_CASE("a command's wrong option is one line with the valid values, not the whole usage",
          "[integration]") {
  // No coordinator is needed: the options are checked before any call.
  auto r = cmax::RunCommand({Cluster::BinDir() + "/cmaxctl", "--coordinator", "127.0.0.1:1",
                             "report", "r1", "--format", "pdf"},
                            30s, 1 << 20, {{"CMAX_TOKEN_FILE", ""}});
  REQUIRE(r.ok());
  INFO(r->err);
  CHECK(r->exit.code == 2);
  CHECK(r->out.empty());
  CHECK(absl::StrContains(r->err, "--format must be json, md, html or junit"));
  CHECK(std::count(r->err.begin(), r->err.end(), '\n') == 1);
  CHECK_FALSE(absl::StrContains(r->err, "commands:"));
  // No command at all: then the whole usage is what helps.
  auto none = cmax::RunCommand({Cluster::BinDir() + "/cmaxctl"}, 30s, 1 << 20);
  REQUIRE(none.ok());
  CHECK(none->exit.code == 2);
  CHECK(absl::StrContains(none->err, "commands:"));
}

TEST_CASE("a malformed plan is refused with its line number", "[integration]") {
  Cluster c("sk5", {.agents = 1, .netns = false});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("bad", "name: bad\nsuites:\n  - suite: hostcheck\n    params:\n"
                                        "      no-such-param: 3\n");
  auto r = c.Ctl({"run", "--plan", plan});
  CHECK(r.exit.code == 2);
  CHECK(r.err.find("bad.yaml:5:7") != std::string::npos);
  auto unknown = c.Ctl({"run", "--plan", c.WritePlan("u", "name: u\nsuites:\n  - suite: rm\n")});
  CHECK(unknown.exit.code == 2);
  CHECK(unknown.err.find("unknown suite 'rm'") != std::string::npos);
}

TEST_CASE("wrong tokens and plaintext clients are refused", "[integration][security]") {
  Cluster c("sk6", {.agents = 1, .token = "correct horse battery", .tls = true});
  auto s = c.Start();  // the agent connects over TLS with the token
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::ofstream(c.dir() + "/wrong") << "wrong token\n";
  auto wrong = c.Ctl({"--token-file", c.dir() + "/wrong", "agents"});
  INFO(wrong.out << wrong.err);
  CHECK(wrong.exit.code == cmax::testing::kExitCredentials);  // credentials have their own exit code
  CHECK(wrong.err.find("refused the credentials") != std::string::npos);
  auto right = c.Ctl({"agents"});  // control: the right credentials work
  CHECK(right.exit.code == 0);
  CHECK(right.out.find("node-0") != std::string::npos);
  // Plaintext against TLS: no --tls-ca. Off loopback cmaxctl refuses to
  // send the token in clear text at all; with --allow-insecure (or on
  // loopback) it tries, and the TLS server does not answer it.
  std::vector<std::string> plain = {Cluster::BinDir() + "/cmaxctl", "--coordinator", c.address(),
                                    "--token-file", c.dir() + "/token", "agents"};
  if (c.using_netns()) {
    plain.insert(plain.begin(), {"ip", "netns", "exec", "sk6-hub"});
    auto clear = cmax::RunCommand(plain, 30s);
    REQUIRE(clear.ok());
    INFO(clear->out << clear->err);
    CHECK(clear->exit.code == 2);
    CHECK(clear->err.find("refusing to send the bearer token in clear text") !=
          std::string::npos);
    plain.insert(plain.end() - 1, "--allow-insecure");
  }
  auto p = cmax::RunCommand(plain, 30s);
  REQUIRE(p.ok());
  INFO(p->out << p->err);
  CHECK(p->exit.code == 3);
  CHECK(p->err.find("cannot reach the coordinator") != std::string::npos);
}

TEST_CASE("the default set-up refuses unauthenticated callers", "[integration][security]") {
  // As deployed: the coordinator needs a token (the cluster makes a random
  // one, as install.sh and the quickstart do).
  Cluster c("sk8", {.agents = 1});
  auto s = c.Start();
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::string plan = c.WritePlan("p", "name: p\nsuites:\n  - suite: selftest\n");
  std::vector<std::string> anonymous = {Cluster::BinDir() + "/cmaxctl", "--coordinator",
                                        c.address()};
  if (c.using_netns()) {
    anonymous.insert(anonymous.begin(), {"ip", "netns", "exec", "sk8-hub"});
  }
  for (std::vector<std::string> call :
       {std::vector<std::string>{"run", "--plan", plan, "--no-wait"},
        std::vector<std::string>{"agents"}, std::vector<std::string>{"runs"}}) {
    std::vector<std::string> argv = anonymous;
    argv.insert(argv.end(), call.begin(), call.end());
    auto r = cmax::RunCommand(argv, 30s, 1 << 20, {{"CMAX_TOKEN_FILE", ""}});
    REQUIRE(r.ok());
    INFO(call[0] << ": " << r->out << r->err);
    CHECK(r->exit.code == cmax::testing::kExitCredentials);
    CHECK(r->err.find("refused the credentials") != std::string::npos);
  }
  auto runs = c.Ctl({"runs", "--json"});  // nothing was submitted
  CHECK(runs.exit.code == 0);
  CHECK(runs.out.find("\"run_id\"") == std::string::npos);

  // And without a token the coordinator does not start unless told so.
  auto bare = cmax::RunCommand({Cluster::BinDir() + "/cmax-coordinator", "--data-dir",
                                c.dir() + "/bare", "--listen", "127.0.0.1:0"},
                               30s);
  REQUIRE(bare.ok());
  INFO(bare->err);
  CHECK(bare->exit.code == 2);
  CHECK(bare->err.find("a token is required") != std::string::npos);
}

TEST_CASE("the read-only token reads through the gRPC API, submits nothing, and must be its own secret",
          "[integration][security]") {
  cmax::testing::ScratchDir scratch;
  const std::string read_token = scratch.path + "/read-token";
  {
    std::ofstream(read_token) << "a-read-only-token-for-sk11\n";
  }
  chmod(read_token.c_str(), 0600);
  Cluster c("sk11", {.agents = 1, .coordinator_args = {"--read-token-file", read_token}});
  auto s = c.Start();
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::string plan = c.WritePlan("p", "name: p\nsuites:\n  - suite: selftest\n");
  // cmaxctl with the read-only token: a listing, but no submit.
  std::vector<std::string> reader = {Cluster::BinDir() + "/cmaxctl", "--coordinator",
                                     c.address(), "--token-file", read_token};
  if (c.using_netns()) {
    // The coordinator is on the test bridge's address, without TLS.
    reader.insert(reader.begin(), {"ip", "netns", "exec", "sk11-hub"});
    reader.push_back("--allow-insecure");
  }
  for (std::vector<std::string> call : {std::vector<std::string>{"run", "--plan", plan},
                                        std::vector<std::string>{"agents"}}) {
    std::vector<std::string> argv = reader;
    argv.insert(argv.end(), call.begin(), call.end());
    auto r = cmax::RunCommand(argv, 30s);
    REQUIRE(r.ok());
    INFO(call[0] << ": " << r->out << r->err);
    if (call[0] == "agents") {
      CHECK(r->exit.code == 0);
      CHECK(r->out.find("node-0") != std::string::npos);
    } else {
      CHECK(r->exit.code == cmax::testing::kExitCredentials);
      CHECK(r->err.find("refused this credential the call") != std::string::npos);
      CHECK(r->err.find("needs the run role") != std::string::npos);
    }
  }
  auto runs = c.Ctl({"runs", "--json"});  // nothing was submitted
  CHECK(runs.exit.code == 0);
  CHECK(runs.out.find("\"run_id\"") == std::string::npos);

  // The read-only token as the main token's twin, or without a main token:
  // the coordinator does not start.
  for (std::vector<std::string> flags :
       {std::vector<std::string>{"--token-file", read_token, "--read-token-file", read_token},
        std::vector<std::string>{"--no-token", "--read-token-file", read_token}}) {
    std::vector<std::string> argv = {Cluster::BinDir() + "/cmax-coordinator", "--data-dir",
                                     c.dir() + "/twin", "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto r = cmax::RunCommand(argv, 30s);
    REQUIRE(r.ok());
    INFO(r->err);
    CHECK(r->exit.code == 2);
    CHECK((r->err.find("holds the same token as --token-file") != std::string::npos ||
           r->err.find("--read-token-file needs --token-file") != std::string::npos));
  }
}

TEST_CASE("running without a token needs --no-token and is logged loudly", "[integration][security]") {
  Cluster c("sk10", {.agents = 1, .no_token = true});
  auto s = c.Start();
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::ifstream log(c.dir() + "/coordinator.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(text.find("INSECURE: --no-token") != std::string::npos);
  auto agents = c.Ctl({"agents"});  // no token needed: that is what the flag means
  CHECK(agents.exit.code == 0);
  CHECK(agents.out.find("node-0") != std::string::npos);
}

TEST_CASE("an agent does not send its token in clear text off the host",
          "[integration][security]") {
  Cluster c("sk9", {.agents = 1});
  REQUIRE(c.Start().ok());
  if (!c.using_netns()) {
    FAIL("no network namespaces here: the coordinator is on loopback, nothing to refuse");
  }
  auto r = c.OnHost(0, {Cluster::BinDir() + "/cmax-agent", "--coordinator", c.address(),
                        "--node-name", "clear", "--work-dir", c.dir() + "/clear",
                        "--token-file", c.token_file()});
  INFO(r.out << r.err);
  CHECK(r.exit.code == 2);
  CHECK(r.err.find("refusing to send the bearer token in clear text to " + c.address()) !=
        std::string::npos);
}

TEST_CASE("records survive a coordinator restart before their acknowledgement, once each",
          "[integration]") {
  // The agents' reconnect backoff grows to 10 s with +-25 % jitter
  // (agent/connection.h), so an agent may retry 12.5 s after its last try:
  // a loss timeout under that can lose an agent through the restart itself,
  // which is not what this case is about. 20 s, over 15 s by default.
  Cluster c("sk7", {.heartbeat_timeout_s = 20});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("many", R"(name: many
suites:
  - suite: selftest
    timeout: 2m
    params: {mode: records, records: 3000, rate: 1000}
)");
  auto submit = c.Ctl({"run", "--plan", plan, "--no-wait"});
  REQUIRE(submit.exit.code == 0);
  std::string run_id = Cluster::RunIdFrom(submit.out);
  WaitUntilBusy(c, 3);
  std::this_thread::sleep_for(1s);
  c.StopCoordinator(SIGKILL);
  std::this_thread::sleep_for(1500ms);
  auto restarted = c.StartCoordinator();
  INFO(restarted.ToString());
  REQUIRE(restarted.ok());
  auto watch = c.Ctl({"watch", run_id}, 90s);
  INFO(watch.out << watch.err);
  CHECK(watch.exit.code == kExitNotRated);
  std::map<std::string, std::set<int64_t>> seqs;
  int64_t total = 0;
  for (const auto& r : Export(c, run_id)) {
    seqs[r.node()].insert(r.seq());
    ++total;
  }
  // 3000 measurements and one progress line per node, each exactly once.
  REQUIRE(seqs.size() == 3);
  for (const auto& [node, s] : seqs) {
    INFO(node);
    CHECK(s.size() == 3001);
    CHECK(*s.begin() == 0);
    CHECK(*s.rbegin() == 3000);
  }
  CHECK(total == 3 * 3001);
}

TEST_CASE("agents report the addresses given with --advertise, and refuse bad ones",
          "[integration]") {
  ClusterOptions o;
  o.agents = 2;
  o.advertise = {"127.0.0.1", "127.0.0.1,localhost"};
  Cluster c("sk8", o);
  REQUIRE(c.Start().ok());
  auto r = c.Ctl({"agents", "--json"});
  REQUIRE(r.exit.code == 0);
  cmax::v1::ListAgentsResponse resp;
  REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &resp).ok());
  std::map<std::string, std::vector<std::string>> addrs;
  for (const auto& a : resp.agents()) {
    addrs[a.node_name()].assign(a.addresses().begin(), a.addresses().end());
  }
  CHECK(addrs["node-0"] == std::vector<std::string>{"127.0.0.1"});
  CHECK(addrs["node-1"] == (std::vector<std::string>{"127.0.0.1", "localhost"}));
  // The table shows them too.
  auto table = c.Ctl({"agents"});
  CHECK(table.out.find("127.0.0.1,localhost") != std::string::npos);

  // A malformed list stops the agent at start with the entry named (exit 2).
  auto bad = cmax::RunCommand({Cluster::BinDir() + "/cmax-agent", "--coordinator",
                               "127.0.0.1:1", "--node-name", "bad", "--work-dir",
                               c.dir() + "/bad", "--advertise", "127.0.0.1,10.0.0.300"},
                              10s);
  REQUIRE(bad.ok());
  CHECK(bad->exit.code == 2);
  CHECK(bad->err.find("'10.0.0.300'") != std::string::npos);
}

// Tasks that could not run are counted apart and never make the exit code 1
// (the precedence itself: tests/coordinator/ctl_progress_test.cc); when every
// task could not run, nothing was measured: 5, whatever the tier, with a
// loud line on stderr (before, this exited 4 like a run that measured too
// little for a tier).
TEST_CASE("a run where every task could not run exits 5 (nothing measured) and says why",
          "[integration]") {
  Cluster c("sk9", {.agents = 2});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("cannot", R"(name: cannot
suites:
  - suite: selftest
    params: {mode: error}
)");
  auto r = c.Ctl({"run", "--plan", plan}, 90s);
  INFO(r.out << r.err);
  CHECK(r.out.find("2/2 tasks ended: 0 completed, 2 could not run, 0 failed;") !=
        std::string::npos);
  CHECK(r.out.find("COULD NOT RUN node-0 selftest") != std::string::npos);
  std::string run_id = Cluster::RunIdFrom(r.out);
  REQUIRE(!run_id.empty());
  // What the coordinator says about the run decides the code.
  auto got = c.Ctl({"runs", "--json"});
  cmax::v1::ListRunsResponse runs;
  REQUIRE(google::protobuf::util::JsonStringToMessage(got.out, &runs).ok());
  const cmax::v1::RunInfo* info = nullptr;
  for (const auto& run : runs.runs()) {
    if (run.run_id() == run_id) info = &run;
  }
  REQUIRE(info != nullptr);
  const bool not_rated = info->tier().empty() || info->tier() == "not rated";
  const int want = info->nodes_failed() > 0 ? 1 : kExitNothingMeasured;
  CHECK(r.exit.code == want);
  if (want == kExitNothingMeasured) {
    CHECK(r.err.find("cmaxctl: NOTHING WAS MEASURED: all 2 tasks could not run; first reason: ") !=
          std::string::npos);
    CHECK(r.err.find(", suite selftest)") != std::string::npos);
  }
  CHECK(r.out.find(not_rated ? "completed: not rated;" : "completed: tier ") !=
        std::string::npos);
  // watch, with and without --json, agrees.
  auto watch_json = c.Ctl({"watch", run_id, "--json"});
  CHECK(watch_json.exit.code == want);
  if (want == kExitNothingMeasured) {
    CHECK(watch_json.err.find("NOTHING WAS MEASURED") != std::string::npos);
  }
  CHECK(c.Ctl({"watch", run_id}).exit.code == want);
}

TEST_CASE("retention drops an ended run's records after --keep-runs-for and keeps its scorecard",
          "[integration][retention]") {
  Cluster c("sk9", {.agents = 1, .coordinator_args = {"--keep-runs-for", "6s"}});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("some", R"(name: some
suites:
  - suite: selftest
    timeout: 1m
    params: {mode: records, records: 500, rate: 5000}
)");
  auto run = c.Ctl({"run", "--plan", plan});
  INFO(run.out << run.err);
  REQUIRE(run.exit.code == kExitNotRated);
  const std::string run_id = Cluster::RunIdFrom(run.out);
  // Within the 6 s the records are all there.
  CHECK(Export(c, run_id).size() == 501);
  const std::string card_before = Scorecard(c, run_id);
  // A pass runs every second (a tenth of 6 s, at least 1 s).
  bool dropped = false;
  for (int i = 0; i < 60 && !dropped; ++i) {
    std::this_thread::sleep_for(500ms);
    auto runs = c.Ctl({"runs"});
    REQUIRE(runs.exit.code == 0);
    dropped = runs.out.find("(records dropped by retention)") != std::string::npos;
  }
  REQUIRE(dropped);
  // Across a restart: the mark is stored, export says why it has nothing,
  // and the scorecard is the one written when the run ended.
  c.StopCoordinator(SIGTERM);
  REQUIRE(c.StartCoordinator().ok());
  auto exported = c.Ctl({"export", run_id});
  INFO(exported.out << exported.err);
  CHECK(exported.exit.code != 0);
  CHECK(exported.out.empty());
  CHECK(exported.err.find("records were dropped") != std::string::npos);
  CHECK(exported.err.find("cmaxctl report " + run_id) != std::string::npos);
  CHECK(Scorecard(c, run_id) == card_before);
  auto got = c.Ctl({"runs", "--json"});
  INFO(got.out << got.err);
  CHECK(got.out.find("\"records_dropped_unix_ns\"") != std::string::npos);
}

TEST_CASE("a port or a data directory in use is refused: one coordinator each",
          "[integration]") {
  Cluster c("sk12", {.agents = 1,
                     .coordinator_args = {"--http-listen", "127.0.0.1:0", "--metrics-listen",
                                          "127.0.0.1:0"}});
  auto s = c.Start();
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(!c.web_address().empty());
  const std::string token = c.token_file();
  auto second = [&](std::vector<std::string> flags) {
    std::vector<std::string> argv = {Cluster::BinDir() + "/cmax-coordinator", "--token-file",
                                     token};
    argv.insert(argv.end(), flags.begin(), flags.end());
    if (c.using_netns()) argv.push_back("--allow-insecure");
    return c.OnHub(argv, 30s);
  };
  // The first coordinator's gRPC port, with a data directory of its own.
  auto port = second({"--data-dir", c.dir() + "/second", "--listen", c.address()});
  INFO(port.out << port.err);
  CHECK(port.exit.code == 2);
  CHECK(absl::StrContains(port.err, "cannot listen on " + c.address()));
  CHECK(absl::StrContains(port.err, "is in use"));
  CHECK(!absl::StrContains(port.out, "listening on"));
  // Its web view's port.
  auto web = second({"--data-dir", c.dir() + "/third", "--listen", "127.0.0.1:0",
                     "--http-listen", c.web_address()});
  INFO(web.out << web.err);
  CHECK(web.exit.code == 2);
  CHECK(absl::StrContains(web.err, "is in use"));
  // Its data directory, on another port.
  auto dir = second({"--data-dir", c.data_dir(), "--listen", "127.0.0.1:0"});
  INFO(dir.out << dir.err);
  CHECK(dir.exit.code == 2);
  CHECK(absl::StrContains(dir.err, "is in use by another cmax-coordinator (pid "));
  // The first one still serves, alone: its agent is connected.
  auto agents = c.Ctl({"agents"});
  CHECK(agents.exit.code == 0);
  CHECK(absl::StrContains(agents.out, "node-0"));
}
