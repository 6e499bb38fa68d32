#include "benchmarks/burnin/cpu_burnin.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "benchmarks/burnin/host_gemm.h"
#include "benchmarks/burnin/host_telemetry.h"
#include "common/sample_window.h"
#include "common/time_util.h"

namespace cmax::burnin {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

template <typename T>
absl::StatusOr<CpuBurninResult> Loop(const CpuBurninOptions& o, RecordWriter* out) {
  const int n = o.size;
  const size_t elems = static_cast<size_t>(n) * n;
  std::vector<T> a(elems), b(elems), c(elems), ref(elems);
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (auto& x : a) x = static_cast<T>(dist(rng));
  for (auto& x : b) x = static_cast<T>(dist(rng));

  CpuBurninResult r;
  r.implementation = HostGemmImplementation();
  r.threads = o.threads > 0 ? o.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  SetHostGemmThreads(r.threads);
  const double tol = ToleranceFor(o.dtype);
  const double flop_per_iter = 2.0 * n * static_cast<double>(n) * n;
  std::map<std::string, std::string> labels = {
      {"backend", "cpu"}, {"dtype", o.dtype}, {"size", absl::StrCat(n)},
      {"threads", absl::StrCat(r.threads)}};

  HostTelemetry telemetry;
  std::vector<std::string> unread;
  if (!telemetry.ReadCpuFrequency()) {
    out->Log("info", "CPU frequency not measured: no cpufreq in /sys/devices/system/cpu");
    unread.push_back("CPU frequency (no cpufreq in /sys/devices/system/cpu)");
  }
  if (telemetry.ReadTemperatures().empty()) {
    out->Log("info", "temperatures not measured: no hwmon temperature sensors");
    unread.push_back("temperatures (no hwmon temperature sensor in /sys/class/hwmon)");
  }
  if (!unread.empty()) {
    // Throttling under load cannot be seen without them: not measured, never
    // "did not throttle". The load and its verification still run.
    out->NotMeasured("burnin.host_telemetry_not_measured", "reliability", "node",
                     "not measured: host telemetry during the CPU burn-in",
                     absl::StrCat("not readable on this node: ", absl::StrJoin(unread, "; ")),
                     "none on a VM without these sensors; on bare metal load the cpufreq and "
                     "hwmon drivers");
  }
  // The reference (iteration 0), also the warm-up.
  HostGemm(n, a.data(), b.data(), ref.data());

  std::vector<double> windows;
  // One Sample a second, or windows of several seconds for long runs
  // (common/sample_window.h); one window per label set.
  const int ticks = SampleWindowTicks(o.duration_s);
  SampleWindow load_window(ticks), freq_window(ticks);
  std::map<std::string, SampleWindow> temp_windows;  // by sensor
  auto write = [out](std::vector<v1::Sample> samples) {
    for (auto& sample : samples) out->WriteSample(std::move(sample));
  };
  auto write_windows = [&](bool flush) {
    const int64_t now_ns = NowUnixNs();
    write(load_window.Tick(out->suite(), labels, now_ns, flush));
    write(freq_window.Tick(out->suite(), {{"stat", "mean"}}, now_ns, flush));
    for (auto& [sensor, w] : temp_windows) {
      write(w.Tick(out->suite(), {{"sensor", sensor}}, now_ns, flush));
    }
  };
  const Clock::time_point start = Clock::now();
  Clock::time_point window_start = start;
  Clock::time_point next_progress = start + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(o.progress_every_s));
  double window_flop = 0;
  out->Progress("burnin", 0, absl::StrCat("cpu burn-in: ", o.dtype, " GEMM n=", n, " on ",
                                          r.threads, " threads (", r.implementation, ") for ",
                                          o.duration_s, " s"));
  while (Seconds(Clock::now() - start) < o.duration_s) {
    HostGemm(n, a.data(), b.data(), c.data());
    ++r.iterations;
    if (o.fault_inject > 0 && r.iterations == o.fault_inject) {
      // TEST ONLY: corrupt one element, as a failing core or cache line would.
      size_t idx = static_cast<size_t>(n / 3) * n + static_cast<size_t>(n / 2);
      c[idx] = c[idx] * T(2) + T(1);
    }
    for (size_t i = 0; i < elems; ++i) {
      double e = static_cast<double>(ref[i]), g = static_cast<double>(c[i]);
      if (std::fabs(g - e) > tol * std::max(1.0, std::fabs(e)) || std::isnan(g)) {
        ++r.mismatched_elements;
        if (!r.first_mismatch) {
          r.first_mismatch = Mismatch{r.iterations, static_cast<int>(i / n),
                                      static_cast<int>(i % n), e, g};
        }
      }
    }
    window_flop += flop_per_iter;
    Clock::time_point now = Clock::now();
    double wsec = Seconds(now - window_start);
    if (wsec >= 1.0) {
      double gflops = window_flop / wsec / 1e9;
      windows.push_back(gflops);
      load_window.Add("burnin_gflops", "GFLOP/s", gflops);
      if (auto f = telemetry.ReadCpuFrequency()) {
        freq_window.Add("cpu_freq_mhz", "MHz", f->mean_mhz);
        r.min_freq_mhz = r.min_freq_mhz ? std::min(*r.min_freq_mhz, f->min_mhz) : f->min_mhz;
        r.max_freq_mhz = r.max_freq_mhz ? std::max(*r.max_freq_mhz, f->max_mhz) : f->max_mhz;
      }
      for (const auto& t : telemetry.ReadTemperatures()) {
        temp_windows.try_emplace(t.sensor, ticks).first->second.Add("temperature_c", "C",
                                                                    t.celsius);
        r.max_temperature_c =
            r.max_temperature_c ? std::max(*r.max_temperature_c, t.celsius) : t.celsius;
      }
      write_windows(false);
      window_start = now;
      window_flop = 0;
    }
    if (now >= next_progress) {
      double done = std::min(1.0, Seconds(now - start) / o.duration_s);
      out->Progress("burnin", done,
                    absl::StrFormat("%d iterations, %.1f GFLOP/s last window, %d mismatched",
                                    r.iterations, windows.empty() ? 0.0 : windows.back(),
                                    r.mismatched_elements));
      next_progress = now + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(o.progress_every_s));
    }
  }
  write_windows(/*flush=*/true);
  r.seconds = Seconds(Clock::now() - start);
  r.gflops_mean = r.seconds > 0 ? flop_per_iter * r.iterations / r.seconds / 1e9 : 0;
  r.windows = static_cast<int>(windows.size());
  if (!windows.empty()) {
    r.gflops_min_window = *std::min_element(windows.begin(), windows.end());
    double mean = 0, var = 0;
    for (double w : windows) mean += w;
    mean /= windows.size();
    for (double w : windows) var += (w - mean) * (w - mean);
    var /= windows.size();
    r.gflops_cv = mean > 0 ? std::sqrt(var) / mean : 0;
  }
  out->Progress("burnin", 1, absl::StrCat(r.iterations, " iterations verified"));
  return r;
}

}  // namespace

double ToleranceFor(const std::string& dtype) { return dtype == "fp64" ? 1e-7 : 1e-3; }

absl::StatusOr<CpuBurninResult> RunCpuBurnin(const CpuBurninOptions& o, RecordWriter* out) {
  if (o.duration_s <= 0) return absl::InvalidArgumentError("--duration must be positive");
  if (o.size < 16 || o.size > 16384) {
    return absl::InvalidArgumentError("--size must be within [16, 16384]");
  }
  if (o.threads < 0) return absl::InvalidArgumentError("--threads must be >= 0");
  if (o.dtype == "fp32") return Loop<float>(o, out);
  if (o.dtype == "fp64") return Loop<double>(o, out);
  return absl::InvalidArgumentError(
      absl::StrCat("--dtype ", o.dtype, ": the cpu backend runs fp32 or fp64"));
}

}  // namespace cmax::burnin
