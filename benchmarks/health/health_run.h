// All passive health checks on one system root, without output: what
// `cmax-bench health` runs and what the tests call directly.
#ifndef CMAX_BENCHMARKS_HEALTH_HEALTH_RUN_H_
#define CMAX_BENCHMARKS_HEALTH_HEALTH_RUN_H_

#include <cstddef>

#include "benchmarks/health/gpu_probe.h"
#include "benchmarks/health/health_result.h"
#include "benchmarks/health/kernel_log.h"
#include "benchmarks/health/thresholds.h"
#include "benchmarks/health/xid_catalog.h"
#include "common/sysroot.h"

namespace cmax::health {

struct HealthOptions {
  int expect_gpus = -1;  // < 0: no expectation
  HealthThresholds thresholds;
  KernelLogOptions kernel_log;
};

struct HealthRun {
  HealthResult result;
  bool gpus_measured = false;
  bool kernel_log_measured = false;
  size_t pci_gpus = 0;
};

// `probe` may be null: then NVML on the real root, the fixture's
// cmax-fixture/gpus.yaml on another root, or "not measured" without either.
HealthRun RunHealthChecks(const Sysroot& root, const XidCatalog& catalog,
                          const HealthOptions& options, GpuProbe* probe = nullptr);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_HEALTH_RUN_H_
