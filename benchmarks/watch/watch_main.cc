// cmax-watch: the passive watch (watch.h). The agent runs it as a child with
// --jsonl and forwards its records; run by hand it prints one line a finding.
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "benchmarks/watch/watch.h"
#include "common/args.h"
#include "common/record_io.h"
#include "common/version.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

std::vector<std::string> List(const std::string& text) {
  return absl::StrSplit(text, ',', absl::SkipWhitespace());
}

void PrintFinding(const cmax::v1::Finding& f) {
  std::string when = absl::FormatTime("%H:%M:%S", absl::Now(), absl::LocalTimeZone());
  std::printf("%s %-8s %-24s %s: %s%s\n", when.c_str(),
              f.not_measured() ? "not-measured" : cmax::SeverityName(f.severity()).c_str(),
              f.check_id().c_str(), f.subject().c_str(), f.title().c_str(),
              f.not_measured() ? (" (" + f.detail() + ")").c_str() : "");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = "/", services, filesystems = "/";
  double full = 95, interval = 5, gpu_interval = 30, cpu_report = 60, tick = 1, duration = 0;
  bool jsonl = false, version = false;
  cmax::ArgParser p("cmax-watch [options]",
                    "Watches this node between runs: the kernel log (Xid, SXid, a GPU off the "
                    "bus, machine checks, PCIe AER, read-only remounts), the listed systemd "
                    "units, file systems filling up, InfiniBand/RoCE ports and the GPUs (NVML). "
                    "Each new signal is a finding stamped with the signal's own time. Read-only: "
                    "it changes nothing on the node.");
  p.AddString("root", &root, "root of the file system to read (fixture trees in tests)");
  p.AddString("services", &services, "systemd units to watch, comma-separated");
  p.AddString("filesystems", &filesystems, "mount points to watch for space, comma-separated");
  p.AddDouble("fs-full-percent", &full, "a file system at or above this use is full");
  p.AddDouble("interval", &interval, "seconds between polls of units, file systems and ports");
  p.AddDouble("gpu-interval", &gpu_interval, "seconds between GPU probes");
  p.AddDouble("cpu-report", &cpu_report, "seconds between reports of the watch's own CPU use");
  p.AddDouble("tick", &tick, "seconds between reads of the kernel log");
  p.AddDouble("duration", &duration, "stop after this many seconds (0: until SIGTERM)");
  p.AddFlag("jsonl", &jsonl, "write records as JSON lines (what the agent reads)");
  p.AddFlag("version", &version, "print the version and exit");
  cmax::ParseToolArgsOrExit(p, argc, argv);
  if (version) {
    std::printf("cmax-watch %s\n", cmax::kCmaxVersion);
    return 0;
  }

  cmax::watch::WatchOptions o;
  o.root = root;
  o.services = List(services);
  o.filesystems = List(filesystems);
  o.fs_full_percent = full;
  o.interval = absl::Seconds(interval);
  o.gpu_interval = absl::Seconds(gpu_interval);
  o.cpu_report = absl::Seconds(cpu_report);
  absl::Status valid = cmax::watch::ValidateOptions(o);
  if (!valid.ok() || tick <= 0 || duration < 0) {
    std::fprintf(stderr, "cmax-watch: %s\n",
                 valid.ok() ? "--tick must be above zero, --duration not negative"
                            : std::string(valid.message()).c_str());
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  cmax::RecordWriter writer("watch", jsonl ? stdout : nullptr);
  cmax::watch::Watch watch(o, &writer, {},
                           jsonl ? std::function<void(const cmax::v1::Finding&)>{} : PrintFinding);
  if (absl::Status s = watch.Start(); !s.ok()) {
    std::fprintf(stderr, "cmax-watch: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  absl::Time end = duration > 0 ? absl::Now() + absl::Seconds(duration) : absl::InfiniteFuture();
  while (!g_stop && absl::Now() < end) {
    absl::SleepFor(absl::Seconds(tick));
    watch.Tick();
  }
  return 0;
}
