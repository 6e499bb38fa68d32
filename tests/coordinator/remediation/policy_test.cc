// The remediation policy (coordinator/remediation/policy.h): a good policy
// reads back whole; each bad input is refused with its line.
#include "coordinator/remediation/policy.h"

#include <catch2/catch.hpp>
#include <string>

#include "tests/scratch_dir.h"

namespace cmax::remediation {
namespace {

const char kGood[] = R"(mode: enforce
level: warn
fence: kubernetes
kubeconfig: /etc/cmax/kubeconfig
taint: cmax.io/quarantined
breaker: {max_nodes: 2, max_percent: 10}
flap: {count: 3, window: 1h30m}
allow_units: [nvidia-fabricmanager.service, nvidia-persistenced.service, nvidia-imex.service, nvidia-dcgm.service]
escalate: {webhook: "https://pager.example.com/hook", command: ["/usr/local/bin/page-oncall", "--team", "gpu"]}
rules:
  - match: {check: "watch.xid", xid: [79, 48]}
    steps: [collect, reset_gpu, verify]
  - match: {check: "watch.service.*"}
    steps: [collect, {restart_unit: nvidia-fabricmanager.service}, verify]
  - match: {check: "watch.fs.*", suite: health}
    steps: [collect, escalate]
  - match: {check: "watch.gpu.lost"}
    steps: [collect, {reset_gpu: 3}, reboot, verify, escalate]
)";

// The message of ParsePolicy(yaml)'s error; "" when it parsed.
std::string Refusal(const std::string& yaml) {
  auto p = ParsePolicy(yaml, "p.yaml");
  if (p.ok()) return "";
  CHECK(p.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(p.status().message());
}

TEST_CASE("A good policy reads back whole", "[remediation]") {
  auto p = ParsePolicy(kGood, "good.yaml");
  REQUIRE(p.ok());
  CHECK(p->mode == Mode::kEnforce);
  CHECK(p->level == v1::SEVERITY_WARN);
  CHECK(p->fence == FenceKind::kKubernetes);
  CHECK(p->kubeconfig == "/etc/cmax/kubeconfig");
  CHECK(p->taint == "cmax.io/quarantined");
  CHECK(p->breaker.max_nodes == 2);
  CHECK(p->breaker.max_percent == 10);
  CHECK(p->flap.count == 3);
  CHECK(p->flap.window == absl::Minutes(90));
  CHECK(p->allow_units.size() == 4);
  CHECK(p->escalate.webhook == "https://pager.example.com/hook");
  CHECK(p->escalate.command ==
        std::vector<std::string>{"/usr/local/bin/page-oncall", "--team", "gpu"});
  REQUIRE(p->rules.size() == 4);
  CHECK(p->rules[0].line == 11);
  CHECK(p->rules[0].match.xids == std::vector<int>{79, 48});
  CHECK(p->rules[2].match.suite == "health");
  CHECK(p->rules[1].steps[1].kind == StepKind::kRestartUnit);
  CHECK(p->rules[1].steps[1].unit == "nvidia-fabricmanager.service");
  CHECK(p->rules[3].steps[1].gpu_index == 3);
  CHECK(p->rules[0].steps[1].gpu_index == -1);
  CHECK(DescribeSteps(p->rules[1]) ==
        "collect \u2192 restart nvidia-fabricmanager.service \u2192 verify");
  CHECK(DescribeSteps(p->rules[3]) ==
        "collect \u2192 reset GPU 3 \u2192 reboot \u2192 verify \u2192 escalate");
}

TEST_CASE("An empty policy is the safe defaults", "[remediation]") {
  auto p = ParsePolicy("", "empty.yaml");
  REQUIRE(p.ok());
  CHECK(p->mode == Mode::kDryRun);
  CHECK(p->level == v1::SEVERITY_FAIL);
  CHECK(p->fence == FenceKind::kNone);
  CHECK(p->taint == "cmax.io/quarantined");
  CHECK(p->flap.count == 2);
  CHECK(p->flap.window == absl::Hours(24));
  CHECK(p->rules.empty());
  auto q = ParsePolicy("mode: enforce\n", "q.yaml");
  REQUIRE(q.ok());
  CHECK(q->mode == Mode::kEnforce);
}

TEST_CASE("Match takes the first rule that fits by check and Xid and suite",
          "[remediation]") {
  auto p = ParsePolicy(kGood, "good.yaml");
  REQUIRE(p.ok());
  FindingKey xid{"watch.xid", "watch", 79, v1::SEVERITY_CRITICAL};
  REQUIRE(p->Match(xid) == &p->rules[0]);
  xid.xid = 31;
  CHECK(p->Match(xid) == nullptr);
  xid.xid.reset();
  CHECK(p->Match(xid) == nullptr);
  CHECK(p->Match({"watch.service.fabricmanager", "", std::nullopt, v1::SEVERITY_FAIL}) ==
        &p->rules[1]);
  CHECK(p->Match({"watch.servicex", "", std::nullopt, v1::SEVERITY_FAIL}) == nullptr);
  CHECK(p->Match({"watch.fs.readonly", "health", std::nullopt, v1::SEVERITY_FAIL}) ==
        &p->rules[2]);
  CHECK(p->Match({"watch.fs.readonly", "audit", std::nullopt, v1::SEVERITY_FAIL}) ==
        nullptr);
  CHECK(p->Match({"watch.gpu.lost", "", std::nullopt, v1::SEVERITY_FAIL}) ==
        &p->rules[3]);
  CHECK(p->Match({"watch.gpu.lost.x", "", std::nullopt, v1::SEVERITY_FAIL}) == nullptr);
}

TEST_CASE("Severity opens an incident at or above the policy's level", "[remediation]") {
  CHECK(SeverityAtOrAbove(v1::SEVERITY_FAIL, v1::SEVERITY_FAIL));
  CHECK(SeverityAtOrAbove(v1::SEVERITY_CRITICAL, v1::SEVERITY_FAIL));
  CHECK_FALSE(SeverityAtOrAbove(v1::SEVERITY_WARN, v1::SEVERITY_FAIL));
  CHECK_FALSE(SeverityAtOrAbove(v1::SEVERITY_UNSPECIFIED, v1::SEVERITY_WARN));
  Policy policy;
  CHECK(OpensIncident(policy, {"x", "", std::nullopt, v1::SEVERITY_FAIL}));
  CHECK_FALSE(OpensIncident(policy, {"x", "", std::nullopt, v1::SEVERITY_INFO}));
}

TEST_CASE("ValidateAgainstNode refuses a GPU index the node lacks with the line",
          "[remediation]") {
  auto p = ParsePolicy(kGood, "good.yaml");
  REQUIRE(p.ok());
  CHECK(ValidateAgainstNode(*p, 8).ok());
  CHECK(ValidateAgainstNode(*p, 4).ok());
  const absl::Status s = ValidateAgainstNode(*p, 2);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()) ==
        "good.yaml:18: rule 'watch.gpu.lost' resets GPU 3, but the node has 2 GPUs");
}

TEST_CASE("Bad policies are refused with file and line and reason", "[remediation]") {
  const std::string head = "fence: slurm\nallow_units: [nvidia-fabricmanager.service]\n";
  struct Bad {
    std::string yaml;
    // A part of the message: "p.yaml:LINE:COLUMN: reason". The columns are
    // yaml-cpp's marks, which inside flow collections ([...], {...}) may
    // sit a character or two off; the lines are exact.
    std::string want;
  };
  const Bad cases[] = {
      {"mode: enforced\n", "p.yaml:1:7: mode 'enforced' must be dry-run or enforce"},
      {"level: info\n", "p.yaml:1:8: level 'info' must be warn, fail or critical"},
      {"fence: lsf\n", "p.yaml:1:8: fence 'lsf'"},
      {"mode: enforce\nbogus: 1\n", "p.yaml:2:1: unknown key 'bogus' in the policy"},
      {"fence: kubernetes\n", "p.yaml:1:8: fence: kubernetes needs kubeconfig"},
      {"fence: kubernetes\nkubeconfig: etc/kc\n",
       "p.yaml:2:13: kubeconfig 'etc/kc' must be an absolute path"},
      {"taint: Bad_Prefix/x\n",
       "p.yaml:1:8: taint 'Bad_Prefix/x' is not a Kubernetes label key"},
      {"breaker: {max_nodes: 2, max_percent: 101}\n", "p.yaml:1:38: breaker.max_percent"},
      {"breaker: {max_nodes: 2, max_percent: 0}\n", "p.yaml:1:38: breaker.max_percent"},
      {"breaker: {max_nodes: 2, max_percent: -5}\n", "p.yaml:1:38:"},
      {"breaker: {max_node: 2}\n", "p.yaml:1:11: unknown key 'max_node' in breaker"},
      {"flap: {count: 2, window: 24 hours}\n",
       "p.yaml:1:26: flap.window '24 hours' must be a duration"},
      {"flap: {count: 2, window: 0s}\n", "p.yaml:1:26: flap.window '0s'"},
      {"flap: {count: 2, window: -1h}\n", "p.yaml:1:26: flap.window '-1h'"},
      {"flap:\n  count: 2\n  window: 24\n", "p.yaml:3:11: flap.window '24'"},
      {"allow_units: [\"nvidia-fabricmanager\"]\n",
       "p.yaml:1:15: 'nvidia-fabricmanager' is not a systemd unit name"},
      {"allow_units: [\"-x.service\"]\n",
       "p.yaml:1:15: '-x.service' is not a systemd unit name"},
      {"escalate: {command: [page-oncall]}\n",
       "p.yaml:1:22: escalate.command's program 'page-oncall' must be an absolute path"},
      {"escalate: {webhook: \"ftp://x\"}\n",
       "p.yaml:1:21: escalate.webhook must be an http(s) URL: it is not an http:// or https:// URL"},
      {"escalate: {webhook: \"https://:tok@/x\"}\n",
       "p.yaml:1:21: escalate.webhook must be an http(s) URL: it has no host name or address"},
      {"escalate: {webhook: \"http://h:99999/x\"}\n",
       "p.yaml:1:21: escalate.webhook must be an http(s) URL: its port is not 1..65535"},
      {"escalate: {sms: 1}\n", "p.yaml:1:12: unknown key 'sms' in escalate"},
      {head + "rules:\n  - match: {check: watch.xid}\n",
       "p.yaml:4:5: rule 'watch.xid' has no steps"},
      {head + "rules:\n  - match: {check: watch.xid}\n    steps: []\n",
       "p.yaml:5:12: rule 'watch.xid' has no steps"},
      {head + "rules:\n  - match: {check: watch.xid}\n    steps: [collect, fix_it]\n",
       "p.yaml:5:22: unknown action 'fix_it'"},
      {head +
           "rules:\n  - match: {check: watch.xid}\n    steps: [collect, {drain_it: 1}]\n",
       "p.yaml:5:23: unknown action 'drain_it'"},
      {head + "rules:\n  - match: {check: w}\n    steps:\n      - collect\n      - "
              "restart_unit: sshd.service\n",
       "p.yaml:7:23: unit 'sshd.service' is not in allow_units "
       "(nvidia-fabricmanager.service)"},
      {head + "rules:\n  - match: {check: w}\n    steps: [{restart_unit: \"a "
              "b.service\"}]\n",
       "p.yaml:5:28: 'a b.service' is not a systemd unit name"},
      {head + "rules:\n  - match: {check: w}\n    steps: [restart_unit]\n",
       "p.yaml:5:13: restart_unit needs a unit"},
      {head +
           "rules:\n  - match: {check: w}\n    steps: [collect, escalate, reset_gpu]\n",
       "p.yaml:5:32: rule 'w': 'reset_gpu' after escalate"},
      {head + "rules:\n  - match: {check: w}\n    steps: [escalate, {restart_unit: "
              "nvidia-fabricmanager.service}]\n",
       "p.yaml:5:23: rule 'w': 'restart_unit' after escalate"},
      {head + "rules:\n  - match: {check: w}\n    steps: [{reset_gpu: 64}]\n",
       "p.yaml:5:25: reset_gpu's GPU index '64' must be a whole number in [0, 63]"},
      {head + "rules:\n  - match: {check: w, xid: [79, x]}\n    steps: [collect]\n",
       "p.yaml:4:33: an Xid 'x'"},
      {head + "rules:\n  - match: {check: \"w*x\"}\n    steps: [collect]\n",
       "p.yaml:4:20: match.check 'w*x'"},
      {head + "rules:\n  - match: {suite: health}\n    steps: [collect]\n",
       "p.yaml:4:12: match needs check"},
      {head + "rules:\n  - match: {check: w}\n    steps: [collect]\n    when: always\n",
       "p.yaml:6:5: unknown key 'when' in a rule"},
      {"rules:\n  - match: {check: w}\n    steps: [collect, reboot, verify]\n",
       "p.yaml:2:5: rule 'w' reboots, which needs fence: slurm or kubernetes"},
      {"mode: [enforce\n", "p.yaml:2:1:"},
  };
  for (const Bad& bad : cases) {
    INFO(bad.yaml);
    const std::string message = Refusal(bad.yaml);
    CHECK_THAT(message, Catch::Contains(bad.want));
  }
}

TEST_CASE("LoadPolicy reads a file and names it in errors", "[remediation]") {
  testing::ScratchDir dir;
  const std::string path = dir.path + "/remediation.yaml";
  testing::WriteFileWithMode(path, kGood, 0644);
  auto p = LoadPolicy(path);
  REQUIRE(p.ok());
  CHECK(p->source == path);
  CHECK(p->rules.size() == 4);
  testing::WriteFileWithMode(path, "mode: maybe\n", 0644);
  auto bad = LoadPolicy(path);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::StartsWith(path + ":1:7: "));
  CHECK(LoadPolicy(dir.path + "/missing.yaml").status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("Unit names and label keys are checked by their grammar", "[remediation]") {
  CHECK(IsValidUnitName("nvidia-fabricmanager.service"));
  CHECK(IsValidUnitName("getty@tty1.service"));
  CHECK(IsValidUnitName("dev-sda1.mount"));
  CHECK_FALSE(IsValidUnitName("nvidia-fabricmanager"));
  CHECK_FALSE(IsValidUnitName(".service"));
  CHECK_FALSE(IsValidUnitName("-rf.service"));
  CHECK_FALSE(IsValidUnitName("a;b.service"));
  CHECK_FALSE(IsValidUnitName("a@b@c.service"));
  CHECK_FALSE(IsValidUnitName("x.exe"));
  CHECK_FALSE(IsValidUnitName("getty@.service"));  // a template, no instance
  CHECK_FALSE(IsValidUnitName("dev-sda.device"));  // not a type a policy names
  CHECK(IsValidLabelKey("cmax.io/quarantined"));
  CHECK(IsValidLabelKey("quarantined"));
  CHECK_FALSE(IsValidLabelKey("cmax.io/"));
  CHECK_FALSE(IsValidLabelKey("/x"));
  CHECK_FALSE(IsValidLabelKey("CMAX.io/x"));
  CHECK_FALSE(IsValidLabelKey("cmax.io/-x"));
  CHECK_FALSE(IsValidLabelKey(std::string(64, 'a')));
}

}  // namespace
}  // namespace cmax::remediation
