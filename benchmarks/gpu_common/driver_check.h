// What the CUDA runtime's first answer means for a GPU suite, as a pure
// function so it can be tested on machines without a GPU or a driver.
//
// The CUDA runtime answers cudaErrorInsufficientDriver both when the NVIDIA
// driver is older than the runtime needs (e.g. an R550 node and a CUDA 13
// build) and when there is no driver at all. The two are told apart by the
// driver's own files (/proc/driver/nvidia/version, libcuda.so.1): a driver
// that is present but too old is a loud FAIL naming the version found and the
// minimum the build needs, never a silent "no GPU" (shared REFERENCES.md,
// "Pitfalls seen in the field").
//
// This file needs no CUDA headers: error codes are passed as ints, with the
// values of the CUDA runtime's cudaError enum (stable across CUDA 11-13;
// benchmarks/cuda/cuda_env.cc static_asserts that they match).
#ifndef CMAX_BENCHMARKS_GPU_COMMON_DRIVER_CHECK_H_
#define CMAX_BENCHMARKS_GPU_COMMON_DRIVER_CHECK_H_

#include <optional>
#include <string>

#include "cmax/v1/record.pb.h"

namespace cmax::bench {

inline constexpr int kCudaSuccess = 0;
inline constexpr int kCudaErrorInsufficientDriver = 35;
inline constexpr int kCudaErrorNoDevice = 100;
inline constexpr int kCudaErrorSystemDriverMismatch = 803;

// Everything the decision needs, gathered by cuda_env.cc (or faked by tests).
struct DriverProbe {
  int runtime_error = kCudaSuccess;  // cudaGetDeviceCount's return value
  std::string runtime_error_name;    // cudaGetErrorName of it, for messages
  int device_count = 0;              // valid when runtime_error == 0
  bool driver_files_present = false; // /proc/driver/nvidia/version or libcuda.so.1
  // Contents of /proc/driver/nvidia/version (may be empty, e.g. in containers
  // where only libcuda is mounted).
  std::string proc_driver_version;
  int driver_api_version = 0;   // cudaDriverGetVersion: 12020 = CUDA 12.2; 0 none
  int runtime_version = 0;      // cudaRuntimeGetVersion: 13000 = CUDA 13.0
};

enum class GpuAvailability {
  kReady,          // at least one device: run
  kNoDriver,       // no NVIDIA driver on this machine: not measured
  kNoDevice,       // driver present (or runtime says so) but no GPU: not measured
  kDriverTooOld,   // driver present, older than this build's runtime needs
  kInitFailed,     // any other CUDA error at start (driver/library mismatch, ...)
};

struct DriverDecision {
  GpuAvailability availability = GpuAvailability::kReady;
  // A finding to write (unset when ready). Severity: FAIL for a driver too old
  // or a failed initialisation, WARN for a driver without a visible GPU, INFO
  // for a machine without a driver or a GPU. gpu.no_device and gpu.no_driver
  // have not_measured set (the GPU suite could not run: never a pass, and the
  // WARN is a hint, not a grade). Category "compute"; CheckCudaReady
  // (cuda_env.h) writes it under the running suite's category.
  std::optional<v1::Finding> finding;
  std::string message;  // one line for stderr / the human output
  int exit_code = 0;    // 0 when ready, else 2 (could not run)
};

DriverDecision DecideDriver(const DriverProbe& probe);

// "535.183.01" from the text of /proc/driver/nvidia/version, empty if none.
// Formats seen: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  ..."
// and "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  ...".
std::string ParseProcDriverVersion(const std::string& text);

// "13.0" from 13000.
std::string CudaVersionString(int version);

// The oldest driver branch a runtime of this version runs on, e.g. "R580
// (580.65.06)" for CUDA 13.x. Source: CUDA Toolkit Release Notes, table
// "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version
// Compatibility" (docs.nvidia.com/cuda/cuda-toolkit-release-notes):
// 13.x >= 580, 12.x >= 525.60.13, 11.x >= 450.80.02 (Linux).
std::string MinimumDriverFor(int runtime_version);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_DRIVER_CHECK_H_
