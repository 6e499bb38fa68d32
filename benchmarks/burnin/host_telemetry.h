// Host telemetry for the CPU burn-in: CPU frequency from
// /sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq (kHz) and
// temperatures from /sys/class/hwmon/hwmon*/temp*_input (millidegrees C),
// as documented in the kernel's cpufreq and hwmon sysfs interfaces.
// Either may be absent (VMs, containers): then the readings are empty.
#ifndef CMAX_BENCHMARKS_BURNIN_HOST_TELEMETRY_H_
#define CMAX_BENCHMARKS_BURNIN_HOST_TELEMETRY_H_

#include <optional>
#include <string>
#include <vector>

#include "common/sysroot.h"

namespace cmax::burnin {

struct CpuFrequency {
  double mean_mhz = 0;
  double min_mhz = 0;
  double max_mhz = 0;
  int cpus = 0;
};

struct Temperature {
  std::string sensor;  // "<hwmon name>/<label or tempN>", e.g. "coretemp/Package id 0"
  double celsius = 0;
};

class HostTelemetry {
 public:
  explicit HostTelemetry(Sysroot root = Sysroot("/"));
  // nullopt when no cpufreq is exposed.
  std::optional<CpuFrequency> ReadCpuFrequency() const;
  // At most `max_sensors` readings, in hwmon order.
  std::vector<Temperature> ReadTemperatures(size_t max_sensors = 16) const;

 private:
  Sysroot root_;
  std::vector<std::string> freq_files_;  // found once
  std::vector<std::pair<std::string, std::string>> temp_files_;  // (sensor, path)
};

}  // namespace cmax::burnin

#endif  // CMAX_BENCHMARKS_BURNIN_HOST_TELEMETRY_H_
