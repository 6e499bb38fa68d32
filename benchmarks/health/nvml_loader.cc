#include "benchmarks/health/nvml_loader.h"

#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cmax::health {

using NvmlLibrary = nvml::Library;

namespace {

// Runs one query: OK -> true; NOT_SUPPORTED -> false silently; any other
// code -> false with "<call>: <error>" in state->errors.
bool Ok(NvmlLibrary& lib, nvml::nvmlReturn_t r, const char* call, GpuState* state) {
  if (r == nvml::kSuccess) return true;
  if (r == nvml::kNotSupported) return false;
  if (r == nvml::kGpuIsLost) state->lost = true;
  state->errors.push_back(absl::StrCat(call, ": ", lib.Error(r)));
  return false;
}

std::optional<uint64_t> EccCount(NvmlLibrary& lib, nvml::nvmlDevice_t dev, int type, int counter,
                                 const char* what, GpuState* state) {
  if (!lib.ecc_count) return std::nullopt;
  unsigned long long v = 0;
  if (!Ok(lib, lib.ecc_count(dev, type, counter, &v), what, state)) return std::nullopt;
  return v;
}

std::optional<uint64_t> RetiredPages(NvmlLibrary& lib, nvml::nvmlDevice_t dev, int cause,
                                     GpuState* state) {
  if (!lib.retired_pages) return std::nullopt;
  unsigned int count = 0;
  nvml::nvmlReturn_t r = lib.retired_pages(dev, cause, &count, nullptr);
  if (r == nvml::kInsufficientSize) return count;
  if (!Ok(lib, r, "nvmlDeviceGetRetiredPages", state)) return std::nullopt;
  return count;
}

// Every link NVML answers for: NOT_SUPPORTED or INVALID_ARGUMENT means the
// link does not exist on this GPU (not an error). Error counters that answer
// NOT_SUPPORTED stay nullopt.
// NVLink5 GPUs answer the legacy error counters with NOT_SUPPORTED and give
// their counters as field values scoped to the link.
void QueryNvLink5(NvmlLibrary& lib, nvml::nvmlDevice_t dev, NvLinkState* l, GpuState* s) {
  if (!lib.field_values) return;
  nvml::FieldValue fv[2] = {};
  fv[0].field_id = nvml::kFieldNvLinkRecoveryEvents;
  fv[1].field_id = nvml::kFieldNvLinkEffectiveErrors;
  for (auto& f : fv) f.scope_id = static_cast<unsigned int>(l->link);
  if (!Ok(lib, lib.field_values(dev, 2, fv), "nvmlDeviceGetFieldValues(NVLink)", s)) return;
  double v = 0;
  // Each field carries its own return: NOT_SUPPORTED before NVLink5.
  if (nvml::FieldAsDouble(fv[0], &v) && v >= 0) l->recovery = static_cast<uint64_t>(v);
  if (nvml::FieldAsDouble(fv[1], &v) && v >= 0) l->effective_errors = static_cast<uint64_t>(v);
}

void QueryNvLinks(NvmlLibrary& lib, nvml::nvmlDevice_t dev, GpuState* s) {
  if (!lib.nvlink_state) return;
  for (unsigned int link = 0; link < nvml::kNvLinkMaxLinks; ++link) {
    int active = 0;
    nvml::nvmlReturn_t r = lib.nvlink_state(dev, link, &active);
    if (r == nvml::kNotSupported || r == nvml::kInvalidArgument) continue;
    if (!Ok(lib, r, "nvmlDeviceGetNvLinkState", s)) continue;
    NvLinkState l;
    l.link = static_cast<int>(link);
    l.active = active != 0;
    if (lib.nvlink_error_counter) {
      const std::pair<int, std::optional<uint64_t>*> counters[] = {
          {nvml::kNvLinkErrorReplay, &l.replay},
          {nvml::kNvLinkErrorRecovery, &l.recovery},
          {nvml::kNvLinkErrorCrcFlit, &l.crc_flit},
          {nvml::kNvLinkErrorCrcData, &l.crc_data}};
      for (const auto& [counter, out] : counters) {
        unsigned long long v = 0;
        r = lib.nvlink_error_counter(dev, link, counter, &v);
        if (r == nvml::kInvalidArgument) continue;  // not this link's counter
        if (Ok(lib, r, "nvmlDeviceGetNvLinkErrorCounter", s)) *out = v;
      }
    }
    if (!l.replay && !l.recovery && !l.crc_flit && !l.crc_data) QueryNvLink5(lib, dev, &l, s);
    if (lib.field_values) {
      nvml::FieldValue fv{};
      fv.field_id = nvml::kFieldNvLinkSpeed;
      fv.scope_id = link;
      double mbps = 0;
      // The field's own return is NOT_SUPPORTED where the driver lacks it.
      if (lib.field_values(dev, 1, &fv) == nvml::kSuccess && nvml::FieldAsDouble(fv, &mbps) &&
          mbps > 0) {
        l.speed_mbps = static_cast<uint64_t>(mbps);
      }
    }
    s->nvlinks.push_back(l);
  }
}

// "8-4-4-4-12" lower-case hex of the 16 bytes.
std::string FormatClusterUuid(const unsigned char (&b)[16]) {
  std::string out;
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 0xf]);
  }
  return out;
}

// nvmlDeviceGetGpuFabricInfoV with v3, then v2 (older r550+ drivers answer
// v3 with ARGUMENT_VERSION_MISMATCH), else the unversioned v1 call (no
// health mask).
void QueryFabric(NvmlLibrary& lib, nvml::nvmlDevice_t dev, GpuState* s) {
  unsigned char state = 0;
  int status = 0;
  unsigned int clique = 0;
  unsigned char uuid[16] = {};
  std::optional<uint32_t> mask;
  bool have = false;
  if (lib.fabric_info_v) {
    for (unsigned version : {nvml::kGpuFabricInfoV3, nvml::kGpuFabricInfoV2}) {
      // Room beyond the documented layout, in case a newer library writes more.
      struct {
        nvml::GpuFabricInfoV3 info;
        char slack[256];
      } v;
      std::memset(&v, 0, sizeof(v));
      v.info.version = version;
      nvml::nvmlReturn_t r = lib.fabric_info_v(dev, &v.info);
      if (r == nvml::kArgumentVersionMismatch) continue;
      if (r == nvml::kNotSupported) return;
      if (!Ok(lib, r, "nvmlDeviceGetGpuFabricInfoV", s)) return;
      state = v.info.state;
      status = v.info.status;
      clique = v.info.clique_id;
      std::memcpy(uuid, v.info.cluster_uuid, sizeof(uuid));
      mask = v.info.health_mask;
      have = true;
      break;
    }
  }
  if (!have) {
    if (!lib.fabric_info) return;
    struct {
      nvml::GpuFabricInfo info;
      char slack[256];
    } fabric;
    std::memset(&fabric, 0, sizeof(fabric));
    if (!Ok(lib, lib.fabric_info(dev, &fabric.info), "nvmlDeviceGetGpuFabricInfo", s)) return;
    state = fabric.info.state;
    status = fabric.info.status;
    clique = fabric.info.clique_id;
    std::memcpy(uuid, fabric.info.cluster_uuid, sizeof(uuid));
  }
  if (state == nvml::kFabricNotSupported) return;
  if (state > nvml::kFabricCompleted) {
    s->errors.push_back(
        absl::StrCat("nvmlDeviceGetGpuFabricInfo: unknown state ", static_cast<int>(state)));
    return;
  }
  s->fabric_state = static_cast<FabricState>(state);
  s->fabric_status = status;
  s->fabric_cluster_uuid = FormatClusterUuid(uuid);
  s->fabric_clique_id = clique;
  s->fabric_health_mask = mask;
}

void QueryIdentity(NvmlLibrary& lib, nvml::nvmlDevice_t dev, GpuState* s) {
  char buf[128];
  if (lib.name) {
    std::memset(buf, 0, sizeof(buf));
    if (Ok(lib, lib.name(dev, buf, nvml::kNameBuffer), "nvmlDeviceGetName", s)) s->name = buf;
  }
  if (lib.uuid) {
    std::memset(buf, 0, sizeof(buf));
    if (Ok(lib, lib.uuid(dev, buf, nvml::kUuidBuffer), "nvmlDeviceGetUUID", s)) s->uuid = buf;
  }
  if (lib.pci_info) {
    // Room beyond the documented layout, in case a newer library writes more.
    struct {
      nvml::PciInfo info;
      char slack[256];
    } pci;
    std::memset(&pci, 0, sizeof(pci));
    if (Ok(lib, lib.pci_info(dev, &pci.info), "nvmlDeviceGetPciInfo_v3", s)) {
      pci.info.bus_id[sizeof(pci.info.bus_id) - 1] = '\0';
      s->pci_bus_id = pci.info.bus_id;
    }
  }
}

void QueryDevice(NvmlLibrary& lib, nvml::nvmlDevice_t dev, GpuState* s) {
  QueryIdentity(lib, dev, s);
  if (lib.ecc_mode) {
    int current = 0, pending = 0;
    if (Ok(lib, lib.ecc_mode(dev, &current, &pending), "nvmlDeviceGetEccMode", s)) {
      s->ecc_enabled = current != 0;
    }
  }
  s->volatile_sbe = EccCount(lib, dev, nvml::kMemoryErrorCorrected, nvml::kVolatileEcc,
                             "nvmlDeviceGetTotalEccErrors(corrected, volatile)", s);
  s->volatile_dbe = EccCount(lib, dev, nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc,
                             "nvmlDeviceGetTotalEccErrors(uncorrected, volatile)", s);
  s->aggregate_sbe = EccCount(lib, dev, nvml::kMemoryErrorCorrected, nvml::kAggregateEcc,
                              "nvmlDeviceGetTotalEccErrors(corrected, aggregate)", s);
  s->aggregate_dbe = EccCount(lib, dev, nvml::kMemoryErrorUncorrected, nvml::kAggregateEcc,
                              "nvmlDeviceGetTotalEccErrors(uncorrected, aggregate)", s);
  s->retired_pages_sbe = RetiredPages(lib, dev, nvml::kRetireMultipleSbe, s);
  s->retired_pages_dbe = RetiredPages(lib, dev, nvml::kRetireDbe, s);
  if (lib.remapped_rows) {
    unsigned int corr = 0, unc = 0, pending = 0, failed = 0;
    if (Ok(lib, lib.remapped_rows(dev, &corr, &unc, &pending, &failed),
           "nvmlDeviceGetRemappedRows", s)) {
      s->remapped_rows_correctable = corr;
      s->remapped_rows_uncorrectable = unc;
      s->remap_pending = pending != 0;
      s->remap_failed = failed != 0;
    }
  }
  unsigned int u = 0;
  if (lib.pcie_width && Ok(lib, lib.pcie_width(dev, &u), "nvmlDeviceGetCurrPcieLinkWidth", s)) {
    s->pcie_width = u;
  }
  if (lib.pcie_max_width &&
      Ok(lib, lib.pcie_max_width(dev, &u), "nvmlDeviceGetMaxPcieLinkWidth", s)) {
    s->pcie_max_width = u;
  }
  if (lib.pcie_replays &&
      Ok(lib, lib.pcie_replays(dev, &u), "nvmlDeviceGetPcieReplayCounter", s)) {
    s->pcie_replays = u;
  }
  unsigned long long reasons = 0;
  if (lib.clock_reasons &&
      Ok(lib, lib.clock_reasons(dev, &reasons), "nvmlDeviceGetCurrentClocksEventReasons", s)) {
    s->throttle_reasons = reasons;
  }
  if (lib.temperature &&
      Ok(lib, lib.temperature(dev, nvml::kTemperatureGpu, &u), "nvmlDeviceGetTemperature", s)) {
    s->temperature_c = u;
  }
  if (lib.temperature_threshold) {
    if (Ok(lib, lib.temperature_threshold(dev, nvml::kThresholdSlowdown, &u),
           "nvmlDeviceGetTemperatureThreshold(slowdown)", s)) {
      s->slowdown_temperature_c = u;
    }
    if (Ok(lib, lib.temperature_threshold(dev, nvml::kThresholdShutdown, &u),
           "nvmlDeviceGetTemperatureThreshold(shutdown)", s)) {
      s->shutdown_temperature_c = u;
    }
  }
  if (lib.persistence) {
    int mode = 0;
    if (Ok(lib, lib.persistence(dev, &mode), "nvmlDeviceGetPersistenceMode", s)) {
      s->persistence_mode = mode != 0;
    }
  }
  if (lib.mig_mode) {
    unsigned int current = 0, pending = 0;
    if (Ok(lib, lib.mig_mode(dev, &current, &pending), "nvmlDeviceGetMigMode", s)) {
      s->mig_enabled = current != 0;
    }
  }
  if (lib.processes) {
    // Count only: infoCount 0 with no buffer answers SUCCESS (none running)
    // or INSUFFICIENT_SIZE with the count, so no struct layout is needed.
    unsigned int count = 0;
    nvml::nvmlReturn_t r = lib.processes(dev, &count, nullptr);
    if (r == nvml::kInsufficientSize || Ok(lib, r, "nvmlDeviceGetComputeRunningProcesses_v3", s)) {
      s->compute_processes = count;
    }
  }
  if (lib.violation) {
    nvml::ViolationTime vt{};
    if (Ok(lib, lib.violation(dev, nvml::kPerfPolicyPower, &vt),
           "nvmlDeviceGetViolationStatus(power)", s)) {
      s->violation_power_ns = vt.violation_time;
    }
    if (Ok(lib, lib.violation(dev, nvml::kPerfPolicyThermal, &vt),
           "nvmlDeviceGetViolationStatus(thermal)", s)) {
      s->violation_thermal_ns = vt.violation_time;
    }
  }
  if (lib.field_values) {
    nvml::FieldValue fv{};
    fv.field_id = nvml::kFieldGpuRecoveryAction;
    double action = 0;
    // The field's own return is NOT_SUPPORTED before r570: not an error.
    if (Ok(lib, lib.field_values(dev, 1, &fv), "nvmlDeviceGetFieldValues(recovery action)", s) &&
        nvml::FieldAsDouble(fv, &action) && action >= 0) {
      s->recovery_action = static_cast<uint64_t>(action);
    }
  }
  QueryNvLinks(lib, dev, s);
  QueryFabric(lib, dev, s);
}

}  // namespace

NvmlGpuProbe::NvmlGpuProbe(std::string library, bool fabric_only)
    : library_name_(std::move(library)), fabric_only_(fabric_only) {}
NvmlGpuProbe::~NvmlGpuProbe() = default;

std::string NvmlGpuProbe::Describe() const { return absl::StrCat("NVML (", library_name_, ")"); }

absl::StatusOr<GpuInventory> NvmlGpuProbe::Probe() {
  if (!lib_) {
    auto lib = nvml::Library::Open(library_name_);
    if (!lib.ok()) return lib.status();
    lib_ = std::move(*lib);
  }
  NvmlLibrary& lib = *lib_;
  GpuInventory inv;
  if (lib.driver_version) {
    char buf[128] = {};
    if (lib.driver_version(buf, nvml::kDriverBuffer) == nvml::kSuccess) inv.driver_version = buf;
  }
  unsigned int count = 0;
  if (nvml::nvmlReturn_t r = lib.count(&count); r != nvml::kSuccess) {
    return absl::InternalError(absl::StrCat("nvmlDeviceGetCount_v2: ", lib.Error(r)));
  }
  for (unsigned int i = 0; i < count; ++i) {
    GpuState s;
    s.index = static_cast<int>(i);
    nvml::nvmlDevice_t dev = nullptr;
    if (Ok(lib, lib.handle_by_index(i, &dev), "nvmlDeviceGetHandleByIndex_v2", &s)) {
      if (fabric_only_) {
        QueryIdentity(lib, dev, &s);
        QueryFabric(lib, dev, &s);
      } else {
        QueryDevice(lib, dev, &s);
      }
    }
    inv.gpus.push_back(std::move(s));
  }
  return inv;
}

}  // namespace cmax::health
