#include "benchmarks/watch/watch.h"

#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/health/file_gpu_probe.h"
#include "benchmarks/watch/kernel_signals.h"
#include "benchmarks/health/nvml_loader.h"
#include "common/subprocess.h"
#include "common/systemd_unit.h"

namespace cmax::watch {
namespace {

absl::StatusOr<UnitStates> SystemctlUnits(const std::vector<std::string>& units) {
  std::vector<std::string> argv = {"systemctl", "show", "-p", "Id", "-p", "LoadState", "-p", "ActiveState",
                                   "-p", "SubState", "-p", "Result", "--"};
  argv.insert(argv.end(), units.begin(), units.end());
  auto r = RunCommand(argv, std::chrono::seconds(5), 256 << 10);
  if (!r.ok()) return r.status();
  if (r->timed_out || r->exit.code != 0) {
    return absl::UnavailableError(absl::StrCat("systemctl show failed: ",
                                               r->timed_out ? "timed out" : r->err));
  }
  return ParseSystemctlShow(r->out);
}

absl::StatusOr<UnitStates> FixtureUnits(const Sysroot& root) {
  auto text = root.Read("/cmax-fixture/units");
  if (!text.ok()) return text.status();
  return ParseSystemctlShow(*text);
}

absl::Time BootWallTime() {
  timespec mono{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return absl::Now() - absl::DurationFromTimespec(mono);
}

}  // namespace

double ProcessCpuSeconds() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    if (getrusage(who, &u) != 0) continue;
    total += u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
             u.ru_stime.tv_usec / 1e6;
  }
  return total;
}

absl::Status ValidateOptions(const WatchOptions& o) {
  for (const auto& u : o.services) {
    if (!IsSystemdUnitName(u)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--services: '", u, "' is not a systemd unit name (e.g. nvidia-fabricmanager.service)"));
    }
  }
  for (const auto& m : o.filesystems) {
    if (m.empty() || m[0] != '/') {
      return absl::InvalidArgumentError(absl::StrCat("--filesystems: '", m, "' is not an absolute path"));
    }
  }
  if (!(o.fs_full_percent > 0 && o.fs_full_percent <= 100)) {
    return absl::InvalidArgumentError(absl::StrCat("--fs-full-percent: ", o.fs_full_percent,
                                                   " is not in (0, 100]"));
  }
  for (auto d : {o.interval, o.gpu_interval, o.cpu_report}) {
    if (d <= absl::ZeroDuration()) return absl::InvalidArgumentError("intervals must be above zero");
  }
  return absl::OkStatus();
}

Watch::Watch(WatchOptions options, RecordWriter* writer, WatchSeams seams,
             std::function<void(const v1::Finding&)> print)
    : options_(std::move(options)),
      root_(options_.root),
      writer_(writer),
      seams_(std::move(seams)),
      print_(std::move(print)) {
  if (!seams_.now) seams_.now = [] { return absl::Now(); };
  if (!seams_.read_units) {
    Sysroot root = root_;
    if (root.is_real()) {
      seams_.read_units = SystemctlUnits;
    } else {
      seams_.read_units = [root](const std::vector<std::string>&) { return FixtureUnits(root); };
    }
  }
  if (!seams_.gpu_probe) {
    if (root_.is_real()) {
      seams_.gpu_probe = std::make_unique<health::NvmlGpuProbe>();
    } else if (root_.Exists("/cmax-fixture/gpus.yaml")) {
      seams_.gpu_probe = std::make_unique<health::FileGpuProbe>(root_.Path("/cmax-fixture/gpus.yaml"));
    }
  }
}

Watch::~Watch() = default;

absl::Time Watch::Now() const { return seams_.now(); }

void Watch::Emit(v1::Finding f, std::optional<absl::Time> signal_at) {
  absl::Time at = signal_at.value_or(Now());
  (*f.mutable_labels())["signal_unix_ns"] = absl::StrCat(absl::ToUnixNanos(at));
  (*f.mutable_labels())["signal_time_source"] = signal_at ? "kernel_log" : "observed";
  f.set_suite("watch");
  if (print_) print_(f);
  writer_->Find(std::move(f));
  ++findings_;
}

void Watch::NotWatched(const std::string& check, const std::string& category,
                       const std::string& what, const std::string& why) {
  v1::Finding f;
  f.set_check_id(check);
  f.set_category(category);
  f.set_subject("node");
  f.set_title(absl::StrCat(what, " not watched"));
  f.set_detail(why);
  f.set_not_measured(true);
  f.set_suite("watch");
  if (print_) print_(f);
  writer_->Find(std::move(f));
}

absl::Status Watch::Start() {
  auto catalog = health::XidCatalog::LoadDefault();
  if (!catalog.ok()) return catalog.status();
  catalog_ = std::move(*catalog);
  boot_ = BootWallTime();
  auto kmsg = health::KmsgFollower::Start(root_);
  if (kmsg.ok()) {
    kmsg_ = std::move(*kmsg);
  } else {
    NotWatched("watch.kmsg", "reliability", "the kernel log (Xid, AER, MCE, read-only remounts)",
               std::string(kmsg.status().message()));
  }
  PollState(/*first=*/true);
  PollGpus(/*first=*/true);
  absl::Time now = Now();
  next_state_ = now + options_.interval;
  next_gpu_ = now + options_.gpu_interval;
  next_cpu_ = now + options_.cpu_report;
  cpu_since_ = now;
  cpu_seconds_at_ = ProcessCpuSeconds();
  writer_->Log("info", absl::StrCat(
                           "watching: kernel log ", kmsg_ ? "yes" : "no", "; units [",
                           absl::StrJoin(options_.services, ", "), "]; file systems [",
                           absl::StrJoin(options_.filesystems, ", "), "] at ",
                           options_.fs_full_percent, " %; ", ports_.size(), " port(s); ",
                           gpus_.gpus.size(), " GPU(s)"));
  return absl::OkStatus();
}

void Watch::Tick() {
  absl::Time now = Now();
  PollKernel(now);
  if (now >= next_state_) {
    PollState(false);
    next_state_ = now + options_.interval;
  }
  if (now >= next_gpu_) {
    PollGpus(false);
    next_gpu_ = now + options_.gpu_interval;
  }
  if (now >= next_cpu_) {
    ReportCpu(now);
    next_cpu_ = now + options_.cpu_report;
  }
}

void Watch::PollKernel(absl::Time now) {
  if (!kmsg_) return;
  auto lines = kmsg_->Poll();
  if (!lines.ok()) {
    NotWatched("watch.kmsg", "reliability", "the kernel log", std::string(lines.status().message()));
    kmsg_.reset();
    return;
  }
  for (const auto& line : *lines) {
    auto f = KernelLineFinding(line, *catalog_);
    if (!f) continue;
    std::optional<absl::Time> at;
    if (line.mono_s >= 0) {
      absl::Time t = boot_ + absl::Seconds(line.mono_s);
      // A stamp from the future or from long before the watch began is not
      // this boot's clock (a fixture, a clock step): use the observed time.
      if (t <= now + absl::Seconds(1) && t >= now - absl::Hours(24)) at = t;
      (*f->mutable_labels())["kernel_mono_s"] = absl::StrCat(line.mono_s);
    }
    Emit(std::move(*f), at);
  }
}

void Watch::PollState(bool first) {
  if (!options_.services.empty()) {
    auto units = seams_.read_units(options_.services);
    if (!units.ok()) {
      std::string why(units.status().message());
      if (why != units_error_) NotWatched("watch.service", "reliability", "systemd units", why);
      units_error_ = why;
    } else {
      units_error_.clear();
      if (first) {
        for (const std::string& u : NotInstalled(*units)) {
          NotWatched("watch.service", "reliability", u, "the unit is not installed on this node");
        }
      }
      for (auto& f : UnitFindings(units_, *units)) Emit(std::move(f), std::nullopt);
      units_ = std::move(*units);
    }
  }
  std::vector<std::string> errors;
  FsStates fs = ReadFilesystems(root_, options_.filesystems, &errors);
  std::string why = absl::StrJoin(errors, "; ");
  if (!why.empty() && why != fs_error_) NotWatched("watch.fs", "storage", "file systems", why);
  fs_error_ = why;
  for (auto& f : FsFindings(filesystems_, fs, options_.fs_full_percent)) {
    Emit(std::move(f), std::nullopt);
  }
  filesystems_ = std::move(fs);
  std::vector<health::IbPort> ports = health::ReadIbPorts(root_);
  if (first && ports.empty()) {
    NotWatched("watch.ib", "networking", "InfiniBand/RoCE ports",
               absl::StrCat("no ports under ", root_.Path("/sys/class/infiniband")));
  }
  for (auto& f : PortFindings(first ? std::vector<health::IbPort>{} : ports_, ports)) {
    Emit(std::move(f), std::nullopt);
  }
  ports_ = std::move(ports);
}

void Watch::PollGpus(bool first) {
  if (!seams_.gpu_probe) {
    if (first) NotWatched("watch.gpu", "reliability", "GPUs", "no GPU probe under this root");
    return;
  }
  auto inv = seams_.gpu_probe->Probe();
  if (!inv.ok()) {
    std::string why = absl::StrCat(seams_.gpu_probe->Describe(), ": ", inv.status().message());
    if (why != gpu_error_) NotWatched("watch.gpu", "reliability", "GPUs", why);
    gpu_error_ = why;
    return;
  }
  gpu_error_.clear();
  for (auto& f : GpuFindings(gpus_, *inv, first || !gpus_probed_)) Emit(std::move(f), std::nullopt);
  gpus_ = std::move(*inv);
  gpus_probed_ = true;
}

void Watch::ReportCpu(absl::Time now) {
  double cpu = ProcessCpuSeconds();
  double wall = absl::ToDoubleSeconds(now - cpu_since_);
  if (wall > 0) writer_->Measure("watch_cpu_percent", 100.0 * (cpu - cpu_seconds_at_) / wall, "%");
  cpu_seconds_at_ = cpu;
  cpu_since_ = now;
}

}  // namespace cmax::watch
