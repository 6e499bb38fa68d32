// cmax-bench orchestration: is this node's scheduler (Slurm or Kubernetes)
// set up so that a customer's job gets whole, isolated, topology-aware GPUs
// with health checks wired in? Read-only: files under --root, and on the
// real root (--root /) `scontrol show config` / `scontrol show node`.
//
// Every check names what it read (file:line, or the command and its output
// line) and, when it is not a pass, what to set where. A check whose input
// is missing or unreadable is not measured, never a pass.
#ifndef CMAX_BENCHMARKS_ORCHESTRATION_ORCHESTRATION_H_
#define CMAX_BENCHMARKS_ORCHESTRATION_ORCHESTRATION_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/record_io.h"
#include "common/sysroot.h"

namespace cmax::orchestration {

enum class Status { kPass, kInfo, kWarn, kFail, kNotMeasured };

struct Check {
  std::string id;                        // "orchestration.slurm.constrain_devices"
  std::string category = "orchestration";  // or "security"
  Status status = Status::kNotMeasured;
  std::string subject = "node";
  std::string title;
  std::string detail;
  std::vector<std::string> evidence;     // "/etc/slurm/cgroup.conf:3: ConstrainDevices=no"
  std::string action;                    // what to set, where
  std::vector<std::string> links;
  // The node's topology/block block: when set, a `slurm_block` measurement
  // (value 1, these labels: block, source) is written beside the finding.
  std::map<std::string, std::string> block_labels;
};

// Runs a program (argv, never a shell) and returns its stdout when it
// exited 0; nullopt when it is missing, failed or timed out.
using CommandRunner = std::function<std::optional<std::string>(const std::vector<std::string>&)>;

struct Options {
  std::string root = "/";
  bool managed = true;          // a managed cluster: no scheduler at all fails
  std::string scheduler = "auto";  // auto, slurm, kubernetes
  std::string hostname;         // empty: /etc/hostname under root
  // Runs scontrol; unset: commands are not run (fixture roots). The suite's
  // main sets it only for --root /.
  CommandRunner run;
  // Run the one-step job (--step): argv of the probe inside it, e.g.
  // {"/usr/bin/cmax-bench", "orchestration", "--step-probe"}; empty: no step.
  std::vector<std::string> step_probe;
};

// What a job step sees, printed by --step-probe: "cpus=0-15\ngpus=0,3\n"
// (Cpus_allowed_list of /proc/self/status; the N of each /dev/nvidiaN this
// process may open).
std::string StepProbe(const Sysroot& root);

std::vector<Check> RunChecks(const Options& options);

// The Finding of a check: severity info/warn/fail, not_measured for
// kNotMeasured.
v1::Finding ToFinding(const Check& check);

std::string StatusName(Status s);  // "PASS", "INFO", ...

// Writes the checks as Findings (jsonl) or as a table with what each read and
// its fix; returns the suite's exit code: 1 when a check failed, else 0.
int WriteChecks(const std::vector<Check>& checks, bool jsonl, RecordWriter& out);

// The slurm.conf this node uses under `root` (/etc/slurm, /etc/slurm-llnl,
// slurmd's configless cache); empty when there is none.
std::string FindSlurmConf(const Sysroot& root);

}  // namespace cmax::orchestration

#endif  // CMAX_BENCHMARKS_ORCHESTRATION_ORCHESTRATION_H_
