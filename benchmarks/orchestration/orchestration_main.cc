// cmax-bench orchestration: flags, the real-root command runner, output.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "benchmarks/orchestration/orchestration.h"
#include "benchmarks/suite.h"
#include "common/record_io.h"
#include "common/subprocess.h"
#include "common/suite_flags.h"
#include "common/sysroot.h"

namespace cmax::bench {

int RunOrchestration(int argc, char** argv) {
  orchestration::Options o;
  std::string managed = "true";
  bool jsonl = false;
  bool step = false;
  bool step_probe = false;
  SuiteFlags flags("orchestration", "cmax-bench");
  flags.Bind("managed", &managed);
  flags.Bind("scheduler", &o.scheduler);
  flags.Bind("step", &step);
  ArgParser& args = flags.extra();
  args.AddFlag("jsonl", &jsonl, "write cmax.v1.Record JSON lines instead of a table");
  args.AddString("root", &o.root, "system root to read /etc, /sys and /var/lib under (default /)");
  args.AddString("hostname", &o.hostname,
                 "this node's name in Slurm (default: /etc/hostname under --root)");
  args.AddFlag("step-probe", &step_probe,
               "print what this process may use (cpus=, gpus=) and exit: what --step runs "
               "inside its job step");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  if (step_probe) {
    std::fputs(orchestration::StepProbe(Sysroot("/")).c_str(), stdout);
    return kExitPassed;
  }
  if (!args.positional().empty()) {
    std::fprintf(stderr, "orchestration: unexpected argument '%s'\n", args.positional()[0].c_str());
    return kExitCouldNotRun;
  }
  o.managed = managed != "false";
  if (o.scheduler.empty()) o.scheduler = "auto";
  RecordWriter out("orchestration", jsonl ? stdout : nullptr);
  struct stat st;
  if (o.root.empty() || stat(o.root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    const std::string why = absl::StrCat("root '", o.root, "' is not a directory; nothing measured");
    std::fprintf(stderr, "orchestration: %s\n", why.c_str());
    out.NotMeasured("orchestration.not_measured", "orchestration", "node",
                    "not measured: the orchestration suite could not run", why,
                    "point --root at a system root (default /)");
    return kExitCouldNotRun;
  }
  if (step) {  // off the real root the step is not measured (no srun)
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) o.step_probe = {std::string(self, static_cast<size_t>(n)), "orchestration", "--step-probe"};
  }
  if (o.root == "/") {
    o.run = [](const std::vector<std::string>& argv) -> std::optional<std::string> {
      auto r = RunCommand(argv, std::chrono::seconds(15));
      if (!r.ok() || r->timed_out || !r->exit.exited || r->exit.code != 0) return std::nullopt;
      return r->out;
    };
  }
  return orchestration::WriteChecks(orchestration::RunChecks(o), jsonl, out) != 0
             ? kExitFoundFailures
             : kExitPassed;
}

}  // namespace cmax::bench
