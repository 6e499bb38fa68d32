// The rdma suite over two namespaced agents (issue 20, item 2): scope pairs,
// rank 0 the server and rank 1 the client on every rail, meeting through the
// group's rendezvous. perftest is replaced by tests/integration/
// fake_perftest.cc on the agents' PATH (ib_write_bw, ib_read_bw and
// ib_write_lat): it checks its argv and really connects the client to the
// TCP port and address the server published, so a run only succeeds when the
// rendezvous carried them. Each agent's --root is a sysfs tree of two GPUs
// and two NDR NICs (tests/fixtures/rdma/two-rails.topo). The real perftest is
// not run here: that needs an RDMA device (soft-RoCE needs a kernel module).
// A hostile rank 0 (tests/integration/hostile_rdma_rank.cc, as the agents'
// cmax-bench) publishes perftest options where its port and addresses go.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/benchmarks/hostcheck/topology_tree.h"
#include "tests/integration/cluster.h"
#include "tests/integration/export_records.h"
#include "tests/scratch_dir.h"

using cmax::testing::Cluster;
using cmax::testing::ClusterOptions;
using cmax::testing::Export;
using cmax::testing::kExitNotRated;
using cmax::testing::kExitNothingMeasured;
using cmax::testing::ReportCard;
using namespace std::chrono_literals;

namespace {

namespace fs = std::filesystem;

const char kPlan[] = R"(name: rdma
suites:
  - suite: rdma
    scope: pairs
    timeout: 4m
    params: {tests: all, duration: 1, timeout: 60}
)";

// A folder with the fake under perftest's three names.
std::string FakePerftestDir(const std::string& base) {
  const std::string dir = base + "/perftest-bin";
  fs::create_directories(dir);
  for (const char* name : {"ib_write_bw", "ib_read_bw", "ib_write_lat"}) {
    fs::create_symlink(Cluster::BinDir() + "/fake_perftest", dir + "/" + name);
  }
  return dir;
}

// Two agents' --root trees under `base`, each two GPUs and two NDR NICs
// (tests/fixtures/rdma/two-rails.topo).
std::pair<std::string, std::string> TwoRailRoots(const std::string& base) {
  const std::string topo =
      std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/rdma/two-rails.topo";
  std::pair<std::string, std::string> roots{base + "/root-0", base + "/root-1"};
  cmax::testing::BuildTopologyTree(topo, roots.first);
  cmax::testing::BuildTopologyTree(topo, roots.second);
  return roots;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

std::string Label(const cmax::v1::Measurement& m, const std::string& key) {
  auto it = m.labels().find(key);
  return it == m.labels().end() ? "" : it->second;
}

// The value of `flag` in a logged argv ("-p 18515" -> "18515").
std::string FlagValue(const std::vector<std::string>& words, const std::string& flag) {
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == flag) return words[i + 1];
  }
  return "";
}

}  // namespace

TEST_CASE(
    "rdma over a pair of agents: every rail and test, server and client via the "
    "rendezvous",
    "[integration][rdma]") {
  cmax::testing::ScratchDir tmp;
  const auto [r0, r1] = TwoRailRoots(tmp.path);
  const std::string log = tmp.path + "/perftest.log";
  ClusterOptions o;
  o.agents = 2;
  o.agent_roots = {r0, r1};
  o.agent_env = {{"PATH", FakePerftestDir(tmp.path) + ":" + getenv("PATH")},
                 {"FAKE_PERFTEST_LOG", log},
                 {"FAKE_PERFTEST_SLOW", "mlx5_1"}};
  Cluster c("rd1", o);
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());
  if (!c.using_netns()) WARN("network namespaces unavailable: agents ran on loopback");
  auto r = c.Ctl({"run", "--plan", c.WritePlan("rdma", kPlan)}, 300s);
  INFO(r.out << r.err);
  INFO("perftest log:\n" << Slurp(log));
  // rail 1 reports 150 Gb/s on a 400 Gb/s port: the judge fails both nodes.
  CHECK(r.exit.code == 1);
  const std::string run_id = Cluster::RunIdFrom(r.out);
  REQUIRE_FALSE(run_id.empty());

  std::map<std::string, int> count;  // metric/stat per rail
  std::set<std::string> clients, servers;
  for (const auto& rec : Export(c, run_id)) {
    if (rec.record().has_finding()) {
      const auto& f = rec.record().finding();
      INFO(f.check_id() << ": " << f.title() << " -- " << f.detail());
      CHECK_FALSE(f.not_measured());
      CHECK(f.severity() < cmax::v1::SEVERITY_FAIL);
    }
    if (!rec.record().has_measurement()) continue;
    const auto& m = rec.record().measurement();
    if (rec.suite() != "rdma") continue;
    const std::string rail = Label(m, "rail");
    INFO(m.metric() << " rail " << rail);
    REQUIRE((rail == "0" || rail == "1"));
    clients.insert(Label(m, "src"));
    servers.insert(Label(m, "dst"));
    CHECK(rec.node() == Label(m, "src"));  // the client writes the records
    CHECK(Label(m, "hca") == "mlx5_" + rail);
    CHECK(Label(m, "peer_hca") == "mlx5_" + rail);
    CHECK(Label(m, "port") == "1");
    CHECK(Label(m, "gpu") == rail);  // the GPU-NIC map: GPU k beside NIC k
    CHECK(Label(m, "peer_gpu") == rail);
    CHECK(Label(m, "memory") == "host");  // no NVIDIA driver under the fixture root
    CHECK(Label(m, "link_layer") == "InfiniBand");
    CHECK(Label(m, "port_rate_gbps") == "400");
    CHECK(Label(m, "peer_port_rate_gbps") == "400");
    CHECK(Label(m, "perftest_version") == "0.0-fake");
    if (m.metric() == "rdma_write_lat_us") {
      const std::string stat = Label(m, "stat");
      ++count[absl::StrCat(m.metric(), "/", stat, "/", rail)];
      if (stat == "p50") CHECK(m.value() == Approx(1.79));
      if (stat == "p99") CHECK(m.value() == Approx(1.88));
    } else {
      ++count[absl::StrCat(m.metric(), "/", rail)];
      CHECK(Label(m, "size_bytes") == "65536");
      CHECK(m.value() == Approx(rail == "1" ? 150.0 : 391.5));
    }
  }
  for (const char* rail : {"0", "1"}) {
    INFO("rail " << rail);
    CHECK(count[absl::StrCat("rdma_write_bw_gbps/", rail)] == 1);
    CHECK(count[absl::StrCat("rdma_read_bw_gbps/", rail)] == 1);
    CHECK(count[absl::StrCat("rdma_write_lat_us/p50/", rail)] == 1);
    CHECK(count[absl::StrCat("rdma_write_lat_us/p99/", rail)] == 1);
  }
  REQUIRE(clients.size() == 1);
  REQUIRE(servers.size() == 1);
  const std::string client = *clients.begin(), server = *servers.begin();
  CHECK(client != server);
  CHECK(std::set<std::string>{client, server} ==
        std::set<std::string>{c.node(0), c.node(1)});

  // The fake's log: six servers, six clients, in step; each client connected
  // to the port its server was given, at an address the server published.
  std::vector<std::vector<std::string>> server_runs, client_runs;
  for (absl::string_view line : absl::StrSplit(Slurp(log), '\n', absl::SkipEmpty())) {
    std::vector<std::string> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
    REQUIRE(w.size() > 2);
    (w[1] == "server" ? server_runs : client_runs).push_back(w);
  }
  REQUIRE(server_runs.size() == 6);
  REQUIRE(client_runs.size() == 6);
  for (size_t k = 0; k < 6; ++k) {
    INFO("run " << k);
    const auto& s = server_runs[k];
    const auto& cl = client_runs[k];
    CHECK(s[0] == cl[0]);  // the same test on both ends
    CHECK(FlagValue(s, "-p") == FlagValue(cl, "-p"));
    CHECK(FlagValue(s, "-d") == FlagValue(cl, "-d"));
    CHECK(FlagValue(s, "-i") == "1");
    const bool bw = s[0] != "ib_write_lat";
    CHECK(FlagValue(s, "-D") == (bw ? "1" : ""));
    const std::string& addr = cl.back();
    CHECK_FALSE(absl::StartsWith(addr, "-"));
    // In namespaces the server's own address on the bridge, else loopback.
    if (c.using_netns()) {
      CHECK(absl::StartsWith(addr, "10.251."));
    } else {
      CHECK(addr == "127.0.0.1");
    }
  }

  // The scorecard names the slow rail with both ends.
  const auto card = ReportCard(c, run_id);
  const std::string link =
      absl::StrCat(server < client ? server : client, ":mlx5_1/1 <-> ",
                   server < client ? client : server, ":mlx5_1/1");
  int slow_link = 0;
  for (const auto& cat : card.categories()) {
    for (const auto& rule : cat.rules()) {
      if (rule.rule_id() != "rdma.slow_link") continue;
      ++slow_link;
      CHECK(rule.outcome() == "fail");
      CHECK(rule.subject() == "link:" + link);
      CHECK_THAT(rule.message(), Catch::Contains("cannot be told apart"));
    }
  }
  CHECK(slow_link == 2);
}

TEST_CASE(
    "rdma where one node has no RDMA devices: not measured on both, with the reason",
    "[integration][rdma]") {
  cmax::testing::ScratchDir tmp;
  const std::string r0 = tmp.path + "/root-0", r1 = tmp.path + "/root-1";
  cmax::testing::BuildTopologyTree(
      std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/rdma/two-rails.topo", r0);
  fs::create_directories(r1 + "/sys/bus/pci/devices");  // a node without RDMA devices
  ClusterOptions o;
  o.agents = 2;
  o.agent_roots = {r0, r1};
  o.agent_env = {{"PATH", FakePerftestDir(tmp.path) + ":" + getenv("PATH")}};
  Cluster c("rd2", o);
  REQUIRE(c.Start().ok());
  auto r = c.Ctl({"run", "--plan", c.WritePlan("rdma", kPlan)}, 300s);
  INFO(r.out << r.err);
  // Could not run is not a failure, but the pair's one task could not run:
  // nothing was measured (5), said on stderr with the reason.
  CHECK(r.exit.code == kExitNothingMeasured);
  CHECK_THAT(r.err, Catch::Contains("NOTHING WAS MEASURED: the only task could not run; "
                                    "first reason: "));
  const std::string run_id = Cluster::RunIdFrom(r.out);
  std::map<std::string, std::string> why;  // node -> not-measured detail
  for (const auto& rec : Export(c, run_id)) {
    if (rec.suite() != "rdma") continue;
    CHECK_FALSE(rec.record().has_measurement());
    if (!rec.record().has_finding()) continue;
    const auto& f = rec.record().finding();
    CHECK(f.not_measured());
    why[rec.node()] = f.detail();
  }
  // node-1 says why itself. node-0's rank says so too when it writes before
  // the gang ends; on a loaded machine the coordinator may end the gang
  // first (benchmarks/stress/run.sh found it). Either way node-0's verdict
  // carries node-1's reason and blames nobody.
  REQUIRE(why.count(c.node(1)) == 1);
  CHECK_THAT(why[c.node(1)], Catch::Contains("no RDMA devices"));
  if (why.count(c.node(0))) {
    CHECK_THAT(why[c.node(0)],
               Catch::Contains(c.node(1)) && Catch::Contains("no RDMA devices"));
  }
  const auto card = ReportCard(c, run_id);
  for (const auto& cat : card.categories()) {
    if (cat.name() != "Networking") continue;
    CHECK_FALSE(cat.measured());
  }
  for (const auto& n : card.nodes()) {
    INFO(n.node() << ": " << n.verdict());
    CHECK(n.verdict() == "warn");  // not measured: never a pass, never a failure
    bool says_why = false;
    for (const auto& reason : n.reasons()) {
      says_why = says_why || absl::StrContains(reason, "no RDMA devices");
    }
    CHECK(says_why);
  }
}

TEST_CASE(
    "rdma: a server that cannot start is not measured, a client that fails fails the "
    "link",
    "[integration][rdma]") {
  cmax::testing::ScratchDir tmp;
  const auto [r0, r1] = TwoRailRoots(tmp.path);
  ClusterOptions o;
  o.agents = 2;
  o.agent_roots = {r0, r1};
  o.agent_env = {{"PATH", FakePerftestDir(tmp.path) + ":" + getenv("PATH")},
                 {"FAKE_PERFTEST_FAIL_SERVER", "ib_read_bw"},
                 {"FAKE_PERFTEST_FAIL_CLIENT", "ib_write_lat"}};
  Cluster c("rd3", o);
  REQUIRE(c.Start().ok());
  auto r = c.Ctl({"run", "--plan", c.WritePlan("rdma", kPlan)}, 300s);
  INFO(r.out << r.err);
  CHECK(r.exit.code == 1);  // the failed link fails the nodes
  int write_bw = 0, read_bw = 0, server_failed = 0, run_failed = 0;
  for (const auto& rec : Export(c, Cluster::RunIdFrom(r.out))) {
    if (rec.suite() != "rdma") continue;
    if (rec.record().has_measurement()) {
      const std::string& metric = rec.record().measurement().metric();
      write_bw += metric == "rdma_write_bw_gbps";
      read_bw += metric == "rdma_read_bw_gbps";
      CHECK(metric != "rdma_write_lat_us");
      continue;
    }
    if (!rec.record().has_finding()) continue;
    const auto& f = rec.record().finding();
    INFO(rec.node() << " " << f.check_id() << ": " << f.title() << " -- " << f.detail());
    if (f.check_id() == "rdma.server_failed") {
      // ib_read_bw: its server never listened; both nodes say not measured,
      // the server's record with the command and perftest's own words.
      ++server_failed;
      CHECK(f.not_measured());
      CHECK(absl::StrContains(f.title(), "ib_read_bw"));
      if (absl::StrContains(f.detail(), "command:")) {
        CHECK_THAT(f.detail(),
                   Catch::Contains("Unable to find the Infiniband/RoCE device") &&
                       Catch::Contains("ib_read_bw -d mlx5_"));
      }
    } else if (f.check_id() == "rdma.run_failed") {
      // ib_write_lat: the server listened and the client failed: the link's.
      ++run_failed;
      CHECK_FALSE(f.not_measured());
      CHECK(f.severity() == cmax::v1::SEVERITY_FAIL);
      CHECK_THAT(f.title(), Catch::Contains("ib_write_lat") && Catch::Contains(" <-> "));
      const std::string ev = absl::StrJoin(f.evidence(), "\n");
      CHECK_THAT(ev, Catch::Contains("client command on ") &&
                         Catch::Contains("ib_write_lat -d mlx5_") &&
                         Catch::Contains("failed on purpose after the exchange") &&
                         Catch::Contains("server on "));
    } else {
      CHECK(f.not_measured());
    }
  }
  CHECK(write_bw == 2);
  CHECK(read_bw == 0);
  CHECK(server_failed == 4);  // two rails, a record on each node
  CHECK(run_failed == 2);     // one per rail
}

TEST_CASE(
    "rdma with a hostile rank 0: options and garbage in its rendezvous answers never "
    "reach the client's perftest",
    "[integration][rdma][security]") {
  // Issue 28, item 1: rank 0 published "ready 18515 --out_json_file=/any/path"
  // and the client ran `ib_write_bw ... --out_json_file=/any/path` as root.
  // Both agents get tests/integration/hostile_rdma_rank.cc as cmax-bench:
  // whichever node is rank 0 lies, rank 1 is the real suite.
  cmax::testing::ScratchDir tmp;
  const auto [r0, r1] = TwoRailRoots(tmp.path);
  const std::string bench = tmp.path + "/hostile-bench";
  fs::create_directories(bench);
  fs::create_symlink(Cluster::BinDir() + "/hostile_rdma_rank", bench + "/cmax-bench");
  for (const auto& e : fs::directory_iterator(Cluster::BinDir())) {
    const std::string name = e.path().filename();
    if (absl::StartsWith(name, "cmax-bench-")) fs::create_symlink(e.path(), bench + "/" + name);
  }
  const std::string log = tmp.path + "/perftest.log", marker = tmp.path + "/injected.json";
  ClusterOptions o;
  o.agents = 2;
  o.agent_roots = {r0, r1};
  o.bench_dir = bench;
  o.agent_env = {{"PATH", FakePerftestDir(tmp.path) + ":" + getenv("PATH")},
                 {"FAKE_PERFTEST_LOG", log},
                 {"HOSTILE_RDMA_MARKER", marker}};
  Cluster c("rd4", o);
  REQUIRE(c.Start().ok());
  auto r = c.Ctl({"run", "--plan", c.WritePlan("rdma", kPlan)}, 300s);
  INFO(r.out << r.err);
  INFO("perftest log:\n" << Slurp(log));
  // No perftest client ran at all, so none with the injected option, and
  // nothing was written where the option pointed.
  CHECK_FALSE(absl::StrContains(Slurp(log), " client "));
  CHECK_FALSE(absl::StrContains(Slurp(log), "--out_json_file"));
  CHECK_FALSE(fs::exists(marker));
  // Six runs (two rails, three tests), six refusals on the client's node,
  // each naming the peer and what it published; nothing measured.
  int refused = 0;
  std::string client;
  for (const auto& rec : Export(c, Cluster::RunIdFrom(r.out))) {
    if (rec.suite() != "rdma") continue;
    CHECK_FALSE(rec.record().has_measurement());
    if (!rec.record().has_finding()) continue;
    const auto& f = rec.record().finding();
    INFO(rec.node() << " " << f.check_id() << ": " << f.title() << " -- " << f.detail());
    CHECK(f.not_measured());
    if (!absl::StrContains(f.title(), "the peer's answer was refused")) continue;
    ++refused;
    CHECK(f.check_id() == "rdma.server_failed");
    CHECK((client.empty() || client == rec.node()));
    client = rec.node();
    const std::string other = client == c.node(0) ? c.node(1) : c.node(0);
    CHECK_THAT(f.detail(), Catch::StartsWith(other + ": ") &&
                               (Catch::Contains("not a numeric IPv4 or IPv6 address: refused") ||
                                Catch::Contains("is not a port number")));
  }
  CHECK(refused == 6);
  // Not measured is not a pass: cmaxctl says nothing was measured (5), and
  // the pair's networking has no grade.
  CHECK(r.exit.code == kExitNothingMeasured);
  const auto card = ReportCard(c, Cluster::RunIdFrom(r.out));
  for (const auto& cat : card.categories()) {
    if (cat.name() == "Networking") CHECK_FALSE(cat.measured());
  }
}
