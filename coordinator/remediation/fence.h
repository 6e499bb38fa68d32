// Fencing a node off the workload scheduler while cmax repairs it, and
// lifting only the fences cmax set (issue 47).
//
//   Inspect ──▶ kNone ──Fence──▶ kCmax ──Lift──▶ kNone
//               kOperator: someone else's drain or cordon; Fence leaves it
//                          (ALREADY_EXISTS "held by operator: ...") and Lift
//                          refuses it (FAILED_PRECONDITION), always.
//
// Implementations: SlurmFencer (scontrol drain/resume, cmax's drains carry the
// reason prefix "cmax fence: "), KubeFencer (kubectl cordon, a NoSchedule taint and
// the annotation cmax.io/fenced-by=cmax) and NoFencer (fence: none).
//
// Every command is an argv (never a shell) run under a timeout (10 s by
// default) with its output capped; a node name is checked (IsFenceableNodeName)
// before it reaches any argv. A failed command's Status names the command and
// the tail of its stderr: UNAVAILABLE when it exited non-zero or could not
// start, DEADLINE_EXCEEDED when it timed out.
//
// Thread: not thread-safe; the caller's thread. Inspect, Fence and Lift block
// for up to a few command timeouts each, so the caller runs them off the
// coordinator's core thread (one worker per node at a time).
#ifndef CMAX_COORDINATOR_REMEDIATION_FENCE_H_
#define CMAX_COORDINATOR_REMEDIATION_FENCE_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/remediation/policy.h"

namespace cmax::remediation {

// Who holds a node out of scheduling.
enum class FenceHolder {
  kNone,      // schedulable (as far as the fence system goes)
  kCmax,      // fenced by cmax: Lift may return it
  kOperator,  // drained, down or cordoned by someone else: never touched
};

struct FenceState {
  FenceHolder holder = FenceHolder::kNone;
  // The fence system's own words: Slurm's State= and Reason= (without the
  // [user@time] stamp); for Kubernetes "cordoned", the taints.
  std::string detail;
  // "not fenced", "fenced by cmax: <detail>", "held by operator: <detail>".
  std::string Describe() const;
};

// The Slurm drain reason prefix that marks cmax's drains.
inline constexpr char kSlurmReasonMarker[] = "cmax fence: ";
// The annotation (and value) that marks cmax's cordons.
inline constexpr char kFencedByAnnotation[] = "cmax.io/fenced-by";
inline constexpr char kFencedByValue[] = "cmax";

// `text` reduced to what a Slurm reason may safely hold: letters, digits,
// space and :._/+- (no quotes, no '=' that scontrol would parse), at most
// 100 characters. coordinator/slurm_drain.h's SlurmReason uses it too.
std::string SanitizeSlurmReason(std::string_view text);

// A node name both Slurm and Kubernetes accept and that cannot be taken for
// an option: [A-Za-z0-9_.-]{1,253}, starting with an alphanumeric.
bool IsFenceableNodeName(std::string_view node);

// True for Fence's "held by operator" answer (ALREADY_EXISTS).
bool IsHeldByOperator(const absl::Status& status);

class Fencer {
 public:
  virtual ~Fencer() = default;
  // "slurm", "kubernetes", "none".
  virtual std::string Name() const = 0;
  // The node's fence as it is now. INVALID_ARGUMENT for a bad node name,
  // NOT_FOUND when the fence system does not know the node, else a command
  // error (above).
  virtual absl::StatusOr<FenceState> Inspect(const std::string& node) = 0;
  // Takes `node` out of scheduling for `reason` (shown to people in the fence
  // system; sanitised). OK: fenced by cmax now (already fenced by cmax is OK
  // too). ALREADY_EXISTS "held by operator: <their reason>": someone else's
  // fence holds it; nothing was changed and cmax must never lift it.
  // Otherwise as Inspect. A fence half set (a command failed midway) is
  // marked as cmax's first, so Fence again completes it and Lift removes it.
  virtual absl::Status Fence(const std::string& node, const std::string& reason) = 0;
  // Returns `node` to scheduling when cmax fenced it. OK: returned, or not
  // fenced at all. FAILED_PRECONDITION "drained by someone else: <reason>"
  // (or "cordoned by someone else: ..."): not cmax's fence; nothing changed.
  // Otherwise as Inspect.
  virtual absl::Status Lift(const std::string& node) = 0;
};

// fence: slurm. `scontrol`: a path, or a name looked up on PATH.
//   Inspect: scontrol show node N -o   (a State= with DRAIN, DOWN or FAIL is
//            fenced; cmax's when Reason= begins with "cmax fence: ")
//   Fence:   scontrol update NodeName=N State=DRAIN Reason="cmax fence: <reason>"
//   Lift:    scontrol update NodeName=N State=RESUME  (only cmax's drain)
class SlurmFencer : public Fencer {
 public:
  explicit SlurmFencer(std::string scontrol,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10));
  std::string Name() const override { return "slurm"; }
  absl::StatusOr<FenceState> Inspect(const std::string& node) override;
  absl::Status Fence(const std::string& node, const std::string& reason) override;
  absl::Status Lift(const std::string& node) override;

 private:
  absl::StatusOr<std::string> Scontrol(const std::vector<std::string>& args);
  std::string scontrol_;
  std::chrono::milliseconds timeout_;
};

// fence: kubernetes. Every command is `kubectl --kubeconfig K ...`.
//   Inspect: get node N -o json (spec.unschedulable, spec.taints,
//            metadata.annotations): cmax's when cmax.io/fenced-by=cmax;
//            someone else's when cordoned, or tainted with `taint_key`,
//            without it.
//   Fence:   annotate node N cmax.io/fenced-by=cmax --overwrite (first, so a
//            half-set fence is still known as cmax's), cordon N,
//            taint nodes N KEY=cmax:NoSchedule --overwrite
//   Lift:    taint nodes N KEY:NoSchedule- (when present), uncordon N (when
//            cordoned), annotate node N cmax.io/fenced-by- (last)
class KubeFencer : public Fencer {
 public:
  // REQUIRES: IsValidLabelKey(taint_key) (the policy checked it).
  KubeFencer(std::string kubectl, std::string kubeconfig, std::string taint_key,
             std::chrono::milliseconds timeout = std::chrono::seconds(10));
  std::string Name() const override { return "kubernetes"; }
  absl::StatusOr<FenceState> Inspect(const std::string& node) override;
  absl::Status Fence(const std::string& node, const std::string& reason) override;
  absl::Status Lift(const std::string& node) override;

 private:
  // Runs `kubectl --kubeconfig K args...`; its stdout, or the error above.
  absl::StatusOr<std::string> Kubectl(const std::vector<std::string>& args,
                                      size_t max_output);
  std::string kubectl_;
  std::string kubeconfig_;
  std::string taint_key_;
  std::chrono::milliseconds timeout_;
};

// fence: none. Inspect: kNone, detail "not fenced: fence is none"; Fence and
// Lift change nothing and return OK (the node stays schedulable: the caller
// records "not fenced: fence is none" with the incident).
class NoFencer : public Fencer {
 public:
  std::string Name() const override { return "none"; }
  absl::StatusOr<FenceState> Inspect(const std::string& node) override;
  absl::Status Fence(const std::string& node, const std::string& reason) override;
  absl::Status Lift(const std::string& node) override;
};

// The fencer `policy.fence` names, with the programs to run.
std::unique_ptr<Fencer> MakeFencer(const Policy& policy,
                                   const std::string& scontrol = "scontrol",
                                   const std::string& kubectl = "kubectl");

}  // namespace cmax::remediation

#endif  // CMAX_COORDINATOR_REMEDIATION_FENCE_H_
