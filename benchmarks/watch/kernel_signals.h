// What one kernel log line says about the node's health, as a finding of the
// passive watch (watch.h). Pure functions: no I/O.
//
// Classes (check ids, matched by remediation policies, docs/remediation.md):
//   watch.xid           NVIDIA Xid, severity and action from the Xid catalogue
//   watch.sxid          NVSwitch SXid (fatal: fail, non-fatal: warn)
//   watch.gpu.off_bus   "GPU has fallen off the bus" (critical), with or without an Xid
//   watch.mce           machine check ("[Hardware Error]", "Machine check events logged")
//   watch.pcie.aer      PCIe AER: uncorrected (fatal/non-fatal) fail, corrected warn
//   watch.fs.readonly   a file system remounted read-only or shut down by its driver
// Message shapes are the kernel's (drivers/pci/pcie/aer.c "AER: ... error
// message received", arch/x86/kernel/cpu/mce "Machine check events logged",
// fs/ext4 "Remounting filesystem read-only", fs/xfs "shutting down
// filesystem", NVIDIA's "NVRM: ... fallen off the bus").
#ifndef CMAX_BENCHMARKS_WATCH_KERNEL_SIGNALS_H_
#define CMAX_BENCHMARKS_WATCH_KERNEL_SIGNALS_H_

#include <optional>

#include "benchmarks/health/kernel_log.h"
#include "benchmarks/health/xid_catalog.h"
#include "cmax/v1/record.pb.h"

namespace cmax::watch {

// The finding `line` raises, or nullopt for a line that says nothing the
// watch acts on. The finding has check_id, severity, category, subject,
// title, detail, evidence (the line), action and labels (xid, gpu_pci where
// they apply); the caller adds the signal's time.
std::optional<v1::Finding> KernelLineFinding(const health::KernelLogLine& line,
                                             const health::XidCatalog& catalog);

}  // namespace cmax::watch

#endif  // CMAX_BENCHMARKS_WATCH_KERNEL_SIGNALS_H_
