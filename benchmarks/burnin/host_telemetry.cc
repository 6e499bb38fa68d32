#include "benchmarks/burnin/host_telemetry.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace cmax::burnin {

HostTelemetry::HostTelemetry(Sysroot root) : root_(std::move(root)) {
  for (const std::string& cpu : root_.List("/sys/devices/system/cpu")) {
    if (!absl::StartsWith(cpu, "cpu") || cpu.size() < 4 ||
        !std::all_of(cpu.begin() + 3, cpu.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    std::string f = absl::StrCat("/sys/devices/system/cpu/", cpu, "/cpufreq/scaling_cur_freq");
    if (root_.Exists(f)) freq_files_.push_back(f);
  }
  for (const std::string& hw : root_.List("/sys/class/hwmon")) {
    std::string dir = "/sys/class/hwmon/" + hw;
    std::string name = root_.ReadLine(dir + "/name").value_or(hw);
    for (const std::string& file : root_.List(dir)) {
      if (!absl::StartsWith(file, "temp") || !absl::EndsWith(file, "_input")) continue;
      std::string stem = file.substr(0, file.size() - 6);  // "tempN"
      std::string label = root_.ReadLine(dir + "/" + stem + "_label").value_or(stem);
      temp_files_.push_back({name + "/" + label, dir + "/" + file});
    }
  }
}

std::optional<CpuFrequency> HostTelemetry::ReadCpuFrequency() const {
  CpuFrequency f;
  double sum = 0;
  for (const auto& path : freq_files_) {
    auto line = root_.ReadLine(path);
    double khz = 0;
    if (!line || !absl::SimpleAtod(*line, &khz)) continue;
    double mhz = khz / 1000;
    if (f.cpus == 0 || mhz < f.min_mhz) f.min_mhz = mhz;
    if (f.cpus == 0 || mhz > f.max_mhz) f.max_mhz = mhz;
    sum += mhz;
    ++f.cpus;
  }
  if (f.cpus == 0) return std::nullopt;
  f.mean_mhz = sum / f.cpus;
  return f;
}

std::vector<Temperature> HostTelemetry::ReadTemperatures(size_t max_sensors) const {
  std::vector<Temperature> out;
  for (const auto& [sensor, path] : temp_files_) {
    if (out.size() >= max_sensors) break;
    auto line = root_.ReadLine(path);
    double milli = 0;
    if (!line || !absl::SimpleAtod(*line, &milli)) continue;
    out.push_back({sensor, milli / 1000});
  }
  return out;
}

}  // namespace cmax::burnin
