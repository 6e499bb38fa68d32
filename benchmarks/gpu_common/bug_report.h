// `nvidia-bug-report.sh` after a failed GPU burn-in, when the plan allows it
// (burn-in parameter bug-report=on): the evidence NVIDIA asks for in an RMA.
//
// The tool (shipped with the NVIDIA driver) takes `--output-file <name>` and
// writes `<name>.gz` (it appends the .gz itself; sources: NVIDIA driver
// README, "nvidia-bug-report.sh"; its --help). It needs root to collect most
// of the state and can take minutes, so it runs with a 10-minute timeout,
// from an argv (never a shell). The report is several MB: it stays on the
// node; the records carry an Artifact naming the node, path, size and
// SHA-256 of the file, the command, its exit and, when it failed, the
// stderr tail.
#ifndef CMAX_BENCHMARKS_GPU_COMMON_BUG_REPORT_H_
#define CMAX_BENCHMARKS_GPU_COMMON_BUG_REPORT_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/record_io.h"
#include "common/subprocess.h"

namespace cmax::bench {

inline constexpr char kBugReportTool[] = "nvidia-bug-report.sh";
inline constexpr std::chrono::milliseconds kBugReportTimeout = std::chrono::minutes(10);

// Where the report goes: `flag_dir` when set. Else under the agent, whose
// $CMAX_TASK_DIR (`task_dir`, "<work-dir>/tasks/<task>") is removed once the
// task's records are delivered (agent/executor_records.cc, MaybeForget), so the
// report goes beside it: "<work-dir>/artifacts/<node>-<unix_s>". Else
// "/var/lib/cmax/artifacts/<node>-<unix_s>".
std::string BugReportDir(const std::string& flag_dir, const std::string& task_dir,
                         const std::string& node, int64_t unix_s);

// {tool, "--output-file", output_base}; the tool writes output_base + ".gz".
std::vector<std::string> BugReportArgv(const std::string& tool,
                                       const std::string& output_base);

struct BugReportRequest {
  std::string tool;  // the executable's path (cmax::FindExecutable(kBugReportTool))
  std::string dir;   // created when missing
  std::string node;
  std::chrono::milliseconds timeout = kBugReportTimeout;
};

struct BugReportOutcome {
  std::string node;
  std::string command;  // the argv, space-joined
  bool started = false;
  ExitInfo exit;
  bool timed_out = false;
  std::string stderr_tail;  // only when it failed
  std::string file;         // the report written, empty when none
  uint64_t size = 0;
  std::string sha256;  // lower-case hex
  std::string error;   // why there is no report, when there is none
  bool ok() const { return !file.empty() && started && exit.exited && exit.code == 0; }
};

// Runs the tool into request.dir and describes what it left.
BugReportOutcome CollectBugReport(const BugReportRequest& request);

// The Artifact text: node, file path, size, SHA-256, command, exit, stderr tail.
std::string BugReportArtifactText(const BugReportOutcome& outcome);

// Artifact "nvidia_bug_report.txt" (text/plain), and a Log line (info when
// it worked, warn when not).
void WriteBugReportRecords(const BugReportOutcome& outcome, RecordWriter* out);

// The step as the burn-in runs it: nothing unless `enabled` and
// `any_failed`; request.tool empty means FindExecutable(kBugReportTool), and
// when that finds nothing a Log "nvidia-bug-report.sh not found: not
// collected"; otherwise Collect and Write. True when the tool ran.
bool MaybeCollectBugReport(bool enabled, bool any_failed, BugReportRequest request,
                           RecordWriter* out);

// SHA-256 of a file's bytes as lower-case hex (OpenSSL's libcrypto).
absl::StatusOr<std::string> Sha256OfFile(const std::string& path);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_BUG_REPORT_H_
