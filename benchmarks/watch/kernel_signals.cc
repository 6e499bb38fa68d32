#include "benchmarks/watch/kernel_signals.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace cmax::watch {
namespace {

v1::Finding Base(const char* check_id, v1::Severity severity, const char* category,
                 const health::KernelLogLine& line) {
  v1::Finding f;
  f.set_check_id(check_id);
  f.set_severity(severity);
  f.set_category(category);
  f.set_subject("node");
  f.add_evidence(line.text);
  return f;
}

std::optional<v1::Finding> XidFinding(const health::KernelLogLine& line,
                                      const health::XidCatalog& catalog) {
  std::vector<health::XidEvent> events = health::ParseXidEvents({line});
  if (events.empty()) return std::nullopt;
  const health::XidEvent& e = events.front();
  health::XidInfo info = e.sxid ? catalog.ForSxid(e.code, e.fatal) : catalog.Lookup(e.code);
  v1::Finding f = Base(e.sxid ? "watch.sxid" : "watch.xid", info.severity, "reliability", line);
  std::string where = e.pci.empty() ? "" : absl::StrCat(" on ", e.sxid ? "NVSwitch " : "GPU ", e.pci);
  f.set_title(absl::StrCat(e.sxid ? "SXid " : "Xid ", e.code, where, ": ", info.name));
  f.set_detail(info.advice);
  f.set_action(health::ActionWords(info.action));
  if (!e.pci.empty()) {
    f.set_subject(absl::StrCat(e.sxid ? "nvswitch:" : "gpu:", e.pci));
    (*f.mutable_labels())["gpu_pci"] = e.pci;
  }
  (*f.mutable_labels())[e.sxid ? "sxid" : "xid"] = absl::StrCat(e.code);
  if (!info.action.empty()) (*f.mutable_labels())["xid_action"] = info.action;
  if (!info.source.empty()) f.add_links(info.source);
  return f;
}

bool AnyOf(const std::string& text, std::initializer_list<const char*> needles) {
  for (const char* n : needles) {
    if (absl::StrContains(text, n)) return true;
  }
  return false;
}

}  // namespace

std::optional<v1::Finding> KernelLineFinding(const health::KernelLogLine& line,
                                             const health::XidCatalog& catalog) {
  const std::string& t = line.text;
  // An Xid line first (Xid 79 says "fallen off the bus" too): the
  // catalogue knows its severity and action.
  if (auto xid = XidFinding(line, catalog)) return xid;
  if (absl::StrContains(t, "fallen off the bus")) {
    v1::Finding f = Base("watch.gpu.off_bus", v1::SEVERITY_CRITICAL, "reliability", line);
    f.set_title("a GPU has fallen off the bus");
    f.set_detail("the driver lost the GPU on PCIe; it answers nothing until the node is reset");
    f.set_action("drain the node and reboot it; if it recurs, inspect the GPU and its riser");
    return f;
  }
  if (AnyOf(t, {"[Hardware Error]", "Machine check events logged", "Machine Check Exception"})) {
    v1::Finding f = Base("watch.mce", v1::SEVERITY_FAIL, "reliability", line);
    f.set_title("machine check: the CPU or memory reported a hardware error");
    f.set_action("read the BMC's event log and rasdaemon's records; replace the failing DIMM or CPU");
    return f;
  }
  if (absl::StrContains(t, "AER:") && absl::StrContains(t, "error")) {
    bool corrected = absl::StrContains(t, "Corrected") && !absl::StrContains(t, "Uncorrected");
    if (!corrected && !AnyOf(t, {"Uncorrected", "Fatal", "Non-Fatal"})) return std::nullopt;
    v1::Finding f = Base("watch.pcie.aer", corrected ? v1::SEVERITY_WARN : v1::SEVERITY_FAIL,
                         "reliability", line);
    f.set_title(corrected ? "PCIe corrected error (AER)" : "PCIe uncorrected error (AER)");
    f.set_action(corrected ? "watch the rate; many corrected errors precede a link failure"
                           : "drain the node; reseat or replace the device or riser the line names");
    return f;
  }
  if (AnyOf(t, {"Remounting filesystem read-only", "remounted read-only", "remount-ro",
                "Shutting down filesystem", "shutting down filesystem"})) {
    v1::Finding f = Base("watch.fs.readonly", v1::SEVERITY_FAIL, "storage", line);
    f.set_title("a file system went read-only after an error");
    f.set_action("check the device (smartctl, nvme smart-log), fsck it, then remount");
    return f;
  }
  return std::nullopt;
}

}  // namespace cmax::watch
