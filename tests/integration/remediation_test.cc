// The fault loop end to end with real processes (issue 47): an agent whose
// root is the healthy H100 fixture (tests/fixtures/health/healthy) watches it
// between runs; the test stops a unit there (the fixture's unit states,
// cmax-fixture/units) and the coordinator, under an enforce policy with a
// Slurm fence, fences the node (a stand-in scontrol that keeps the node's
// state in a file), collects evidence and restarts the unit on the node
// (stand-in journalctl and systemctl first on the agent's PATH: nothing on
// this machine is restarted), and verifies with a run of health and a short
// burn-in. This machine has no GPU, so the GPU burn-in cannot run: the
// verify run's verdict is "warn", which is not a pass, and the node is
// escalated, fenced, not returned. An admin's approve then returns it and
// cmax lifts its own drain. Under dry-run the same signal changes nothing.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cmax/v1/incident.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/cluster.h"

using cmax::testing::Cluster;
using cmax::testing::ClusterOptions;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteExecutable(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                         fs::perms::others_read | fs::perms::others_exec);
}

void Units(const fs::path& root, const std::string& active, const std::string& result) {
  std::ofstream(root / "cmax-fixture/units")
      << "Id=nvidia-fabricmanager.service\nLoadState=loaded\nActiveState=" << active
      << "\nSubState=" << (active == "active" ? "running" : "failed") << "\nResult=" << result
      << "\n";
}

// The node's root (the healthy fixture) and the stand-in programs, in a
// temporary folder removed at the end.
struct Site {
  fs::path dir, root, bin;
  Site() {
    char tmpl[] = "/tmp/cmax-rem-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
    root = dir / "root";
    bin = dir / "bin";
    fs::copy(fs::path(Cluster::SourceDir()) / "tests/fixtures/health/healthy", root,
             fs::copy_options::recursive);
    fs::create_directories(bin);
    Units(root, "active", "success");
    const std::string calls = (dir / "calls.log").string();
    const std::string units = (root / "cmax-fixture/units").string();
    // systemctl restart -- UNIT brings the unit back in the fixture; is-active says so.
    WriteExecutable(bin / "systemctl", absl::StrCat(
        "#!/bin/sh\necho \"systemctl $*\" >> ", calls, "\n",
        "case \"$1\" in\n",
        "  restart) printf 'Id=%s\\nLoadState=loaded\\nActiveState=active\\nSubState=running\\n"
        "Result=success\\n' \"$3\" > ", units, ";;\n",
        "  is-active) echo active;;\n",
        "esac\nexit 0\n"));
    WriteExecutable(bin / "journalctl", absl::StrCat(
        "#!/bin/sh\necho \"journalctl $*\" >> ", calls, "\n",
        "echo '2026-12-07T10:00:00+0000 node-0 systemd[1]: nvidia-fabricmanager.service: Failed'\n"));
    // scontrol show node N -o / update NodeName=N State=DRAIN|RESUME Reason=...
    const std::string state = (dir / "slurm-state").string();
    std::ofstream(state) << "IDLE\n";
    WriteExecutable(bin / "scontrol", absl::StrCat(
        "#!/bin/sh\necho \"scontrol $*\" >> ", calls, "\n",
        "if [ \"$1\" = show ]; then\n",
        "  s=$(head -n1 ", state, "); r=$(sed -n 2p ", state, ")\n",
        "  echo \"NodeName=$3 Arch=x86_64 CoresPerSocket=8 State=$s ThreadsPerCore=1 "
        "Reason=${r:-(null)}\"\n",
        "  exit 0\nfi\n",
        "case \"$3\" in\n",
        "  State=DRAIN) r=$(echo \"$4\" | sed 's/^Reason=//'); printf 'IDLE+DRAIN\\n%s [root@2026-12-07T10:00:00]\\n' \"$r\" > ",
        state, ";;\n",
        "  State=RESUME) echo IDLE > ", state, ";;\n",
        "esac\nexit 0\n"));
  }
  ~Site() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string Calls() const { return ReadAll(dir / "calls.log"); }
  std::string Policy(const std::string& mode) const {
    fs::path p = dir / "policy.yaml";
    std::ofstream(p) << "mode: " << mode << "\n"
                     << "fence: slurm\n"
                     << "allow_units: [nvidia-fabricmanager.service]\n"
                     << "rules:\n"
                     << "  - match: {check: \"watch.service.*\"}\n"
                     << "    steps: [collect, {restart_unit: nvidia-fabricmanager.service}, verify]\n";
    return p.string();
  }
};

ClusterOptions Options(const Site& site, const std::string& mode) {
  ClusterOptions o;
  o.agents = 1;
  o.agent_roots = {site.root.string()};
  o.agent_env = {{"PATH", absl::StrCat(site.bin.string(), ":/usr/bin:/bin")}};
  o.agent_args = {"--watch-services", "nvidia-fabricmanager.service", "--watch-interval", "0.3",
                  "--remediation-units", "nvidia-fabricmanager.service"};
  o.coordinator_args = {"--remediation-policy", site.Policy(mode), "--scontrol",
                        (site.bin / "scontrol").string()};
  return o;
}

cmax::v1::RemediationStatus Status(Cluster& c) {
  auto r = c.Ctl({"remediation", "status", "--all", "--json"});
  REQUIRE(r.exit.code == 0);
  cmax::v1::RemediationStatus st;
  REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &st).ok());
  return st;
}

// Polls until the only incident is in `state` (bounded).
cmax::v1::RemediationIncident WaitFor(Cluster& c, cmax::v1::IncidentState state,
                                      std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  cmax::v1::RemediationStatus st;
  while (std::chrono::steady_clock::now() < end) {
    st = Status(c);
    if (st.incidents_size() == 1 && st.incidents(0).state() == state) return st.incidents(0);
    std::this_thread::sleep_for(300ms);
  }
  FAIL("no incident reached " << cmax::v1::IncidentState_Name(state) << "; status: "
                              << st.DebugString());
  return {};
}

const cmax::v1::IncidentStep& StepOf(const cmax::v1::RemediationIncident& i,
                                     const std::string& kind) {
  for (const auto& s : i.steps()) {
    if (s.kind() == kind) return s;
  }
  FAIL("no step " << kind << " in " << i.DebugString());
  return i.steps(0);
}

}  // namespace

TEST_CASE("a stopped unit is caught, fenced, restarted and verified, and not measured is not a pass",
          "[integration][remediation]") {
  Site site;
  Cluster c("cmax-rem", Options(site, "enforce"));
  REQUIRE(c.Start().ok());
  REQUIRE(c.WaitForAgents(1, "connected", 30s).ok());
  std::this_thread::sleep_for(1s);  // the watch's first snapshot: the unit active
  Units(site.root, "failed", "exit-code");

  cmax::v1::RemediationIncident inc = WaitFor(c, cmax::v1::INCIDENT_ESCALATED, 180s);
  CHECK(inc.node() == c.node(0));
  CHECK(inc.check_id() == "watch.service.failed");
  CHECK_FALSE(inc.dry_run());
  // Each phase is a measured figure.
  CHECK(inc.signal_unix_ns() > 0);
  CHECK(inc.detected_unix_ns() >= inc.signal_unix_ns());
  CHECK(inc.detected_unix_ns() - inc.signal_unix_ns() < 10'000'000'000);
  CHECK(inc.quarantined_unix_ns() >= inc.detected_unix_ns());
  CHECK(inc.fence_ours());
  CHECK(StepOf(inc, "fence").outcome() == "done");
  const auto& collect = StepOf(inc, "collect");
  CHECK(collect.outcome() == "done");
  bool kernel_log = false;
  for (const auto& a : collect.artifacts()) kernel_log |= a.name() == "kernel-log.txt";
  CHECK(kernel_log);
  CHECK(StepOf(inc, "restart_unit").outcome() == "done");
  // The unit is back on the node: restarted there, by argv.
  CHECK(absl::StrContains(ReadAll(site.root / "cmax-fixture/units"), "ActiveState=active"));
  const std::string calls = site.Calls();
  CHECK(absl::StrContains(calls, "systemctl restart -- nvidia-fabricmanager.service"));
  CHECK(absl::StrContains(calls, "State=DRAIN Reason=cmax fence: inc-"));
  // The verify run ran on this node; its GPU burn-in could not run here, so
  // the verdict is warn, not pass: escalated, still drained.
  const auto& verify = StepOf(inc, "verify");
  CHECK(verify.outcome() == "failed");
  CHECK(absl::StrContains(verify.message(), "verdict is warn"));
  CHECK_FALSE(inc.verify_run_id().empty());
  CHECK_FALSE(absl::StrContains(calls, "State=RESUME"));
  CHECK(absl::StartsWith(ReadAll(site.dir / "slurm-state"), "IDLE+DRAIN"));

  // The text a person reads says the timings and the steps.
  auto text = c.Ctl({"remediation", "status", "--all"});
  CHECK(absl::StrContains(text.out, "detect "));
  CHECK(absl::StrContains(text.out, "restart nvidia-fabricmanager.service"));

  // An admin returns it; cmax lifts the drain it set.
  auto approve = c.Ctl({"remediation", "approve", inc.incident_id()});
  CHECK(approve.exit.code == 0);
  inc = WaitFor(c, cmax::v1::INCIDENT_RETURNED, 30s);
  CHECK(absl::StrContains(site.Calls(), "State=RESUME"));
  CHECK(ReadAll(site.dir / "slurm-state") == "IDLE\n");

  // What the store kept is on /metrics too.
  auto metrics = c.Ctl({"remediation", "status", "--node", c.node(0), "--all", "--json"});
  CHECK(absl::StrContains(metrics.out, inc.incident_id()));
}

TEST_CASE("under dry-run the same signal is planned and nothing is done on any node",
          "[integration][remediation]") {
  Site site;
  Cluster c("cmax-remd", Options(site, "dry-run"));
  REQUIRE(c.Start().ok());
  REQUIRE(c.WaitForAgents(1, "connected", 30s).ok());
  std::this_thread::sleep_for(1s);
  Units(site.root, "failed", "exit-code");
  cmax::v1::RemediationIncident inc = WaitFor(c, cmax::v1::INCIDENT_PLANNED, 60s);
  CHECK(inc.plan() == "collect → restart nvidia-fabricmanager.service → verify");
  std::this_thread::sleep_for(2s);
  CHECK(site.Calls().empty());  // no scontrol, no systemctl, no journalctl
  CHECK(ReadAll(site.dir / "slurm-state") == "IDLE\n");
  CHECK(Status(c).incidents(0).state() == cmax::v1::INCIDENT_PLANNED);
  auto dismiss = c.Ctl({"remediation", "dismiss", inc.incident_id()});
  CHECK(dismiss.exit.code == 0);
  CHECK(Status(c).incidents(0).state() == cmax::v1::INCIDENT_DISMISSED);
}
