// The operator's remediation policy (issue 47): a YAML file that says whether
// cmax acts on a failing node (dry-run or enforce), how it fences the node
// off, how many nodes may be in remediation at once, when a node that keeps
// failing goes to a person, and, per kind of finding, the ordered steps that
// repair it. docs/remediation.md is the operator's guide to the same schema.
//
//   mode: dry-run            # dry-run (default) | enforce
//   level: fail              # lowest severity that opens an incident:
//                            #   warn | fail | critical (default fail)
//   fence: slurm             # slurm | kubernetes | none (default none)
//   kubeconfig: /etc/cmax/kubeconfig   # required with fence: kubernetes;
//                                      # an absolute path
//   taint: cmax.io/quarantined         # key of the NoSchedule taint (the
//                                      # default); a Kubernetes label key
//   breaker: {max_nodes: 2, max_percent: 10}  # at most N nodes and P% of
//                            # the fleet (0 < P <= 100) in remediation at
//                            # once (defaults 1 and 10)
//   flap: {count: 2, window: 24h}  # the same failure `count` times within
//                            # `window` (Go-style: 90s, 30m, 24h, 1h30m; up to
//                            # 30 days) escalates, never returns by itself
//                            # (defaults 2 and 24h)
//   allow_units: [nvidia-fabricmanager.service, nvidia-persistenced.service]
//   escalate: {webhook: "https://...", command: ["/usr/local/bin/page-oncall"]}
//                            # optional; command is an argv whose program is
//                            # an absolute path (never a shell)
//   rules:                   # first match wins, in file order
//     - match: {check: "watch.xid", xid: [79, 48], suite: health}
//       steps: [collect, reset_gpu, verify]
//     - match: {check: "watch.service.*"}
//       steps: [collect, {restart_unit: nvidia-fabricmanager.service}, verify]
//
// match: `check` (required) is a check id, exact or ending in one '*' (a
// prefix); `xid` (optional) a list of Xid numbers the finding must carry one
// of; `suite` (optional) the suite that reported it.
//
// Steps, run in order by the incident state machine (not by this library):
//   collect            evidence: a bug report, a journal and kernel-log
//                      excerpt, the finding's records
//   restart_unit: U    restart systemd unit U; U must be in allow_units and
//                      a valid unit name (name[@instance].suffix)
//   reset_gpu          reset the GPU(s) the finding names; {reset_gpu: I}
//                      resets GPU index I (0..63; ValidateAgainstNode checks
//                      the node has it)
//   reboot             reboot the node. CONTRACT: only a node that is
//                      fenced (drained or cordoned by cmax) and idle (no job
//                      or task on it) may be rebooted; the caller checks
//                      both right before. A policy with a reboot step needs
//                      a fence (slurm or kubernetes).
//   verify             rerun the failed suites on that node plus a short
//                      burn-in; a pass returns the node, a failure escalates
//   escalate           hand the node to a person (the escalate hooks); it
//                      ends the rule: no step may follow it
//
// Anything else (an unknown key or action, a unit outside allow_units, a bad
// unit name, a percent out of (0, 100], a rule without steps, a step after
// escalate, a malformed duration) is refused at load with
// "source:line:column: reason" (INVALID_ARGUMENT), so the caller keeps the
// policy it had.
//
// Thread: plain values and free functions; a Policy is immutable once parsed
// and may be read from any thread.
#ifndef CMAX_COORDINATOR_REMEDIATION_POLICY_H_
#define CMAX_COORDINATOR_REMEDIATION_POLICY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cmax/v1/record.pb.h"

namespace cmax::remediation {

enum class Mode { kDryRun, kEnforce };
enum class FenceKind { kNone, kSlurm, kKubernetes };
enum class StepKind { kCollect, kRestartUnit, kResetGpu, kReboot, kVerify, kEscalate };

// The policy's own words: "dry-run"/"enforce", "none"/"slurm"/"kubernetes",
// "collect", "restart_unit", "reset_gpu", "reboot", "verify", "escalate".
std::string ModeName(Mode mode);
std::string FenceKindName(FenceKind kind);
std::string StepKindName(StepKind kind);

struct Step {
  StepKind kind = StepKind::kCollect;
  std::string unit;    // kRestartUnit: the unit, always in allow_units
  int gpu_index = -1;  // kResetGpu: 0..63, or -1 for the GPU(s) the finding names
  int line = 0;        // 1-based line in the source
};

struct RuleMatch {
  std::string check;      // exact id, or a prefix followed by one trailing '*'
  std::vector<int> xids;  // empty: any (or none)
  std::string suite;      // empty: any
};

struct Rule {
  RuleMatch match;
  std::vector<Step> steps;  // never empty
  int line = 0;             // 1-based line of the rule's entry
};

struct Breaker {
  int max_nodes = 1;     // >= 1
  int max_percent = 10;  // 1..100
};

struct Flap {
  int count = 2;  // 1..1000
  absl::Duration window = absl::Hours(24);
};

struct Escalation {
  std::string webhook;               // empty: none; else an http(s) URL
  std::vector<std::string> command;  // empty: none; else command[0] absolute
};

// What a finding is matched by. `xid` only for findings that carry one.
struct FindingKey {
  std::string check;
  std::string suite;
  std::optional<int> xid;
  v1::Severity severity = v1::SEVERITY_UNSPECIFIED;
};

struct Policy {
  std::string source;  // the file name (or what ParsePolicy was given)
  Mode mode = Mode::kDryRun;
  v1::Severity level = v1::SEVERITY_FAIL;
  FenceKind fence = FenceKind::kNone;
  std::string kubeconfig;
  std::string taint = "cmax.io/quarantined";
  Breaker breaker;
  Flap flap;
  std::vector<std::string> allow_units;
  Escalation escalate;
  std::vector<Rule> rules;

  // The first rule (in file order) whose match the finding meets; nullptr
  // when none does. The pointer lives as long as this Policy. Severity is
  // not part of a match: see OpensIncident.
  const Rule* Match(const FindingKey& finding) const;
};

// True when `severity` is at or above `level` (UNSPECIFIED never is).
bool SeverityAtOrAbove(v1::Severity severity, v1::Severity level);
// SeverityAtOrAbove(finding.severity, policy.level).
bool OpensIncident(const Policy& policy, const FindingKey& finding);

// Parses and validates `yaml`; `source` names it in errors. An empty
// document is the defaults (dry-run, no fence, no rules). Errors:
// INVALID_ARGUMENT "source:line:column: reason".
absl::StatusOr<Policy> ParsePolicy(const std::string& yaml, const std::string& source);

// Reads `path` (at most 1 MiB) and parses it. NOT_FOUND when it cannot be
// opened; otherwise as ParsePolicy.
absl::StatusOr<Policy> LoadPolicy(const std::string& path);

// Checks the policy against a node with `gpu_count` GPUs (indices
// 0..gpu_count-1): a {reset_gpu: I} step with I >= gpu_count is refused,
// INVALID_ARGUMENT "source:line: rule 'CHECK' resets GPU I, but the node has
// N GPUs". OK otherwise.
absl::Status ValidateAgainstNode(const Policy& policy, int gpu_count);

// The rule's steps for people: "collect → restart nvidia-fabricmanager.service
// → verify", "collect → reset GPU 3 → reboot → verify → escalate".
std::string DescribeSteps(const Rule& rule);

// Name checks used by the parser, exposed for the fencers and the tests.
// A systemd unit name (common/systemd_unit.h's check): name[@instance].suffix,
// at most 255 characters of [A-Za-z0-9:_.\-\\] and at most one '@' (an instance
// after it), not starting with '-', '.' or '@', suffix one of service socket
// target mount automount swap timer path slice.
bool IsValidUnitName(std::string_view unit);
// A Kubernetes label key: [prefix/]name, prefix a DNS subdomain (at most 253,
// lower-case alphanumerics, '-' and '.'), name at most 63 characters of
// [A-Za-z0-9_.-] starting and ending with an alphanumeric.
bool IsValidLabelKey(std::string_view key);

}  // namespace cmax::remediation

#endif  // CMAX_COORDINATOR_REMEDIATION_POLICY_H_
