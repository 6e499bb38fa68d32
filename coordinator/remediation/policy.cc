#include "coordinator/remediation/policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/severity.h"
#include "common/status_macros.h"
#include "common/systemd_unit.h"
#include "coordinator/remediation/webhook.h"

namespace cmax::remediation {
namespace {

constexpr size_t kMaxPolicyBytes = 1 << 20;
constexpr int kMaxGpuIndex = 63;

bool IsAlnum(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }

// Parses one document; each error names source:line:column of the node at
// fault (plan_parser.cc's way).
class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  absl::StatusOr<Policy> Parse(const std::string& text) {
    try {
      return ParseRoot(YAML::Load(text));
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ":", e.mark.line + 1, ":",
                                                     e.mark.column + 1, ": ", e.msg));
    }
  }

 private:
  absl::Status Error(const YAML::Node& node, const std::string& message) const {
    const YAML::Mark mark = node.Mark();
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ":", mark.line + 1, ":", mark.column + 1, ": ", message));
  }

  // Refuses the first key of map `node` not in `allowed`, at the key's line.
  absl::Status CheckKeys(const YAML::Node& node, const std::string& what,
                         const std::set<std::string>& allowed) const {
    if (!node.IsMap()) return Error(node, absl::StrCat(what, " must be a map"));
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      if (allowed.count(key) == 0) {
        return Error(kv.first,
                     absl::StrCat("unknown key '", key, "' in ", what,
                                  " (known: ", absl::StrJoin(allowed, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Scalar(const YAML::Node& node,
                                     const std::string& what) const {
    if (!node.IsScalar())
      return Error(node, absl::StrCat(what, " must be a single value"));
    return node.Scalar();
  }

  absl::StatusOr<int> Int(const YAML::Node& node, const std::string& what, int lo,
                          int hi) const {
    CMAX_ASSIGN_OR_RETURN(std::string text, Scalar(node, what));
    int v = 0;
    if (!absl::SimpleAtoi(text, &v) || v < lo || v > hi) {
      return Error(node, absl::StrCat(what, " '", text, "' must be a whole number in [",
                                      lo, ", ", hi, "]"));
    }
    return v;
  }

  absl::StatusOr<Policy> ParseRoot(const YAML::Node& root) {
    Policy policy;
    policy.source = source_;
    if (root.IsNull()) return policy;
    CMAX_RETURN_IF_ERROR(
        CheckKeys(root, "the policy",
                  {"mode", "level", "fence", "kubeconfig", "taint", "breaker", "flap",
                   "allow_units", "escalate", "rules"}));
    CMAX_RETURN_IF_ERROR(ParseHeader(root, &policy));
    if (root["breaker"])
      CMAX_RETURN_IF_ERROR(ParseBreaker(root["breaker"], &policy.breaker));
    if (root["flap"]) CMAX_RETURN_IF_ERROR(ParseFlap(root["flap"], &policy.flap));
    if (root["allow_units"])
      CMAX_RETURN_IF_ERROR(ParseUnits(root["allow_units"], &policy));
    if (root["escalate"])
      CMAX_RETURN_IF_ERROR(ParseEscalate(root["escalate"], &policy.escalate));
    if (root["rules"]) CMAX_RETURN_IF_ERROR(ParseRules(root["rules"], &policy));
    CMAX_RETURN_IF_ERROR(CheckFence(root, policy));
    return policy;
  }

  absl::Status ParseHeader(const YAML::Node& root, Policy* policy) {
    if (root["mode"]) CMAX_RETURN_IF_ERROR(ParseMode(root["mode"], policy));
    if (root["level"]) CMAX_RETURN_IF_ERROR(ParseLevel(root["level"], policy));
    if (root["fence"]) CMAX_RETURN_IF_ERROR(ParseFence(root["fence"], policy));
    if (root["kubeconfig"]) {
      CMAX_ASSIGN_OR_RETURN(policy->kubeconfig, Scalar(root["kubeconfig"], "kubeconfig"));
      if (!absl::StartsWith(policy->kubeconfig, "/")) {
        return Error(root["kubeconfig"], absl::StrCat("kubeconfig '", policy->kubeconfig,
                                                      "' must be an absolute path"));
      }
    }
    if (root["taint"]) {
      CMAX_ASSIGN_OR_RETURN(policy->taint, Scalar(root["taint"], "taint"));
      if (!IsValidLabelKey(policy->taint)) {
        return Error(root["taint"],
                     absl::StrCat("taint '", policy->taint,
                                  "' is not a Kubernetes label key "
                                  "([prefix/]name, e.g. cmax.io/quarantined)"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseMode(const YAML::Node& node, Policy* policy) {
    CMAX_ASSIGN_OR_RETURN(std::string word, Scalar(node, "mode"));
    if (word == "dry-run") {
      policy->mode = Mode::kDryRun;
    } else if (word == "enforce") {
      policy->mode = Mode::kEnforce;
    } else {
      return Error(node, absl::StrCat("mode '", word, "' must be dry-run or enforce"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseLevel(const YAML::Node& node, Policy* policy) {
    CMAX_ASSIGN_OR_RETURN(std::string word, Scalar(node, "level"));
    const v1::Severity s = ParseSeverity(word);
    if (s != v1::SEVERITY_WARN && s != v1::SEVERITY_FAIL && s != v1::SEVERITY_CRITICAL) {
      return Error(node,
                   absl::StrCat("level '", word, "' must be warn, fail or critical"));
    }
    policy->level = s;
    return absl::OkStatus();
  }

  absl::Status ParseFence(const YAML::Node& node, Policy* policy) {
    CMAX_ASSIGN_OR_RETURN(std::string word, Scalar(node, "fence"));
    for (FenceKind k : {FenceKind::kNone, FenceKind::kSlurm, FenceKind::kKubernetes}) {
      if (word == FenceKindName(k)) {
        policy->fence = k;
        return absl::OkStatus();
      }
    }
    return Error(node,
                 absl::StrCat("fence '", word, "' must be slurm, kubernetes or none"));
  }

  absl::Status ParseBreaker(const YAML::Node& node, Breaker* breaker) {
    CMAX_RETURN_IF_ERROR(CheckKeys(node, "breaker", {"max_nodes", "max_percent"}));
    if (node["max_nodes"]) {
      CMAX_ASSIGN_OR_RETURN(breaker->max_nodes,
                            Int(node["max_nodes"], "breaker.max_nodes", 1, 1000000));
    }
    if (node["max_percent"]) {
      CMAX_ASSIGN_OR_RETURN(
          breaker->max_percent,
          Int(node["max_percent"], "breaker.max_percent (0 < P <= 100)", 1, 100));
    }
    return absl::OkStatus();
  }

  absl::Status ParseFlap(const YAML::Node& node, Flap* flap) {
    CMAX_RETURN_IF_ERROR(CheckKeys(node, "flap", {"count", "window"}));
    if (node["count"]) {
      CMAX_ASSIGN_OR_RETURN(flap->count, Int(node["count"], "flap.count", 1, 1000));
    }
    if (!node["window"]) return absl::OkStatus();
    CMAX_ASSIGN_OR_RETURN(std::string text, Scalar(node["window"], "flap.window"));
    absl::Duration d;
    if (!absl::ParseDuration(text, &d) || d <= absl::ZeroDuration() ||
        d > absl::Hours(24 * 30)) {
      return Error(node["window"],
                   absl::StrCat("flap.window '", text,
                                "' must be a duration in (0, 720h] such as 90s, "
                                "30m, 24h or 1h30m"));
    }
    flap->window = d;
    return absl::OkStatus();
  }

  absl::Status ParseUnits(const YAML::Node& node, Policy* policy) {
    if (!node.IsSequence())
      return Error(node, "allow_units must be a list of systemd units");
    for (const auto& item : node) {
      CMAX_ASSIGN_OR_RETURN(std::string unit, Scalar(item, "an allow_units entry"));
      if (!IsValidUnitName(unit)) {
        return Error(item, absl::StrCat("'", unit,
                                        "' is not a systemd unit name "
                                        "(e.g. nvidia-fabricmanager.service)"));
      }
      policy->allow_units.push_back(unit);
    }
    return absl::OkStatus();
  }

  absl::Status ParseEscalate(const YAML::Node& node, Escalation* escalation) {
    CMAX_RETURN_IF_ERROR(CheckKeys(node, "escalate", {"webhook", "command"}));
    if (node["webhook"]) {
      CMAX_ASSIGN_OR_RETURN(escalation->webhook,
                            Scalar(node["webhook"], "escalate.webhook"));
      // The URL is not repeated: it may carry a token (webhook.h).
      auto url = ParseWebhookUrl(escalation->webhook);
      if (!url.ok()) {
        return Error(node["webhook"], absl::StrCat("escalate.webhook must be an http(s) URL: ",
                                                   url.status().message()));
      }
      if (escalation->webhook.size() > 2048) {
        return Error(node["webhook"], "escalate.webhook is longer than 2048 characters");
      }
    }
    if (node["command"]) CMAX_RETURN_IF_ERROR(ParseCommand(node["command"], escalation));
    return absl::OkStatus();
  }

  absl::Status ParseCommand(const YAML::Node& node, Escalation* escalation) {
    if (!node.IsSequence() || node.size() == 0) {
      return Error(node, "escalate.command must be a non-empty list (an argv, no shell)");
    }
    for (const auto& item : node) {
      CMAX_ASSIGN_OR_RETURN(std::string arg,
                            Scalar(item, "an escalate.command argument"));
      escalation->command.push_back(arg);
    }
    if (!absl::StartsWith(escalation->command[0], "/")) {
      return Error(node[0],
                   absl::StrCat("escalate.command's program '", escalation->command[0],
                                "' must be an absolute path"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseRules(const YAML::Node& node, Policy* policy) {
    if (!node.IsSequence()) return Error(node, "rules must be a list");
    for (const auto& item : node) {
      CMAX_ASSIGN_OR_RETURN(Rule rule, ParseRule(item, *policy));
      policy->rules.push_back(std::move(rule));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Rule> ParseRule(const YAML::Node& node, const Policy& policy) {
    CMAX_RETURN_IF_ERROR(CheckKeys(node, "a rule", {"match", "steps"}));
    Rule rule;
    rule.line = node.Mark().line + 1;
    if (!node["match"]) return Error(node, "a rule needs match: {check: ...}");
    CMAX_RETURN_IF_ERROR(ParseMatch(node["match"], &rule.match));
    const YAML::Node steps = node["steps"];
    if (!steps || !steps.IsSequence() || steps.size() == 0) {
      return Error(steps ? steps : node,
                   absl::StrCat("rule '", rule.match.check,
                                "' has no steps (e.g. steps: [collect, "
                                "escalate])"));
    }
    for (const auto& item : steps) {
      CMAX_ASSIGN_OR_RETURN(Step step, ParseStep(item, policy));
      if (!rule.steps.empty() && rule.steps.back().kind == StepKind::kEscalate) {
        return Error(item, absl::StrCat("rule '", rule.match.check, "': '",
                                        StepKindName(step.kind),
                                        "' after escalate: escalate hands the node to a "
                                        "person and must be the last step"));
      }
      rule.steps.push_back(std::move(step));
    }
    return rule;
  }

  absl::Status ParseMatch(const YAML::Node& node, RuleMatch* match) {
    CMAX_RETURN_IF_ERROR(CheckKeys(node, "match", {"check", "xid", "suite"}));
    if (!node["check"])
      return Error(node, "match needs check: ID (or a prefix ending in *)");
    CMAX_ASSIGN_OR_RETURN(match->check, Scalar(node["check"], "match.check"));
    if (!IsValidCheckPattern(match->check)) {
      return Error(node["check"], absl::StrCat("match.check '", match->check,
                                               "' must be a check id of [A-Za-z0-9._-], "
                                               "optionally ending in one '*'"));
    }
    if (node["suite"]) {
      CMAX_ASSIGN_OR_RETURN(match->suite, Scalar(node["suite"], "match.suite"));
    }
    if (!node["xid"]) return absl::OkStatus();
    const YAML::Node xids = node["xid"];
    if (!xids.IsSequence() || xids.size() == 0) {
      return Error(xids,
                   "match.xid must be a non-empty list of Xid numbers, e.g. [79, 48]");
    }
    for (const auto& x : xids) {
      CMAX_ASSIGN_OR_RETURN(int xid, Int(x, "an Xid", 1, 65535));
      match->xids.push_back(xid);
    }
    return absl::OkStatus();
  }

  static bool IsValidCheckPattern(const std::string& check) {
    if (check.empty() || check.size() > 128 || check == "*") return false;
    for (size_t i = 0; i < check.size(); ++i) {
      const char c = check[i];
      if (c == '*' && i + 1 == check.size()) continue;
      if (!(IsAlnum(c) || c == '.' || c == '_' || c == '-')) return false;
    }
    return true;
  }

  absl::StatusOr<Step> ParseStep(const YAML::Node& node, const Policy& policy) {
    Step step;
    step.line = node.Mark().line + 1;
    if (node.IsScalar()) return ParseBareStep(node, step);
    if (!node.IsMap() || node.size() != 1) {
      return Error(node,
                   "a step is a word (collect, reset_gpu, reboot, verify, escalate) or "
                   "a one-key map ({restart_unit: UNIT}, {reset_gpu: INDEX})");
    }
    const auto kv = *node.begin();
    const std::string action = kv.first.as<std::string>();
    if (action == "restart_unit") return ParseRestart(kv.second, policy, step);
    if (action == "reset_gpu") {
      step.kind = StepKind::kResetGpu;
      CMAX_ASSIGN_OR_RETURN(step.gpu_index,
                            Int(kv.second, "reset_gpu's GPU index", 0, kMaxGpuIndex));
      return step;
    }
    return Error(kv.first, absl::StrCat("unknown action '", action,
                                        "' (with a value: restart_unit, reset_gpu)"));
  }

  absl::StatusOr<Step> ParseBareStep(const YAML::Node& node, Step step) {
    const std::string word = node.Scalar();
    for (StepKind k : {StepKind::kCollect, StepKind::kResetGpu, StepKind::kReboot,
                       StepKind::kVerify, StepKind::kEscalate}) {
      if (word == StepKindName(k)) {
        step.kind = k;
        return step;
      }
    }
    if (word == "restart_unit")
      return Error(node, "restart_unit needs a unit: {restart_unit: UNIT}");
    return Error(node,
                 absl::StrCat("unknown action '", word,
                              "' (collect, restart_unit, reset_gpu, reboot, verify, "
                              "escalate)"));
  }

  absl::StatusOr<Step> ParseRestart(const YAML::Node& value, const Policy& policy,
                                    Step step) {
    step.kind = StepKind::kRestartUnit;
    CMAX_ASSIGN_OR_RETURN(step.unit, Scalar(value, "restart_unit's unit"));
    if (!IsValidUnitName(step.unit)) {
      return Error(value, absl::StrCat("'", step.unit, "' is not a systemd unit name"));
    }
    const auto& allowed = policy.allow_units;
    if (std::find(allowed.begin(), allowed.end(), step.unit) == allowed.end()) {
      return Error(
          value,
          absl::StrCat("unit '", step.unit, "' is not in allow_units (",
                       allowed.empty() ? "empty" : absl::StrJoin(allowed, ", "), ")"));
    }
    return step;
  }

  // Cross-field rules, checked once everything is read.
  absl::Status CheckFence(const YAML::Node& root, const Policy& policy) const {
    if (policy.fence == FenceKind::kKubernetes && policy.kubeconfig.empty()) {
      return Error(root["fence"], "fence: kubernetes needs kubeconfig: /absolute/path");
    }
    if (policy.fence != FenceKind::kNone) return absl::OkStatus();
    for (size_t i = 0; i < policy.rules.size(); ++i) {
      for (const Step& step : policy.rules[i].steps) {
        if (step.kind != StepKind::kReboot) continue;
        return Error(root["rules"][i],
                     absl::StrCat("rule '", policy.rules[i].match.check,
                                  "' reboots, which needs fence: slurm or kubernetes "
                                  "(only a drained, idle node "
                                  "is rebooted)"));
      }
    }
    return absl::OkStatus();
  }

  std::string source_;
};

bool MatchesCheck(const std::string& pattern, const std::string& check) {
  if (absl::EndsWith(pattern, "*")) {
    return absl::StartsWith(check, pattern.substr(0, pattern.size() - 1));
  }
  return pattern == check;
}

std::string DescribeStep(const Step& step) {
  switch (step.kind) {
    case StepKind::kRestartUnit:
      return absl::StrCat("restart ", step.unit);
    case StepKind::kResetGpu:
      return step.gpu_index < 0 ? "reset GPU"
                                : absl::StrCat("reset GPU ", step.gpu_index);
    default:
      return StepKindName(step.kind);
  }
}

}  // namespace

std::string ModeName(Mode mode) { return mode == Mode::kEnforce ? "enforce" : "dry-run"; }

std::string FenceKindName(FenceKind kind) {
  switch (kind) {
    case FenceKind::kSlurm:
      return "slurm";
    case FenceKind::kKubernetes:
      return "kubernetes";
    case FenceKind::kNone:
      break;
  }
  return "none";
}

std::string StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kCollect:
      return "collect";
    case StepKind::kRestartUnit:
      return "restart_unit";
    case StepKind::kResetGpu:
      return "reset_gpu";
    case StepKind::kReboot:
      return "reboot";
    case StepKind::kVerify:
      return "verify";
    case StepKind::kEscalate:
      return "escalate";
  }
  return "unknown";
}

const Rule* Policy::Match(const FindingKey& finding) const {
  for (const Rule& rule : rules) {
    const RuleMatch& m = rule.match;
    if (!MatchesCheck(m.check, finding.check)) continue;
    if (!m.suite.empty() && m.suite != finding.suite) continue;
    if (!m.xids.empty() &&
        (!finding.xid.has_value() ||
         std::find(m.xids.begin(), m.xids.end(), *finding.xid) == m.xids.end())) {
      continue;
    }
    return &rule;
  }
  return nullptr;
}

bool SeverityAtOrAbove(v1::Severity severity, v1::Severity level) {
  return severity != v1::SEVERITY_UNSPECIFIED && severity >= level;
}

bool OpensIncident(const Policy& policy, const FindingKey& finding) {
  return SeverityAtOrAbove(finding.severity, policy.level);
}

absl::StatusOr<Policy> ParsePolicy(const std::string& yaml, const std::string& source) {
  return Parser(source).Parse(yaml);
}

absl::StatusOr<Policy> LoadPolicy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open remediation policy"));
  std::string text;
  text.resize(kMaxPolicyBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxPolicyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": larger than ", kMaxPolicyBytes, " bytes: not a policy"));
  }
  return ParsePolicy(text, path);
}

absl::Status ValidateAgainstNode(const Policy& policy, int gpu_count) {
  for (const Rule& rule : policy.rules) {
    for (const Step& step : rule.steps) {
      if (step.kind != StepKind::kResetGpu || step.gpu_index < gpu_count) continue;
      return absl::InvalidArgumentError(
          absl::StrCat(policy.source, ":", step.line, ": rule '", rule.match.check,
                       "' resets GPU ", step.gpu_index, ", but the node has ", gpu_count,
                       gpu_count == 1 ? " GPU" : " GPUs"));
    }
  }
  return absl::OkStatus();
}

std::string DescribeSteps(const Rule& rule) {
  std::vector<std::string> parts;
  for (const Step& step : rule.steps) parts.push_back(DescribeStep(step));
  return absl::StrJoin(parts, " \u2192 ");
}

// The unit types a policy may name (restart_unit, allow_units). The name
// itself is checked by common/systemd_unit.h, as the agent and the watch
// check theirs (so a bare template "getty@.service" is refused here too).
constexpr absl::string_view kPolicyUnitTypes[] = {"service", "socket", "target",
                                                  "mount",   "automount", "swap",
                                                  "timer",   "path",      "slice"};

bool IsValidUnitName(std::string_view unit) {
  return CheckSystemdUnitName(absl::string_view(unit.data(), unit.size()), kPolicyUnitTypes).ok();
}

bool IsValidLabelKey(std::string_view key) {
  const size_t slash = key.find('/');
  std::string_view name = key;
  if (slash != std::string_view::npos) {
    const std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty() || prefix.size() > 253 || prefix.front() == '.' ||
        prefix.front() == '-' || prefix.back() == '.' || prefix.back() == '-') {
      return false;
    }
    for (char c : prefix) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
        return false;
    }
  }
  if (name.empty() || name.size() > 63 || !IsAlnum(name.front()) ||
      !IsAlnum(name.back())) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return IsAlnum(c) || c == '-' || c == '_' || c == '.';
  });
}

}  // namespace cmax::remediation
