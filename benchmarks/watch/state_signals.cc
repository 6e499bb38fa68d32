#include "benchmarks/watch/state_signals.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace cmax::watch {
namespace {

v1::Finding Make(const std::string& check_id, v1::Severity severity, const std::string& category,
                 const std::string& subject, std::string title) {
  v1::Finding f;
  f.set_check_id(check_id);
  f.set_severity(severity);
  f.set_category(category);
  f.set_subject(subject);
  f.set_title(std::move(title));
  return f;
}

void MarkAtStart(bool first, v1::Finding* f) {
  if (first) (*f->mutable_labels())["at_start"] = "true";
}

}  // namespace

// ---------------------------------------------------------------- units

UnitStates ParseSystemctlShow(const std::string& text) {
  UnitStates out;
  std::map<std::string, std::string> block;
  auto flush = [&] {
    auto id = block.find("Id");
    if (id != block.end() && !id->second.empty()) {
      out[id->second] = {block["ActiveState"], block["SubState"], block["Result"],
                         block["LoadState"]};
    }
    block.clear();
  };
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty()) {
      flush();
      continue;
    }
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    block[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  flush();
  return out;
}

std::vector<v1::Finding> UnitFindings(const UnitStates& before, const UnitStates& now) {
  std::vector<v1::Finding> out;
  for (const auto& [name, state] : now) {
    if (state.load_state == "not-found") continue;
    auto it = before.find(name);
    bool was_active = it == before.end() || it->second.active_state == "active" ||
                      it->second.active_state.empty();
    bool first = it == before.end();
    bool is_active = state.active_state == "active" || state.active_state == "reloading";
    if (was_active && !is_active && state.active_state != "activating") {
      v1::Finding f = Make("watch.service.failed", v1::SEVERITY_FAIL, "reliability",
                           absl::StrCat("unit:", name),
                           absl::StrCat(name, " is ", state.active_state, " (", state.sub_state,
                                        state.result.empty() || state.result == "success"
                                            ? ""
                                            : absl::StrCat(", result ", state.result),
                                        ")"));
      f.add_evidence(absl::StrCat("ActiveState=", state.active_state, " SubState=",
                                  state.sub_state, " Result=", state.result));
      f.set_action(absl::StrCat("journalctl -u ", name, "; restart it (systemctl restart ", name,
                                ") or let the remediation policy do it"));
      (*f.mutable_labels())["unit"] = name;
      MarkAtStart(first, &f);
      out.push_back(std::move(f));
    } else if (!first && !was_active && is_active) {
      v1::Finding f = Make("watch.service.recovered", v1::SEVERITY_INFO, "reliability",
                           absl::StrCat("unit:", name), absl::StrCat(name, " is active again"));
      (*f.mutable_labels())["unit"] = name;
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::vector<std::string> NotInstalled(const UnitStates& now) {
  std::vector<std::string> out;
  for (const auto& [name, state] : now) {
    if (state.load_state == "not-found") out.push_back(name);
  }
  return out;
}

// --------------------------------------------------------- file systems

FsStates ReadFilesystems(const Sysroot& root, const std::vector<std::string>& mounts,
                         std::vector<std::string>* errors) {
  FsStates out;
  for (const std::string& m : mounts) {
    struct statvfs s {};
    std::string path = root.Path(m);
    if (::statvfs(path.c_str(), &s) != 0) {
      errors->push_back(absl::StrCat("statvfs ", path, ": ", std::strerror(errno)));
      continue;
    }
    FsState st;
    // As df computes Use%: used / (used + available to unprivileged users).
    double used = static_cast<double>(s.f_blocks - s.f_bfree);
    double usable = used + static_cast<double>(s.f_bavail);
    st.used_percent = usable > 0 ? 100.0 * used / usable : 0;
    st.readonly = (s.f_flag & ST_RDONLY) != 0;
    out[m] = st;
  }
  return out;
}

std::vector<v1::Finding> FsFindings(const FsStates& before, const FsStates& now,
                                    double full_percent) {
  std::vector<v1::Finding> out;
  for (const auto& [mount, st] : now) {
    auto it = before.find(mount);
    bool first = it == before.end();
    FsState prev = first ? FsState{} : it->second;
    if (st.used_percent >= full_percent && prev.used_percent < full_percent) {
      v1::Finding f = Make("watch.fs.full", v1::SEVERITY_FAIL, "storage",
                           absl::StrCat("path:", mount),
                           absl::StrFormat("%s is %.1f %% full (threshold %.0f %%)", mount,
                                           st.used_percent, full_percent));
      f.set_action(absl::StrCat("free space on ", mount, " (du -xh --max-depth=2 ", mount, ")"));
      (*f.mutable_labels())["mount"] = mount;
      MarkAtStart(first, &f);
      out.push_back(std::move(f));
    }
    if (st.readonly && !prev.readonly) {
      v1::Finding f = Make("watch.fs.readonly", v1::SEVERITY_FAIL, "storage",
                           absl::StrCat("path:", mount), absl::StrCat(mount, " is read-only"));
      f.set_action("check the kernel log for the error that remounted it; fsck, then remount");
      (*f.mutable_labels())["mount"] = mount;
      MarkAtStart(first, &f);
      out.push_back(std::move(f));
    }
  }
  return out;
}

// ---------------------------------------------------------------- ports

namespace {

uint64_t Counter(const health::IbPort& p, const char* name) {
  auto it = p.counters.find(name);
  return it == p.counters.end() ? 0 : it->second;
}

std::string PortId(const health::IbPort& p) { return absl::StrCat(p.device, "/", p.port); }

}  // namespace

std::vector<v1::Finding> PortFindings(const std::vector<health::IbPort>& before,
                                      const std::vector<health::IbPort>& now) {
  std::map<std::string, const health::IbPort*> prev;
  for (const auto& p : before) prev[PortId(p)] = &p;
  std::vector<v1::Finding> out;
  for (const auto& p : now) {
    auto it = prev.find(PortId(p));
    bool first = it == prev.end();
    bool active = absl::StrContains(p.state, "ACTIVE");
    bool was_active = first || absl::StrContains(it->second->state, "ACTIVE");
    std::string subject = absl::StrCat("port:", PortId(p));
    if (was_active && !active) {
      v1::Finding f = Make("watch.ib.port_down", v1::SEVERITY_FAIL, "networking", subject,
                           absl::StrCat(PortId(p), " is ", p.state, " (", p.phys_state, ")"));
      f.set_action("check the cable, transceiver and switch port (ibstat, mlxlink)");
      (*f.mutable_labels())["port"] = PortId(p);
      MarkAtStart(first, &f);
      out.push_back(std::move(f));
    }
    if (first) continue;
    uint64_t downed = Counter(p, "link_downed"), downed0 = Counter(*it->second, "link_downed");
    if (downed > downed0) {
      v1::Finding f = Make("watch.ib.link_flap", v1::SEVERITY_WARN, "networking", subject,
                           absl::StrCat(PortId(p), " went down and up ", downed - downed0,
                                        " time(s)"));
      f.add_evidence(absl::StrCat("link_downed ", downed0, " -> ", downed));
      (*f.mutable_labels())["port"] = PortId(p);
      out.push_back(std::move(f));
    }
    for (const char* c : {"symbol_error", "port_rcv_errors", "link_error_recovery"}) {
      uint64_t v = Counter(p, c), v0 = Counter(*it->second, c);
      if (v <= v0) continue;
      v1::Finding f = Make("watch.ib.errors", v1::SEVERITY_WARN, "networking", subject,
                           absl::StrCat(PortId(p), ": ", c, " rose by ", v - v0));
      f.add_evidence(absl::StrCat(c, " ", v0, " -> ", v));
      (*f.mutable_labels())["port"] = PortId(p);
      (*f.mutable_labels())["counter"] = c;
      out.push_back(std::move(f));
    }
  }
  return out;
}

// ----------------------------------------------------------------- GPUs

namespace {

v1::Finding GpuFinding(const health::GpuState& g, const char* check, v1::Severity severity,
                       const std::string& what, const char* action) {
  v1::Finding f = Make(check, severity, "reliability", absl::StrCat("gpu:", g.index),
                       absl::StrCat("GPU ", g.index, " (", g.pci_bus_id, "): ", what));
  f.set_action(action);
  (*f.mutable_labels())["gpu"] = absl::StrCat(g.index);
  if (!g.uuid.empty()) (*f.mutable_labels())["uuid"] = g.uuid;
  if (!g.pci_bus_id.empty()) (*f.mutable_labels())["pci_bus_id"] = g.pci_bus_id;
  return f;
}

bool Rose(const std::optional<uint64_t>& before, const std::optional<uint64_t>& now) {
  return now && *now > before.value_or(0);
}

// HwSlowdown 0x8, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80
// (nvmlClocksEventReasons): the hardware slowed the clocks, not the software.
constexpr uint64_t kHwThrottle = 0x8 | 0x40 | 0x80;

void CompareGpu(const health::GpuState& b, const health::GpuState& g, bool first,
                std::vector<v1::Finding>* out) {
  auto add = [&](v1::Finding f) {
    MarkAtStart(first, &f);
    out->push_back(std::move(f));
  };
  if (g.lost && !b.lost) {
    add(GpuFinding(g, "watch.gpu.lost", v1::SEVERITY_CRITICAL, "the driver says the GPU is lost",
                   "drain the node and reboot it; inspect the GPU if it recurs"));
    return;
  }
  if (g.remap_failed.value_or(false) && !b.remap_failed.value_or(false)) {
    add(GpuFinding(g, "watch.gpu.remap_failed", v1::SEVERITY_CRITICAL,
                   "row remapping failed: the memory cannot be repaired",
                   "drain the node; the GPU needs replacing (RMA)"));
  }
  if (g.remap_pending.value_or(false) && !b.remap_pending.value_or(false)) {
    add(GpuFinding(g, "watch.gpu.remap_pending", v1::SEVERITY_FAIL,
                   "a row remap is pending: it takes effect at the next GPU reset",
                   "drain the node and reset the GPU (nvidia-smi -r) once it is idle"));
  }
  if (!first && Rose(b.volatile_dbe, g.volatile_dbe)) {
    add(GpuFinding(g, "watch.gpu.ecc_dbe", v1::SEVERITY_FAIL,
                   absl::StrCat("uncorrectable ECC errors rose to ", *g.volatile_dbe),
                   "drain the node and reset the GPU; replace it if errors recur"));
  }
  if (!first && Rose(b.retired_pages_dbe, g.retired_pages_dbe)) {
    add(GpuFinding(g, "watch.gpu.retired_pages", v1::SEVERITY_FAIL,
                   absl::StrCat("pages retired for double-bit errors: ", *g.retired_pages_dbe),
                   "drain the node and reset the GPU so the retirement takes effect"));
  }
  uint64_t hw = g.throttle_reasons.value_or(0) & kHwThrottle;
  uint64_t hw0 = b.throttle_reasons.value_or(0) & kHwThrottle;
  if (hw != 0 && hw0 == 0) {
    v1::Finding f = GpuFinding(g, "watch.gpu.throttle", v1::SEVERITY_WARN,
                               absl::StrFormat("hardware clock slowdown (reasons 0x%x)", hw),
                               "check cooling and power delivery (nvidia-smi -q -d PERFORMANCE)");
    (*f.mutable_labels())["throttle_reasons"] = absl::StrFormat("0x%x", hw);
    add(std::move(f));
  }
}

}  // namespace

std::vector<v1::Finding> GpuFindings(const health::GpuInventory& before,
                                     const health::GpuInventory& now, bool first) {
  std::map<int, const health::GpuState*> prev;
  for (const auto& g : before.gpus) prev[g.index] = &g;
  std::map<int, const health::GpuState*> cur;
  for (const auto& g : now.gpus) cur[g.index] = &g;
  std::vector<v1::Finding> out;
  health::GpuState healthy;
  for (const auto& g : now.gpus) {
    auto it = prev.find(g.index);
    CompareGpu(it == prev.end() ? healthy : *it->second, g, first || it == prev.end(), &out);
  }
  for (const auto& [index, g] : prev) {
    if (cur.count(index)) continue;
    out.push_back(GpuFinding(*g, "watch.gpu.missing", v1::SEVERITY_CRITICAL,
                             "no longer seen by the driver (fallen off the bus?)",
                             "drain the node and reboot it; inspect the GPU if it recurs"));
  }
  return out;
}

}  // namespace cmax::watch
