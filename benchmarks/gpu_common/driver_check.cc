#include "benchmarks/gpu_common/driver_check.h"

#include <cctype>

#include "absl/strings/str_cat.h"

namespace cmax::bench {
namespace {

v1::Finding MakeFinding(const std::string& id, v1::Severity severity, const std::string& title,
                        const std::string& detail, const std::string& action) {
  v1::Finding f;
  f.set_check_id(id);
  f.set_severity(severity);
  f.set_category("compute");
  f.set_subject("node");
  f.set_title(title);
  f.set_detail(detail);
  f.set_action(action);
  return f;
}

std::string DriverFound(const DriverProbe& p) {
  std::string v = ParseProcDriverVersion(p.proc_driver_version);
  if (v.empty() && p.driver_api_version > 0) {
    return absl::StrCat("a driver for CUDA ", CudaVersionString(p.driver_api_version));
  }
  if (v.empty()) return "an unknown version";
  if (p.driver_api_version > 0) {
    return absl::StrCat(v, " (CUDA ", CudaVersionString(p.driver_api_version), ")");
  }
  return v;
}

}  // namespace

std::string ParseProcDriverVersion(const std::string& text) {
  // The first token of the form digits.digits[.digits] after "Module".
  size_t start = text.find("Module");
  if (start == std::string::npos) start = 0;
  size_t i = start;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    std::string tok = text.substr(i, j - i);
    bool digits_and_dots = !tok.empty() && std::isdigit(static_cast<unsigned char>(tok[0]));
    int dots = 0;
    for (char c : tok) {
      if (c == '.') {
        ++dots;
      } else if (!std::isdigit(static_cast<unsigned char>(c))) {
        digits_and_dots = false;
      }
    }
    if (digits_and_dots && dots >= 1 && dots <= 2 && tok.back() != '.') return tok;
    i = j;
  }
  return "";
}

std::string CudaVersionString(int version) {
  if (version <= 0) return "unknown";
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

std::string MinimumDriverFor(int runtime_version) {
  int major = runtime_version / 1000;
  if (major >= 13) return "R580 (580.65.06)";
  if (major == 12) return "R525 (525.60.13)";
  if (major == 11) return "R450 (450.80.02)";
  return "a driver that supports this CUDA version";
}

DriverDecision DecideDriver(const DriverProbe& p) {
  DriverDecision d;
  const std::string runtime = CudaVersionString(p.runtime_version);
  if (p.runtime_error == kCudaSuccess && p.device_count > 0) return d;

  d.exit_code = 2;
  if (p.runtime_error == kCudaSuccess || p.runtime_error == kCudaErrorNoDevice) {
    d.availability = GpuAvailability::kNoDevice;
    if (p.driver_files_present) {
      d.message = absl::StrCat("not measured: no GPU visible although the NVIDIA driver ",
                               DriverFound(p), " is loaded");
      d.finding = MakeFinding(
          "gpu.no_device", v1::SEVERITY_WARN, "not measured: NVIDIA driver present but no GPU",
          absl::StrCat(d.message, ". CUDA_VISIBLE_DEVICES may hide every GPU, or the GPUs ",
                       "fell off the bus (check dmesg for Xid 79)."),
          "check nvidia-smi, CUDA_VISIBLE_DEVICES and the kernel log");
    } else {
      d.message = "not measured: no GPU";
      d.finding = MakeFinding(
          "gpu.no_device", v1::SEVERITY_INFO, "not measured: no GPU",
          absl::StrCat("the CUDA runtime reports no CUDA-capable device (cudaGetDeviceCount: ",
                       !p.runtime_error_name.empty()     ? p.runtime_error_name
                       : p.runtime_error == kCudaSuccess ? std::string("cudaSuccess")
                                                         : absl::StrCat("error ", p.runtime_error),
                       ", ", p.device_count, " devices)"),
          "none");
    }
    // Nothing was measured: the scorecard must not count this as a pass nor
    // let the WARN hint grade the category (record.proto, Finding.not_measured).
    d.finding->set_not_measured(true);
    return d;
  }
  if (p.runtime_error == kCudaErrorInsufficientDriver) {
    if (!p.driver_files_present) {
      d.availability = GpuAvailability::kNoDriver;
      d.message = "not measured: no GPU driver";
      d.finding = MakeFinding(
          "gpu.no_driver", v1::SEVERITY_INFO, "not measured: no GPU driver",
          "the CUDA runtime found no driver, and neither /proc/driver/nvidia/version nor "
          "libcuda.so.1 exist on this machine",
          "install the NVIDIA driver if this node should have GPUs");
      d.finding->set_not_measured(true);
      return d;
    }
    d.availability = GpuAvailability::kDriverTooOld;
    d.message = absl::StrCat("driver too old: found ", DriverFound(p), ", this build needs CUDA ",
                             runtime, " \xE2\x86\x92 ", MinimumDriverFor(p.runtime_version),
                             " or newer");
    d.finding = MakeFinding(
        "gpu.driver_too_old", v1::SEVERITY_FAIL, "GPU driver too old for this build", d.message,
        absl::StrCat("upgrade the driver to ", MinimumDriverFor(p.runtime_version),
                     " or newer, or build cmax with a CUDA toolkit the driver supports "
                     "(see benchmarks/cuda/README.md)"));
    d.finding->add_evidence(absl::StrCat("cudaGetDeviceCount: ", p.runtime_error_name.empty()
                                                                     ? "cudaErrorInsufficientDriver"
                                                                     : p.runtime_error_name));
    if (!p.proc_driver_version.empty()) {
      std::string first_line = p.proc_driver_version.substr(0, p.proc_driver_version.find('\n'));
      d.finding->add_evidence(absl::StrCat("/proc/driver/nvidia/version: ", first_line));
    }
    d.finding->add_evidence(absl::StrCat("CUDA runtime ", runtime, ", driver API ",
                                         CudaVersionString(p.driver_api_version)));
    return d;
  }
  d.availability = GpuAvailability::kInitFailed;
  d.message = absl::StrCat("CUDA initialisation failed: ",
                           p.runtime_error_name.empty() ? absl::StrCat("error ", p.runtime_error)
                                                        : p.runtime_error_name,
                           " (runtime ", runtime, ", driver ", DriverFound(p), ")");
  d.finding = MakeFinding("gpu.cuda_init_failed", v1::SEVERITY_FAIL,
                          "CUDA could not initialise the GPUs", d.message,
                          p.runtime_error == kCudaErrorSystemDriverMismatch
                              ? "the kernel module and libcuda versions differ: reboot or "
                                "reinstall the driver so both match"
                              : "check nvidia-smi and the kernel log (Xids) on this node");
  return d;
}

}  // namespace cmax::bench
