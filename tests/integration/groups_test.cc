// Task groups end to end: gang and barrier scopes, the rendezvous through
// real agents, the connectivity suite, group failure and cancel, and the
// mpirun launcher. Real coordinator, agents (in network namespaces where the
// machine allows), cmaxctl and cmax-bench.
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_split.h"
#include "common/subprocess.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/cluster.h"
#include "tests/integration/export_records.h"

using cmax::testing::Cluster;
using cmax::testing::kExitNotRated;
using cmax::testing::Export;
using cmax::testing::ClusterOptions;
using namespace std::chrono_literals;

namespace {

std::string Report(Cluster& c, const std::string& run_id, const std::string& format) {
  auto r = c.Ctl({"report", run_id, "--format", format});
  REQUIRE(r.exit.code == 0);
  return r.out;
}

std::string Label(const cmax::v1::Measurement& m, const std::string& key) {
  auto it = m.labels().find(key);
  return it == m.labels().end() ? "" : it->second;
}

// True once no process's command line contains `pattern` (pgrep -f).
bool GoneWithin(const std::string& pattern, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto ps = cmax::RunCommand({"pgrep", "-f", pattern}, 5s);
    if (ps.ok() && ps->exit.code == 1) return true;
    std::this_thread::sleep_for(200ms);
  }
  return false;
}

int CountProcesses(const std::string& pattern) {
  auto ps = cmax::RunCommand({"pgrep", "-f", pattern}, 5s);
  if (!ps.ok()) return -1;
  return static_cast<int>(
      std::vector<std::string>(absl::StrSplit(ps->out, '\n', absl::SkipEmpty())).size());
}

// Records of a task: [first, last] record time in each task (ns).
std::map<std::string, std::pair<int64_t, int64_t>> TaskSpans(
    const std::vector<cmax::v1::ExportedRecord>& records) {
  std::map<std::string, std::pair<int64_t, int64_t>> spans;
  for (const auto& r : records) {
    if (!r.record().has_measurement()) continue;
    int64_t t = r.record().time_unix_ns();
    auto [it, inserted] = spans.try_emplace(r.task_id(), t, t);
    it->second.first = std::min(it->second.first, t);
    it->second.second = std::max(it->second.second, t);
  }
  return spans;
}

void RunConnectivityMesh(int agents, const std::string& prefix) {
  Cluster c(prefix, {.agents = agents});
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());
  if (!c.using_netns()) WARN("network namespaces unavailable: agents ran on loopback");
  std::string plan = c.WritePlan("mesh", R"(name: mesh
suites:
  - suite: connectivity
    scope: gang
    timeout: 2m
    params: {pings: 10, bytes: 1M}
)");
  auto r = c.Ctl({"run", "--plan", plan}, 150s);
  INFO(r.out << r.err);
  CHECK(r.exit.code == kExitNotRated);
  std::string run_id = Cluster::RunIdFrom(r.out);
  REQUIRE(!run_id.empty());
  std::set<std::pair<std::string, std::string>> reached;
  int rtts = 0;
  for (const auto& rec : Export(c, run_id)) {
    if (!rec.record().has_measurement()) continue;
    const auto& m = rec.record().measurement();
    if (m.metric() == "reachable" && m.value() == 1) {
      reached.insert({Label(m, "src"), Label(m, "dst")});
      CHECK(rec.node() == Label(m, "src"));
    }
    if (m.metric() == "rtt_ms") {
      ++rtts;
      CHECK(m.value() > 0);
      CHECK(m.value() < 100);
    }
  }
  CHECK(reached.size() == static_cast<size_t>(agents * (agents - 1)));
  CHECK(rtts == agents * (agents - 1));
  std::string md = Report(c, run_id, "md");
  CHECK(md.find(std::to_string(agents) + " nodes, " + std::to_string(agents * (agents - 1)) +
                " of " + std::to_string(agents * (agents - 1)) +
                " directed pairs measured, 0 unreachable") != std::string::npos);
}

}  // namespace

TEST_CASE("a gang connectivity run over three agents measures every pair",
          "[integration][groups]") {
  RunConnectivityMesh(3, "gr1");
}

TEST_CASE("a gang connectivity run over four agents measures every pair",
          "[integration][groups]") {
  RunConnectivityMesh(4, "gr2");
}

TEST_CASE("blocked traffic between two nodes is found and named", "[integration][groups]") {
  Cluster c("gr3", {.agents = 3});
  REQUIRE(c.Start().ok());
  if (!c.using_netns()) {
    FAIL("network namespaces unavailable: cannot block one node's traffic");
  }
  REQUIRE(c.Hosts({"block", "0", "2"}).ok());
  std::string plan = c.WritePlan("mesh", R"(name: mesh
suites:
  - suite: connectivity
    scope: gang
    timeout: 2m
    params: {pings: 5, bytes: 256K, timeout: 1}
)");
  auto r = c.Ctl({"run", "--plan", plan}, 150s);
  INFO(r.out << r.err);
  CHECK(r.exit.code == 1);
  std::string run_id = Cluster::RunIdFrom(r.out);
  REQUIRE(!run_id.empty());
  std::set<std::pair<std::string, std::string>> down;
  for (const auto& rec : Export(c, run_id)) {
    if (!rec.record().has_measurement()) continue;
    const auto& m = rec.record().measurement();
    if (m.metric() == "reachable" && m.value() == 0) down.insert({Label(m, "src"), Label(m, "dst")});
  }
  // node-0 drops everything to node-2: neither direction completes a handshake.
  CHECK(down == std::set<std::pair<std::string, std::string>>{{"node-0", "node-2"},
                                                              {"node-2", "node-0"}});
  std::string md = Report(c, run_id, "md");
  INFO(md);
  // Each node fails on its own evidence: node-0's measurement of the pair,
  // with node-2's own saying it cannot reach node-0 either.
  CHECK(md.find("2 unreachable, as measured by node-0") != std::string::npos);
  CHECK(md.find("node-2 cannot reach node-0 either") != std::string::npos);
  CHECK(md.find("node-0 cannot reach node-2") != std::string::npos);
  CHECK(md.find("6 of 6 directed pairs measured, 2 unreachable") != std::string::npos);
}

TEST_CASE("a rank that fails stops its peers and fails the task naming the rank",
          "[integration][groups]") {
  Cluster c("gr4", {.agents = 3});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("failrank", R"(name: failrank
suites:
  - suite: selftest
    scope: gang
    timeout: 2m
    params: {mode: sleep, seconds: 97, fail-rank: 1}
)");
  auto start = std::chrono::steady_clock::now();
  auto r = c.Ctl({"run", "--plan", plan}, 120s);
  INFO(r.out << r.err);
  CHECK(r.exit.code == 1);
  CHECK(std::chrono::steady_clock::now() - start < 30s);
  CHECK(r.out.find("rank 1 on node-1 crashed (exit code 3)") != std::string::npos);
  CHECK(GoneWithin("selftest --fail-rank=1 --mode=sleep --seconds=97", 15s));
  std::string md = Report(c, Cluster::RunIdFrom(r.out), "md");
  CHECK(md.find("rank 1 on node-1") != std::string::npos);
  // The task names only the failing rank's node to blame, not the ranks the
  // coordinator stopped because of it.
  auto watch = c.Ctl({"watch", Cluster::RunIdFrom(r.out), "--json"});
  std::string blamed;
  for (absl::string_view line : absl::StrSplit(watch.out, '\n')) {
    cmax::v1::RunEvent ev;
    const std::string json(line);
    if (json.empty() || !google::protobuf::util::JsonStringToMessage(json, &ev).ok()) continue;
    if (ev.has_task()) blamed = ev.task().blamed_nodes();
  }
  CHECK(blamed == "node-1");
}

TEST_CASE("SIGKILL of one agent during a gang task stops the ranks on the others",
          "[integration][groups]") {
  Cluster c("gr5", {.agents = 3});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("long", R"(name: long
suites:
  - suite: selftest
    scope: gang
    timeout: 5m
    params: {mode: sleep, seconds: 98}
)");
  auto submit = c.Ctl({"run", "--plan", plan, "--no-wait"});
  REQUIRE(submit.exit.code == 0);
  std::string run_id = Cluster::RunIdFrom(submit.out);
  REQUIRE(c.WaitForAgents(3, "busy", 20s).ok());
  const std::string pattern = "selftest --mode=sleep --seconds=98";
  for (int i = 0; i < 50 && CountProcesses(pattern) < 3; ++i) std::this_thread::sleep_for(100ms);
  CHECK(CountProcesses(pattern) == 3);
  c.StopAgent(1, SIGKILL);
  auto watch = c.Ctl({"watch", run_id}, 60s);
  INFO(watch.out << watch.err);
  CHECK(watch.exit.code == 1);
  CHECK(watch.out.find("node-1") != std::string::npos);
  CHECK(GoneWithin(pattern, 20s));
}

TEST_CASE("cancel stops every rank on every node", "[integration][groups]") {
  Cluster c("gr6", {.agents = 3});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("long", R"(name: long
suites:
  - suite: selftest
    scope: gang
    ranks_per_node: 2
    timeout: 5m
    params: {mode: sleep, seconds: 99}
)");
  auto submit = c.Ctl({"run", "--plan", plan, "--no-wait"});
  REQUIRE(submit.exit.code == 0);
  std::string run_id = Cluster::RunIdFrom(submit.out);
  const std::string pattern = "selftest --mode=sleep --seconds=99";
  for (int i = 0; i < 100 && CountProcesses(pattern) < 6; ++i) std::this_thread::sleep_for(100ms);
  CHECK(CountProcesses(pattern) == 6);
  auto cancel = c.Ctl({"cancel", run_id});
  CHECK(cancel.exit.code == 0);
  auto watch = c.Ctl({"watch", run_id}, 30s);
  CHECK(watch.exit.code == 3);
  CHECK(GoneWithin(pattern, 15s));
}

TEST_CASE("gangs over disjoint nodes run at once, over shared nodes one after the other",
          "[integration][groups]") {
  Cluster c("gr7", {.agents = 4});
  REQUIRE(c.Start().ok());
  auto gang = [&](const std::string& name, const std::string& nodes) {
    return c.WritePlan(name, "name: " + name + "\nsuites:\n  - suite: selftest\n    scope: gang\n"
                             "    timeout: 1m\n    nodes: [" + nodes + "]\n"
                             "    params: {mode: ok, records: 6, seconds: 3}\n");
  };
  auto run_pair = [&](const std::string& a, const std::string& b) {
    auto s1 = c.Ctl({"run", "--plan", a, "--no-wait"});
    auto s2 = c.Ctl({"run", "--plan", b, "--no-wait"});
    REQUIRE(s1.exit.code == 0);
    REQUIRE(s2.exit.code == 0);
    std::string r1 = Cluster::RunIdFrom(s1.out), r2 = Cluster::RunIdFrom(s2.out);
    CHECK(c.Ctl({"watch", r1}, 60s).exit.code == kExitNotRated);
    CHECK(c.Ctl({"watch", r2}, 60s).exit.code == kExitNotRated);
    auto spans1 = TaskSpans(Export(c, r1));
    auto spans2 = TaskSpans(Export(c, r2));
    REQUIRE(spans1.size() == 1);
    REQUIRE(spans2.size() == 1);
    return std::make_pair(spans1.begin()->second, spans2.begin()->second);
  };
  SECTION("disjoint") {
    auto [a, b] = run_pair(gang("d1", "node-0, node-1"), gang("d2", "node-2, node-3"));
    INFO("a " << a.first << ".." << a.second << " b " << b.first << ".." << b.second);
    CHECK(a.first < b.second);
    CHECK(b.first < a.second);
  }
  SECTION("shared") {
    auto [a, b] = run_pair(gang("s1", "node-0, node-1"), gang("s2", "node-1, node-2"));
    INFO("a " << a.first << ".." << a.second << " b " << b.first << ".." << b.second);
    CHECK((a.second < b.first || b.second < a.first));
  }
}

TEST_CASE("a barrier task starts every node at one instant despite a shifted clock",
          "[integration][groups]") {
  Cluster c("gr8", {.agents = 3, .clock_offsets_ms = {0, 0, 400}});
  REQUIRE(c.Start().ok());
  // Let the coordinator estimate node-2's offset over a few heartbeats.
  std::this_thread::sleep_for(3s);
  std::string plan = c.WritePlan("barrier", R"(name: barrier
suites:
  - suite: selftest
    scope: barrier
    timeout: 1m
    params: {mode: barrier, seconds: 0.4}
)");
  auto r = c.Ctl({"run", "--plan", plan}, 90s);
  INFO(r.out << r.err);
  CHECK(r.exit.code == kExitNotRated);
  std::map<std::string, std::map<std::string, double>> t;  // node -> metric -> unix ns
  for (const auto& rec : Export(c, Cluster::RunIdFrom(r.out))) {
    if (!rec.record().has_measurement()) continue;
    t[rec.node()][rec.record().measurement().metric()] = rec.record().measurement().value();
  }
  REQUIRE(t.size() == 3);
  double lo = 1e30, hi = 0;
  for (const auto& [node, m] : t) {
    REQUIRE(m.count("barrier_start_ns"));
    lo = std::min(lo, m.at("barrier_start_ns"));
    hi = std::max(hi, m.at("barrier_start_ns"));
  }
  const double skew_ms = (hi - lo) / 1e6;
  // The three ranks prepared for 0, 0.4 and 0.8 s: they were ready far apart.
  const double ready_spread_ms =
      (t["node-2"]["barrier_ready_ns"] - t["node-0"]["barrier_ready_ns"]) / 1e6;
  WARN("barrier start skew over 3 agents (one shifted +400 ms): " << skew_ms
                                                                   << " ms; ready spread "
                                                                   << ready_spread_ms << " ms");
  CHECK(ready_spread_ms > 600);
  CHECK(skew_ms < 20);
  for (const auto& [node, m] : t) {
    CHECK(m.at("barrier_start_ns") >= m.at("barrier_ready_ns"));
  }

  // Before the suite's own barrier, the agents started it at the
  // coordinator's instant, each in its own clock: every rank's spool opens
  // with cmax_task_start, whose scheduled instant, taken back to the
  // coordinator's clock (node-2 runs 400 ms ahead), is one and the same T.
  std::map<std::string, std::pair<int64_t, int64_t>> starts;  // node -> (scheduled, started)
  for (const auto& rec : Export(c, Cluster::RunIdFrom(r.out))) {
    if (rec.seq() != 0) continue;
    REQUIRE(rec.record().has_sample());
    const auto& s = rec.record().sample();
    CHECK(s.metric() == "cmax_task_start");
    CHECK(s.labels().at("clock") == "node");
    const int64_t shift = rec.node() == "node-2" ? 400'000'000 : 0;
    starts[rec.node()] = {std::stoll(s.labels().at("scheduled_unix_ns")) - shift,
                          std::stoll(s.labels().at("started_unix_ns")) - shift};
    CHECK(s.value() >= 0);  // never before the instant, in its own clock
  }
  REQUIRE(starts.size() == 3);
  int64_t t_lo = INT64_MAX, t_hi = 0, s_lo = INT64_MAX, s_hi = 0;
  for (const auto& [node, st] : starts) {
    t_lo = std::min(t_lo, st.first);
    t_hi = std::max(t_hi, st.first);
    s_lo = std::min(s_lo, st.second);
    s_hi = std::max(s_hi, st.second);
  }
  // The offset estimate is within a few ms on loopback or a bridge.
  CHECK((t_hi - t_lo) / 1e6 < 20);
  WARN("agent spawn skew at the coordinator's instant: " << (s_hi - s_lo) / 1e6
                                                         << " ms (T spread after offsets "
                                                         << (t_hi - t_lo) / 1e6 << " ms)");
  CHECK((s_hi - s_lo) / 1e6 < 200);
}

TEST_CASE("the mpirun launcher runs the connectivity suite over local ranks",
          "[integration][groups][mpirun]") {
  if (cmax::FindExecutable("mpirun").empty()) {
    FAIL("mpirun is not installed (deploy/install-deps.sh installs openmpi-bin)");
  }
  Cluster c("gr9", {.agents = 1});
  REQUIRE(c.Start().ok());
  std::string plan = c.WritePlan("mpi", R"(name: mpi
suites:
  - suite: connectivity
    scope: gang
    launcher: mpirun
    ranks_per_node: 2
    timeout: 2m
    params: {pings: 5, bytes: 256K, mpirun-bind-to: none}
)");
  auto r = c.Ctl({"run", "--plan", plan}, 150s);
  INFO(r.out << r.err);
  INFO(cmax::TailOfFile(c.dir() + "/agent-0.log", 4000));
  CHECK(r.exit.code == kExitNotRated);
  std::set<std::string> ranks;
  for (const auto& rec : Export(c, Cluster::RunIdFrom(r.out))) {
    if (!rec.record().has_measurement()) continue;
    const auto& m = rec.record().measurement();
    if (m.metric() == "reachable") {
      CHECK(m.value() == 1);
      ranks.insert(Label(m, "src_rank") + "->" + Label(m, "dst_rank"));
    }
  }
  CHECK(ranks == std::set<std::string>{"0->1", "1->0"});
}
