// The fault loop's state machine (coordinator/remediation/incidents.h) with a
// fake fencer and a fake core: dry-run changes nothing, the breaker holds
// at max_nodes, a flapping node is escalated, an operator's drain is left
// alone, a result from another node is refused, and the full path
// fence → restart → verify → return is timed.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/remediation/incidents.h"

namespace cmax::remediation {
namespace {

constexpr int64_t kSec = 1'000'000'000;

struct FakeFence : Fencer {
  std::map<std::string, FenceHolder> held;  // shared with the test (worker thread)
  std::vector<std::string> calls;
  absl::Mutex mu;
  std::string Name() const override { return "fake"; }
  absl::StatusOr<FenceState> Inspect(const std::string& node) override {
    absl::MutexLock l(&mu);
    FenceState s;
    s.holder = held[node];
    return s;
  }
  absl::Status Fence(const std::string& node, const std::string& reason) override {
    absl::MutexLock l(&mu);
    calls.push_back(absl::StrCat("fence ", node));
    if (held[node] == FenceHolder::kOperator) {
      return absl::AlreadyExistsError("held by operator: maintenance");
    }
    held[node] = FenceHolder::kCmax;
    return absl::OkStatus();
  }
  absl::Status Lift(const std::string& node) override {
    absl::MutexLock l(&mu);
    calls.push_back(absl::StrCat("lift ", node));
    if (held[node] == FenceHolder::kOperator) return absl::FailedPreconditionError("not ours");
    held[node] = FenceHolder::kNone;
    return absl::OkStatus();
  }
  std::vector<std::string> Calls() {
    absl::MutexLock l(&mu);
    return calls;
  }
};

struct FakeCore : IncidentHooks {
  int fleet = 10;
  std::vector<std::pair<std::string, v1::RemediationAction>> sent;
  std::vector<std::string> verify_runs;
  std::map<std::string, v1::RemediationIncident> stored;
  int FleetSize() override { return fleet; }
  bool Connected(const std::string&) override { return true; }
  int GpuCount(const std::string&) override { return 8; }
  bool SendAction(const std::string& node, const v1::RemediationAction& a) override {
    sent.emplace_back(node, a);
    return true;
  }
  absl::StatusOr<std::string> StartVerifyRun(const std::string& node, const std::string&) override {
    verify_runs.push_back(absl::StrCat("run-", verify_runs.size() + 1));
    return verify_runs.back();
  }
  void Persist(const v1::RemediationIncident& i) override { stored[i.incident_id()] = i; }
};

Policy MustParse(const std::string& yaml) {
  auto p = ParsePolicy(yaml, "test.yaml");
  REQUIRE(p.ok());
  return *p;
}

v1::Finding Finding(const std::string& check, v1::Severity sev = v1::SEVERITY_FAIL) {
  v1::Finding f;
  f.set_check_id(check);
  f.set_severity(sev);
  f.set_title(check);
  f.set_suite("watch");
  return f;
}

// Ticks until the worker's fence and lift results are taken (bounded).
void Settle(IncidentManager& m, int64_t now) {
  for (int i = 0; i < 400; ++i) {
    m.Tick(now);
    if (m.WorkerIdle()) {
      m.Tick(now);
      return;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  FAIL("the incident worker did not settle");
}

const char kEnforce[] = R"(mode: enforce
fence: slurm
breaker: {max_nodes: 1, max_percent: 100}
flap: {count: 2, window: 1h}
allow_units: [nvidia-fabricmanager.service]
rules:
  - match: {check: "watch.service.*"}
    steps: [collect, {restart_unit: nvidia-fabricmanager.service}, verify]
)";

TEST_CASE("dry-run plans the steps and changes nothing on any node") {
  FakeCore core;
  auto fence = std::make_unique<FakeFence>();
  FakeFence* f = fence.get();
  IncidentManager m(&core, MustParse(std::string(kEnforce).replace(0, 13, "mode: dry-run")),
                    std::move(fence));
  m.OnFinding("n1", Finding("watch.service.failed"), 5 * kSec, 6 * kSec);
  Settle(m, 6 * kSec);
  REQUIRE(m.incidents().size() == 1);
  const v1::RemediationIncident& inc = m.incidents().begin()->second;
  CHECK(inc.state() == v1::INCIDENT_PLANNED);
  CHECK(inc.dry_run());
  CHECK(inc.plan() == "collect → restart nvidia-fabricmanager.service → verify");
  for (const auto& s : inc.steps()) CHECK(s.outcome() == "planned");
  CHECK(f->Calls().empty());
  CHECK(core.sent.empty());
  CHECK(core.verify_runs.empty());
  CHECK(core.stored.count(inc.incident_id()) == 1);
  // A finding below the policy's level opens nothing.
  m.OnFinding("n2", Finding("watch.service.failed", v1::SEVERITY_WARN), 5 * kSec, 6 * kSec);
  CHECK(m.incidents().size() == 1);
}

TEST_CASE("enforce: fence, restart, verify, return, each step timed") {
  FakeCore core;
  auto fence = std::make_unique<FakeFence>();
  FakeFence* f = fence.get();
  IncidentManager m(&core, MustParse(kEnforce), std::move(fence));
  m.OnFinding("n1", Finding("watch.service.failed"), 10 * kSec, 11 * kSec);
  Settle(m, 12 * kSec);
  REQUIRE(core.sent.size() == 1);
  CHECK(core.sent[0].first == "n1");
  CHECK(core.sent[0].second.kind() == v1::REMEDIATION_COLLECT);
  const std::string id = core.sent[0].second.incident_id();
  v1::RemediationResult r;
  r.set_incident_id(id);
  r.set_step(core.sent[0].second.step());
  r.set_ok(true);
  m.OnResult("n1", r, 13 * kSec);
  REQUIRE(core.sent.size() == 2);
  CHECK(core.sent[1].second.kind() == v1::REMEDIATION_RESTART_UNIT);
  CHECK(core.sent[1].second.unit() == "nvidia-fabricmanager.service");
  r.set_step(core.sent[1].second.step());
  m.OnResult("n1", r, 14 * kSec);
  REQUIRE(core.verify_runs.size() == 1);
  CHECK(m.incidents().at(id).state() == v1::INCIDENT_VERIFYING);
  m.OnRunEnded(core.verify_runs[0], {{"n1", {"pass", ""}}}, 40 * kSec);
  Settle(m, 41 * kSec);
  const v1::RemediationIncident& inc = m.incidents().at(id);
  CHECK(inc.state() == v1::INCIDENT_RETURNED);
  CHECK(f->Calls() == std::vector<std::string>{"fence n1", "lift n1"});
  IncidentTimings t = TimingsOf(inc);
  CHECK(t.detect_s == Approx(1.0));
  CHECK(t.quarantine_s == Approx(1.0));
  CHECK(t.repair_s == Approx(30.0));
}

TEST_CASE("a verify run whose verdict is warn (something not measured) escalates, never returns") {
  FakeCore core;
  auto fence = std::make_unique<FakeFence>();
  FakeFence* f = fence.get();
  IncidentManager m(&core, MustParse(kEnforce), std::move(fence));
  m.OnFinding("n1", Finding("watch.service.failed"), 10 * kSec, 11 * kSec);
  Settle(m, 12 * kSec);
  for (int i = 0; i < 2; ++i) {
    v1::RemediationResult r;
    r.set_incident_id(core.sent.back().second.incident_id());
    r.set_step(core.sent.back().second.step());
    r.set_ok(true);
    m.OnResult("n1", r, 13 * kSec);
  }
  REQUIRE(core.verify_runs.size() == 1);
  m.OnRunEnded(core.verify_runs[0], {{"n1", {"warn", "burnin not measured: no GPU"}}}, 20 * kSec);
  Settle(m, 21 * kSec);
  const v1::RemediationIncident& inc = m.incidents().begin()->second;
  CHECK(inc.state() == v1::INCIDENT_ESCALATED);
  CHECK(inc.reason().find("verdict is warn (burnin not measured: no GPU)") != std::string::npos);
  CHECK(f->Calls() == std::vector<std::string>{"fence n1"});  // still fenced
}

TEST_CASE("a result sent by one node about another node's incident changes nothing") {
  FakeCore core;
  IncidentManager m(&core, MustParse(kEnforce), std::make_unique<FakeFence>());
  m.OnFinding("n1", Finding("watch.service.failed"), 10 * kSec, 11 * kSec);
  Settle(m, 12 * kSec);
  REQUIRE(core.sent.size() == 1);
  v1::RemediationResult r;
  r.set_incident_id(core.sent[0].second.incident_id());
  r.set_step(core.sent[0].second.step());
  r.set_ok(false);
  r.set_message("forged");
  m.OnResult("n2", r, 13 * kSec);
  const v1::RemediationIncident& inc = m.incidents().begin()->second;
  CHECK(inc.state() == v1::INCIDENT_REMEDIATING);
  CHECK(core.sent.size() == 1);
}

TEST_CASE("the breaker holds incidents past max_nodes and starts them when one closes") {
  FakeCore core;
  IncidentManager m(&core, MustParse(kEnforce), std::make_unique<FakeFence>());
  m.OnFinding("n1", Finding("watch.service.failed"), 1 * kSec, 2 * kSec);
  m.OnFinding("n2", Finding("watch.service.failed"), 1 * kSec, 2 * kSec);
  Settle(m, 3 * kSec);
  int held = 0;
  std::string held_id;
  for (const auto& [id, inc] : m.incidents()) {
    if (inc.state() == v1::INCIDENT_HELD) {
      ++held;
      held_id = id;
      CHECK(inc.reason().find("breaker open") == 0);
    }
  }
  CHECK(held == 1);
  CHECK(m.Status("", false).breaker_open());
  // n1's step fails: it is escalated (closed), so n2 may start.
  v1::RemediationResult r;
  r.set_incident_id(core.sent[0].second.incident_id());
  r.set_step(core.sent[0].second.step());
  r.set_ok(false);
  r.set_message("journalctl: exit 1");
  m.OnResult("n1", r, 4 * kSec);
  Settle(m, 5 * kSec);
  CHECK(m.incidents().at(held_id).state() == v1::INCIDENT_REMEDIATING);
}

TEST_CASE("a node failing the same way twice within the window is escalated, not returned") {
  FakeCore core;
  IncidentManager m(&core, MustParse(kEnforce), std::make_unique<FakeFence>());
  m.OnFinding("n1", Finding("watch.service.failed"), 1 * kSec, 2 * kSec);
  Settle(m, 2 * kSec);
  std::string first = m.incidents().begin()->first;
  REQUIRE(m.Dismiss(first, "op", 3 * kSec).code() == absl::StatusCode::kFailedPrecondition);
  // Close it as returned: every step ok and a passing verify.
  for (int i = 0; i < 2; ++i) {
    v1::RemediationResult r;
    r.set_incident_id(first);
    r.set_step(core.sent.back().second.step());
    r.set_ok(true);
    m.OnResult("n1", r, (4 + i) * kSec);
  }
  m.OnRunEnded(core.verify_runs.at(0), {{"n1", {"pass", ""}}}, 10 * kSec);
  Settle(m, 11 * kSec);
  REQUIRE(m.incidents().at(first).state() == v1::INCIDENT_RETURNED);
  m.OnFinding("n1", Finding("watch.service.failed"), 100 * kSec, 101 * kSec);
  Settle(m, 102 * kSec);
  REQUIRE(m.incidents().size() == 2);
  for (const auto& [id, inc] : m.incidents()) {
    if (id == first) continue;
    CHECK(inc.state() == v1::INCIDENT_ESCALATED);
    CHECK(inc.plan().find("flapping: failure 2 of watch.service.failed") == 0);
  }
}

TEST_CASE("an operator's drain is left alone: held, never lifted") {
  FakeCore core;
  auto fence = std::make_unique<FakeFence>();
  fence->held["n1"] = FenceHolder::kOperator;
  FakeFence* f = fence.get();
  IncidentManager m(&core, MustParse(kEnforce), std::move(fence));
  m.OnFinding("n1", Finding("watch.service.failed"), 1 * kSec, 2 * kSec);
  Settle(m, 3 * kSec);
  const v1::RemediationIncident& inc = m.incidents().begin()->second;
  CHECK(inc.state() == v1::INCIDENT_HELD);
  CHECK(inc.reason().find("held by operator") == 0);
  CHECK_FALSE(inc.fence_ours());
  CHECK(core.sent.empty());
  CHECK(f->Calls() == std::vector<std::string>{"fence n1"});
}

TEST_CASE("a coordinator restarted mid-remediation escalates what was under way") {
  FakeCore core;
  std::vector<v1::RemediationIncident> stored;
  {
    IncidentManager m(&core, MustParse(kEnforce), std::make_unique<FakeFence>());
    m.OnFinding("n1", Finding("watch.service.failed"), 1 * kSec, 2 * kSec);
    Settle(m, 3 * kSec);
    for (const auto& [id, inc] : core.stored) stored.push_back(inc);
  }
  IncidentManager again(&core, MustParse(kEnforce), std::make_unique<FakeFence>());
  again.Load(stored, 10 * kSec);
  CHECK(again.incidents().begin()->second.state() == v1::INCIDENT_ESCALATED);
}

}  // namespace
}  // namespace cmax::remediation
