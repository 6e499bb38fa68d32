// The rdma suite's pure parts: perftest's report (fixtures from published
// runs, tests/fixtures/rdma/NOTE.md), the rails of a node read from a
// sysfs-shaped fixture tree, and the argv given to perftest.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "benchmarks/rdma/perftest_report.h"
#include "benchmarks/rdma/rails.h"
#include "common/plan_parser.h"
#include "common/subprocess.h"
#include "common/suite_catalog.h"
#include "common/sysroot.h"
#include "tests/benchmarks/hostcheck/topology_tree.h"
#include "tests/scratch_dir.h"
#include "tests/skip.h"

namespace cmax::bench::rdma {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/rdma/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

TEST_CASE("ib_write_bw report with --report_gbits (perftest#273, RoCE)",
          "[rdma][parser]") {
  auto rows = ParseBwReport(Fixture("write_bw_gbits_roce_perftest273.txt"));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  CHECK((*rows)[0].bytes == 8);
  CHECK((*rows)[0].iterations == 224958464);
  CHECK((*rows)[0].peak_gbps == Approx(0.00));
  CHECK((*rows)[0].average_gbps == Approx(0.48));
  CHECK((*rows)[0].msg_rate_mpps == Approx(7.498617));
}

TEST_CASE("a bandwidth report in MB/sec is refused, not converted", "[rdma][parser]") {
  auto rows = ParseBwReport(Fixture("send_bw_mbsec_perftest65.txt"));
  REQUIRE_FALSE(rows.ok());
  CHECK(absl::IsFailedPrecondition(rows.status()));
  CHECK_THAT(std::string(rows.status().message()), Catch::Contains("--report_gbits"));
}

TEST_CASE("latency reports with CPU-frequency warnings inside the table",
          "[rdma][parser]") {
  auto ib = ParseLatReport(Fixture("read_lat_ib_mlx4_client.txt"));
  REQUIRE(ib.ok());
  REQUIRE(ib->size() == 1);
  const LatRow& r = (*ib)[0];
  CHECK(r.bytes == 2);
  CHECK(r.iterations == 1000);
  CHECK(r.t_min_us == Approx(1.76));
  CHECK(r.t_max_us == Approx(6.12));
  CHECK(r.t_typical_us == Approx(1.79));
  REQUIRE(r.t_avg_us);
  CHECK(*r.t_avg_us == Approx(1.80));
  REQUIRE(r.p99_us);
  CHECK(*r.p99_us == Approx(1.88));
  REQUIRE(r.p999_us);
  CHECK(*r.p999_us == Approx(6.12));

  auto roce = ParseLatReport(Fixture("read_lat_roce_spiderpool.txt"));
  REQUIRE(roce.ok());
  REQUIRE(roce->size() == 1);
  CHECK((*roce)[0].t_typical_us == Approx(6.74));
  CHECK(*(*roce)[0].p99_us == Approx(7.15));
}

TEST_CASE("several sizes (-a) give one row each, garbage is an error", "[rdma][parser]") {
  // The two-row table shape of perftest's -a sweep, numbers made up here.
  const std::string text =
      " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
      " 2          5000             0.12               0.11   \t\t   6.875000\n"
      " 65536      5000             392.50             391.90 \t\t   0.747490\n"
      "----------------------------------------------------------------------------------"
      "-----\n"
      " 131072     5000             1.0                1.0    1.0\n";
  auto rows = ParseBwReport(text);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);  // the row after the closing dashes is not the table's
  CHECK((*rows)[1].bytes == 65536);
  CHECK((*rows)[1].average_gbps == Approx(391.90));

  CHECK_FALSE(ParseBwReport("Couldn't connect to 10.0.0.2:18515\n").ok());
  CHECK_FALSE(ParseLatReport(Fixture("write_bw_gbits_roce_perftest273.txt")).ok());
  CHECK_FALSE(ParseBwReport(" #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec]\n"
                            " 65536 5000\n")
                  .ok());
}

TEST_CASE("rails of a DGX-H100-like node follow the GPU-NIC map", "[rdma][rails]") {
  testing::ScratchDir dir;
  const std::string root = dir.path + "/root";
  testing::BuildTopologyTree(testing::TopologyFixture("dgx-h100-clean"), root);
  auto rails = ReadRails(Sysroot(root));
  REQUIRE(rails.ok());
  // 8 compute NICs paired with GPUs 0..7, then the two storage NICs.
  REQUIRE(rails->size() == 10);
  for (int i = 0; i < 8; ++i) {
    INFO("rail " << i);
    CHECK((*rails)[i].gpu == i);
    CHECK((*rails)[i].hca == "mlx5_" + std::to_string(i));
    CHECK((*rails)[i].port == 1);
    CHECK((*rails)[i].rate_gbps == 400);
    CHECK((*rails)[i].link_layer == "InfiniBand");
    CHECK((*rails)[i].gid_index == -1);
  }
  CHECK((*rails)[0].gpu_bdf == "0000:18:00.0");
  CHECK((*rails)[8].gpu == -1);
  CHECK((*rails)[8].rate_gbps == 200);
  // The rendezvous line reads back the same.
  auto back = ParseRail(FormatRail((*rails)[0]));
  REQUIRE(back.ok());
  CHECK(back->hca == "mlx5_0");
  CHECK(back->gpu_bdf == "0000:18:00.0");
  CHECK(back->rate_gbps == 400);
  CHECK_FALSE(ParseRail("mlx5_0 1 InfiniBand").ok());
  CHECK_FALSE(ParseRail("-rf 1 InfiniBand 400 -1 0 -").ok());
}

TEST_CASE("no RDMA devices, no active port: the reasons", "[rdma][rails]") {
  testing::ScratchDir dir;
  fs::create_directories(dir.path + "/empty");
  auto none = ReadRails(Sysroot(dir.path + "/empty"));
  REQUIRE_FALSE(none.ok());
  CHECK(absl::IsNotFound(none.status()));
  CHECK_THAT(
      std::string(none.status().message()),
      Catch::Contains("no RDMA devices") && Catch::Contains("/sys/class/infiniband"));

  const std::string root = dir.path + "/down";
  testing::BuildTopologyTree(testing::TopologyFixture("dgx-h100-clean"), root);
  for (const auto& e : fs::directory_iterator(root + "/sys/class/infiniband")) {
    Write(fs::path(e.path()) / "ports/1/state", "1: DOWN");
  }
  auto down = ReadRails(Sysroot(root));
  REQUIRE_FALSE(down.ok());
  CHECK(absl::IsFailedPrecondition(down.status()));
  CHECK_THAT(std::string(down.status().message()), Catch::Contains("mlx5_3/1 '1: DOWN'"));
}

TEST_CASE("RoCE ports get the first RoCE v2 GID that is set, IPv4-mapped first",
          "[rdma][rails]") {
  testing::ScratchDir dir;
  const std::string root = dir.path + "/root";
  testing::BuildTopologyTree(testing::TopologyFixture("dgx-h100-clean"), root);
  // sysfs-class-infiniband: ports/<n>/gids/<i> and gid_attrs/types/<i>.
  const fs::path port = fs::path(root) / "sys/class/infiniband/mlx5_0/ports/1";
  Write(port / "link_layer", "Ethernet");
  Write(port / "gids/0", "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d");
  Write(port / "gid_attrs/types/0", "IB/RoCE v1");
  Write(port / "gids/1", "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d");
  Write(port / "gid_attrs/types/1", "RoCE v2");
  Write(port / "gids/2", "0000:0000:0000:0000:0000:ffff:0a00:0005");
  Write(port / "gid_attrs/types/2", "IB/RoCE v1");
  Write(port / "gids/3", "0000:0000:0000:0000:0000:ffff:0a00:0005");
  Write(port / "gid_attrs/types/3", "RoCE v2");
  Write(port / "gids/4", "0000:0000:0000:0000:0000:0000:0000:0000");
  Write(port / "gid_attrs/types/4", "RoCE v2");
  auto rails = ReadRails(Sysroot(root));
  REQUIRE(rails.ok());
  REQUIRE((*rails)[0].hca == "mlx5_0");
  CHECK((*rails)[0].roce());
  CHECK((*rails)[0].gid_index == 3);
  auto forced = ReadRails(Sysroot(root), 1);
  REQUIRE(forced.ok());
  CHECK((*forced)[0].gid_index == 1);
  CHECK((*forced)[1].gid_index == -1);  // InfiniBand: no -x
}

TEST_CASE("perftest argv: server, client, RoCE, CUDA, duration", "[rdma][argv]") {
  Rail ib;
  ib.hca = "mlx5_3";
  ib.port = 1;
  ib.link_layer = "InfiniBand";
  ib.gpu = 3;
  ib.gpu_bdf = "0000:5d:00.0";
  PerftestOptions o;
  o.tcp_port = 18520;
  o.duration_s = 5;
  using V = std::vector<std::string>;
  CHECK(PerftestArgv("/usr/bin/ib_write_bw", PerftestTest::kWriteBw, ib, o, "") ==
        V{"/usr/bin/ib_write_bw", "-d", "mlx5_3", "-i", "1", "-F", "-p", "18520",
          "--report_gbits", "-D", "5"});
  CHECK(PerftestArgv("ib_read_bw", PerftestTest::kReadBw, ib, o, "10.0.0.2") ==
        V{"ib_read_bw", "-d", "mlx5_3", "-i", "1", "-F", "-p", "18520", "--report_gbits",
          "-D", "5", "10.0.0.2"});
  // Latency: no --report_gbits, no -D (duration mode has no percentiles).
  o.iterations = 0;
  CHECK(PerftestArgv("ib_write_lat", PerftestTest::kWriteLat, ib, o, "10.0.0.2") ==
        V{"ib_write_lat", "-d", "mlx5_3", "-i", "1", "-F", "-p", "18520", "10.0.0.2"});
  Rail roce = ib;
  roce.link_layer = "Ethernet";
  roce.gid_index = 3;
  o.duration_s = 0;
  o.iterations = 1000;
  o.size_bytes = 1 << 20;
  o.use_cuda = true;
  CHECK(PerftestArgv("ib_write_bw", PerftestTest::kWriteBw, roce, o, "") ==
        V{"ib_write_bw", "-d", "mlx5_3", "-i", "1", "-F", "-p", "18520", "--report_gbits",
          "-x", "3", "-n", "1000", "--perform_warm_up", "-s", "1048576", "--use_cuda=3"});
  CHECK(PerftestArgv("ib_write_lat", PerftestTest::kWriteLat, roce, o, "h") ==
        V{"ib_write_lat", "-d", "mlx5_3", "-i", "1", "-F", "-p", "18520", "-x", "3", "-n",
          "1000", "-s", "1048576", "--use_cuda=3", "h"});
  o.cuda_by_bus_id = true;
  CHECK(PerftestArgv("ib_write_bw", PerftestTest::kWriteBw, roce, o, "").back() ==
        "--use_cuda_bus_id=0000:5d:00.0");
  CHECK(ValidHcaName("mlx5_bond_0"));
  CHECK_FALSE(ValidHcaName("-x"));
  CHECK_FALSE(ValidHcaName("mlx5;rm"));
  CHECK_FALSE(ValidHcaName(""));
}

TEST_CASE("a peer's ready answer: numeric addresses and a port, nothing else reaches perftest",
          "[rdma][argv][security]") {
  auto ok = ParseServerReady("ready 18515 10.0.0.2,fd00::2");
  REQUIRE(ok.ok());
  CHECK(ok->tcp_port == 18515);
  CHECK(ok->addresses == std::vector<std::string>{"10.0.0.2", "fd00::2"});
  // A hostile rank 0: every element would be an argument of the root-run
  // perftest client. Each is refused, with what was refused said.
  for (const char* bad : {"ready 18515 --out_json_file=/any/path",
                          "ready 18515 10.0.0.2,--out_json_file=/x",
                          "ready --out_json_file=/x 10.0.0.2",
                          "ready 18515 host.example",  // a name: not what a server publishes
                          "ready 18515 10.0.0.2;rm",
                          "ready 0 10.0.0.2",
                          "ready 70000 10.0.0.2",
                          "ready +80 10.0.0.2",
                          "ready 18515 ",
                          "ready 18515",
                          "readyish 18515 10.0.0.2",
                          ""}) {
    INFO(bad);
    auto r = ParseServerReady(bad);
    CHECK_FALSE(r.ok());
  }
  auto refused = ParseServerReady("ready 18515 --out_json_file=/any/path");
  CHECK(absl::StrContains(refused.status().message(), "--out_json_file=/any/path"));
  CHECK(absl::StrContains(refused.status().message(), "refused"));
}

TEST_CASE("the installed perftest accepts every argv the suite builds",
          "[rdma][argv][perftest]") {
  // Real perftest (Debian's package) on a host without RDMA devices: it
  // parses its options first and stops at "Did not detect devices", so an
  // option it does not know shows ("unrecognized option ... Invalid Command
  // or flag") and nothing goes on the network. Where the host has devices
  // a server would wait for a client: not run there.
  if (FindExecutable("ib_write_bw").empty()) {
    CMAX_SKIP("perftest is not installed (deploy/install-deps.sh --with-tests)");
  }
  if (!Sysroot("/").List("/sys/class/infiniband").empty()) {
    CMAX_SKIP("this host has RDMA devices; a perftest server would wait for a client");
  }
  Rail ib;
  ib.hca = "mlx5_0";
  ib.link_layer = "InfiniBand";
  Rail roce = ib;
  roce.link_layer = "Ethernet";
  roce.gid_index = 3;
  PerftestOptions dur;
  dur.duration_s = 5;
  PerftestOptions iters;
  iters.iterations = 1000;
  iters.size_bytes = 65536;
  for (PerftestTest t :
       {PerftestTest::kWriteBw, PerftestTest::kReadBw, PerftestTest::kWriteLat}) {
    for (const Rail* rail : {&ib, &roce}) {
      for (const PerftestOptions* o : {&dur, &iters}) {
        for (const char* server : {"", "127.0.0.1"}) {
          auto argv =
              PerftestArgv(FindExecutable(PerftestProgram(t)), t, *rail, *o, server);
          auto r = RunCommand(argv, std::chrono::seconds(20));
          REQUIRE(r.ok());
          const std::string text = r->out + r->err;
          INFO(absl::StrJoin(argv, " ") << "\n" << text);
          CHECK_FALSE(r->timed_out);
          CHECK_THAT(text, !Catch::Contains("unrecognized option") &&
                               !Catch::Contains("Invalid Command or flag"));
          CHECK_THAT(text, Catch::Contains("Did not detect devices"));
        }
      }
    }
  }
}

TEST_CASE("the rdma plans parse and their params pass the catalog", "[rdma][plan]") {
  const SuiteInfo* info = FindSuite("rdma");
  REQUIRE(info != nullptr);
  CHECK(info->scopes.front() == v1::SCOPE_PAIRS);
  CHECK(info->category == "networking");
  for (const char* name : {"rdma", "full"}) {
    auto plan = LoadPlanFile(std::string(CMAX_SOURCE_DIR) + "/benchmarks/plans/" + name +
                             ".yaml");
    INFO(name << ": " << plan.status().ToString());
    REQUIRE(plan.ok());
    int found = 0;
    for (const auto& s : plan->suites()) {
      if (s.suite() != "rdma") continue;
      ++found;
      CHECK(s.scope() == v1::SCOPE_PAIRS);
      std::map<std::string, std::string> params(s.params().begin(), s.params().end());
      auto args = BuildSuiteArgs(*info, params);
      INFO(args.status().ToString());
      CHECK(args.ok());
    }
    CHECK(found == 1);
  }
  // A value that could smuggle an option is refused by the catalog.
  CHECK_FALSE(BuildSuiteArgs(*info, {{"tests", "write_bw,--use_cuda=0"}}).ok());
  CHECK_FALSE(BuildSuiteArgs(*info, {{"port", "80"}}).ok());
}

}  // namespace
}  // namespace cmax::bench::rdma
