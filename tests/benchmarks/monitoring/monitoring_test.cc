// cmax-bench monitoring: the DCGM exporter's default counters (fixture text),
// the real prometheus-node-exporter from Debian started here on a free
// 127.0.0.1 port (missing: the case FAILS; deploy/install-deps.sh
// --with-tests installs it), kernel log and Slurm health check roots, and the
// binary's records through the scorecard.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/monitoring/monitoring.h"
#include "common/subprocess.h"
#include "common/sysroot.h"
#include "reports/scorecard.h"
#include "tests/benchmarks/suite_run.h"

using namespace std::chrono_literals;
using cmax::monitoring::Check;
using cmax::monitoring::Status;

namespace {

std::string Fixture(const std::string& name) {
  return std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/monitoring/" + name;
}

const Check& Find(const std::vector<Check>& checks, const std::string& id) {
  for (const Check& c : checks) {
    if (c.id == id) return c;
  }
  FAIL("no check " << id);
  static Check none;
  return none;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

cmax::monitoring::Scraper FileScraper(std::map<std::string, std::string> files) {
  return [files](const cmax::monitoring::Exporter& e) -> absl::StatusOr<std::string> {
    auto it = files.find(e.name);
    if (it == files.end()) return cmax::monitoring::ScrapeLoopback(e.port, 2000);
    return cmax::Sysroot("/").Read(it->second);
  };
}

}  // namespace

TEST_CASE("monitoring: exporter lists and metric names parse", "[monitoring]") {
  auto e = cmax::monitoring::ParseExporters("dcgm:9400,node:9100");
  REQUIRE(e.ok());
  REQUIRE(e->size() == 2);
  CHECK((*e)[1].port == 9100);
  CHECK_FALSE(cmax::monitoring::ParseExporters("dcgm").ok());
  CHECK_FALSE(cmax::monitoring::ParseExporters("dcgm:70000").ok());
  auto names = cmax::monitoring::MetricNames(
      "# HELP a x\n# TYPE a gauge\na{gpu=\"0\"} 1\nb 2\n\n  c_total{x=\"y\"} 3 1700000000\n");
  CHECK(names == std::set<std::string>{"a", "b", "c_total"});
}

TEST_CASE("monitoring: the DCGM exporter's default counters lack ECC, NVLink errors and throttle "
          "reasons, each named", "[monitoring]") {
  cmax::monitoring::Options o;
  o.root = Fixture("kept");
  o.exporters = {{"dcgm", 9400}};
  o.scrape = FileScraper({{"dcgm", Fixture("dcgm-default.txt")}});
  auto checks = cmax::monitoring::RunChecks(o);
  CHECK(Find(checks, "monitoring.exporter.dcgm").status == Status::kPass);
  const Check& s = Find(checks, "monitoring.signals.dcgm");
  CHECK(s.status == Status::kWarn);
  CHECK(s.title ==
        "dcgm exporter lacks 3 of 8 health signals: ECC double-bit errors "
        "(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL), NVLink error counters "
        "(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL), throttle reasons "
        "(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS)");
  CHECK(absl::StrContains(s.action, "counters CSV"));
  bool xid = false;
  for (const auto& ev : s.evidence) xid |= absl::StrContains(ev, "Xid errors: DCGM_FI_DEV_XID_ERRORS");
  CHECK(xid);

  o.scrape = FileScraper({{"dcgm", Fixture("dcgm-full.txt")}});
  auto full = cmax::monitoring::RunChecks(o);
  CHECK(Find(full, "monitoring.signals.dcgm").status == Status::kPass);
}

TEST_CASE("monitoring: the kernel log kept or lost, cmax's Slurm health check wired or not",
          "[monitoring]") {
  cmax::monitoring::Options o;
  o.exporters = {};
  o.root = Fixture("kept");
  auto kept = cmax::monitoring::RunChecks(o);
  const Check& k = Find(kept, "monitoring.kernel_log");
  CHECK(k.status == Status::kPass);
  CHECK(k.title == "kernel log kept across reboots (journald) and shipped by a forwarder");
  bool line = false;
  for (const auto& ev : k.evidence) line |= ev == "/etc/systemd/journald.conf:3: Storage=persistent";
  CHECK(line);
  CHECK(Find(kept, "monitoring.slurm_health_check").status == Status::kPass);
  o.root = Fixture("lost");
  auto lost = cmax::monitoring::RunChecks(o);
  CHECK(Find(lost, "monitoring.kernel_log").status == Status::kWarn);
  CHECK(absl::StrContains(Find(lost, "monitoring.kernel_log").action, "Storage=persistent"));
  CHECK(Find(lost, "monitoring.slurm_health_check").status == Status::kNotMeasured);
}

TEST_CASE("monitoring: an exporter that does not answer fails on a GPU node and leaves its "
          "signals not measured", "[monitoring]") {
  const int port = FreePort();
  cmax::monitoring::Options o;
  o.root = Fixture("lost");
  o.exporters = {{"dcgm", port}};
  o.scrape = FileScraper({});
  auto checks = cmax::monitoring::RunChecks(o);
  const Check& e = Find(checks, "monitoring.exporter.dcgm");
  CHECK(e.status == Status::kFail);
  REQUIRE(e.evidence.size() == 1);
  CHECK(absl::StrContains(e.evidence[0], absl::StrCat("GET http://127.0.0.1:", port,
                                                      "/metrics: connect: Connection refused")));
  const Check& s = Find(checks, "monitoring.signals.dcgm");
  CHECK(s.status == Status::kNotMeasured);
  CHECK(cmax::orchestration::ToFinding(s).not_measured());
}

TEST_CASE("monitoring: the real prometheus-node-exporter answers on loopback and lacks the "
          "InfiniBand counters of a node with RDMA devices", "[monitoring]") {
  const std::string binary = "/usr/bin/prometheus-node-exporter";
  // Not a skip: deploy/install-deps.sh --with-tests installs it.
  REQUIRE(access(binary.c_str(), X_OK) == 0);
  const int port = FreePort();
  cmax::SpawnOptions so;
  so.argv = {binary, absl::StrCat("--web.listen-address=127.0.0.1:", port),
             "--collector.disable-defaults", "--collector.infiniband", "--collector.uname",
             "--collector.time"};
  auto child = cmax::Subprocess::Spawn(so);
  REQUIRE(child.ok());
  absl::StatusOr<std::string> text = absl::UnavailableError("not yet");
  for (int i = 0; i < 100 && !text.ok(); ++i) {
    std::this_thread::sleep_for(50ms);
    text = cmax::monitoring::ScrapeLoopback(port, 1000);
  }
  INFO(text.status().ToString());
  CHECK(text.ok());
  if (text.ok()) CHECK(cmax::monitoring::MetricNames(*text).count("node_uname_info") == 1);

  // Through the binary, as the agent runs it; "kept" has an RDMA device the
  // real /sys of this machine does not give node_exporter. Its free port is
  // none of the exporters' own: this node's operator allows it.
  auto run = cmax::testing::RunSuite(
      "cmax-bench",
      {"monitoring", "--jsonl", "--root", Fixture("kept"), "--exporters",
       absl::StrCat("node:", port)},
      30s, {{"CMAX_EXPORTER_PORTS", absl::StrCat(port)}});
  (*child)->SignalGroup(SIGTERM);
  (*child)->Wait();
  CHECK(run.exit_code == 0);
  int answered = 0, ib_missing = 0;
  for (const auto& r : run.records) {
    if (!r.has_finding()) continue;
    const auto& f = r.finding();
    if (f.check_id() == "monitoring.exporter.node" && f.severity() == cmax::v1::SEVERITY_INFO &&
        !f.not_measured()) {
      ++answered;
    }
    if (f.check_id() == "monitoring.signals.node" && f.severity() == cmax::v1::SEVERITY_WARN &&
        absl::StrContains(f.title(), "InfiniBand port error counters (node_infiniband_*)")) {
      ++ib_missing;
    }
  }
  CHECK(answered == 1);
  CHECK(ib_missing == 1);
}

TEST_CASE("monitoring: the binary's exit codes, and could-not-run records are not measured in "
          "the scorecard", "[monitoring]") {
  const int port = FreePort();
  auto down = cmax::testing::RunSuite(
      "cmax-bench",
      {"monitoring", "--jsonl", "--root", Fixture("lost"), "--exporters",
       absl::StrCat("dcgm:", port)},
      30s, {{"CMAX_EXPORTER_PORTS", absl::StrCat(port)}});
  CHECK(down.exit_code == 1);
  auto bad = cmax::testing::RunSuite(
      "cmax-bench", {"monitoring", "--jsonl", "--exporters", "dcgm:none"}, 30s);
  CHECK(bad.exit_code == 2);
  REQUIRE(bad.records.size() == 1);
  CHECK(bad.records[0].finding().not_measured());

  // Only could-not-run records: Monitoring is not measured, never a grade.
  cmax::reports::RunData data;
  data.nodes = {"node-1"};
  cmax::v1::TaskInfo t;
  t.set_task_id("t1");
  t.set_suite("monitoring");
  t.set_node("node-1");
  t.set_state(cmax::v1::TASK_FAILED);
  t.set_exit_code(2);
  t.set_attempt(1);
  data.tasks.push_back(t);
  for (const auto& r : bad.records) {
    cmax::v1::ExportedRecord er;
    er.set_task_id("t1");
    er.set_attempt(1);
    er.set_node("node-1");
    er.set_suite("monitoring");
    *er.mutable_record() = r;
    data.records.push_back(er);
  }
  auto card = cmax::reports::BuildScorecard(data);
  bool seen = false;
  for (const auto& c : card.categories()) {
    if (c.name() != "Monitoring") continue;
    seen = true;
    CHECK_FALSE(c.measured());
    CHECK(c.grade() == "not measured");
  }
  CHECK(seen);
}

TEST_CASE("monitoring: an exporter that asks for a token answers, its signals are not measured",
          "[monitoring]") {
  // A loopback listener that answers every request 401, as cmax's own
  // /metrics does without its read token.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  REQUIRE(listen(fd, 4) == 0);
  std::thread server([fd] {
    int c = accept(fd, nullptr, nullptr);
    if (c < 0) return;
    char buf[1024];
    (void)recv(c, buf, sizeof(buf), 0);
    const char* reply = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n";
    (void)send(c, reply, std::strlen(reply), MSG_NOSIGNAL);
    close(c);
  });
  cmax::monitoring::Options o;
  o.root = Fixture("lost");
  o.exporters = {{"node", ntohs(a.sin_port)}};
  o.scrape = FileScraper({});
  auto checks = cmax::monitoring::RunChecks(o);
  server.join();
  close(fd);
  const Check& e = Find(checks, "monitoring.exporter.node");
  CHECK(e.status == Status::kPass);
  CHECK(absl::StrContains(e.title, "(it needs a token)"));
  REQUIRE(e.evidence.size() == 1);
  CHECK(absl::StrContains(e.evidence[0], "HTTP status: HTTP/1.1 401 Unauthorized"));
  CHECK(Find(checks, "monitoring.signals.node").status == Status::kNotMeasured);
}

TEST_CASE("monitoring: a port that is no exporter's is refused unless the node's operator "
          "allows it", "[monitoring][security]") {
  // sshd's port: a plan naming it would learn which nodes answer there.
  auto refused = cmax::testing::RunSuite(
      "cmax-bench", {"monitoring", "--jsonl", "--exporters", "dcgm:9400,probe:22"}, 30s);
  CHECK(refused.exit_code == 2);
  INFO(refused.err);
  CHECK(absl::StrContains(refused.err,
                          "port 22 ('probe:22') is not an exporter port this node allows "
                          "(9100,9400,9464)"));
  CHECK(absl::StrContains(refused.err, "--allow-exporter-ports"));
  // Allowed by the operator (a free port: nothing answers, the check warns).
  const int port = FreePort();
  auto allowed = cmax::testing::RunSuite(
      "cmax-bench",
      {"monitoring", "--jsonl", "--root", Fixture("kept"), "--exporters",
       absl::StrCat("probe:", port)},
      30s, {{"CMAX_EXPORTER_PORTS", absl::StrCat("9999,", port)}});
  CHECK(allowed.exit_code != 2);
  bool probed = false;
  for (const auto& r : allowed.records) {
    probed |= r.has_finding() && r.finding().check_id() == "monitoring.exporter.probe";
  }
  CHECK(probed);
}
