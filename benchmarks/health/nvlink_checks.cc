#include "benchmarks/health/nvlink_checks.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/health/gpu_checks.h"

namespace cmax::health {
namespace {

constexpr char kNvLinkDoc[] = "https://docs.nvidia.com/deploy/nvml-api/group__NvLink.html";
constexpr char kResetAction[] =
    "reset GPU (nvidia-smi -r when idle) and rerun health; if the link stays down or the "
    "errors grow, drain and inspect hardware: reseat the GPU/baseboard, and ask the provider to "
    "inspect the NVLink and NVSwitch";

constexpr char kErrorsAction[] =
    "compare the count after a load (burn-in) with this one: if it grows, reset GPU and rerun; "
    "if it still grows, drain and inspect hardware: reseat the GPU/baseboard, and ask the "
    "provider to inspect the NVLink and NVSwitch";

struct Counter {
  const char* name;  // label and metric stem
  std::optional<uint64_t> NvLinkState::*value;
  int64_t HealthThresholds::*warn;
};

constexpr Counter kCounters[] = {
    {"replay", &NvLinkState::replay, &HealthThresholds::nvlink_replay_warn},
    {"recovery", &NvLinkState::recovery, &HealthThresholds::nvlink_recovery_warn},
    {"crc_flit", &NvLinkState::crc_flit, &HealthThresholds::nvlink_crc_flit_warn},
    {"crc_data", &NvLinkState::crc_data, &HealthThresholds::nvlink_crc_data_warn},
    {"effective", &NvLinkState::effective_errors, &HealthThresholds::nvlink_effective_errors_warn},
};

void MeasureLinks(const GpuState& g, int active, int down, HealthResult* r) {
  auto labels = GpuLabels(g);
  r->Measure("nvlink_links_active", active, "count", labels);
  r->Measure("nvlink_links_down", down, "count", labels);
  for (const Counter& c : kCounters) {
    uint64_t sum = 0;
    bool any = false;
    for (const NvLinkState& l : g.nvlinks) {
      if (const auto& v = l.*c.value) {
        sum += *v;
        any = true;
      }
    }
    if (any) {
      r->Measure(absl::StrCat("nvlink_", c.name, "_errors"), static_cast<double>(sum), "count",
                 labels);
    }
  }
}

void CheckCounters(const GpuState& g, const NvLinkState& l, const HealthThresholds& t,
                   HealthResult* r) {
  std::vector<std::string> over;
  for (const Counter& c : kCounters) {
    const auto& v = l.*c.value;
    int64_t warn = t.*c.warn;
    if (v && warn > 0 && static_cast<int64_t>(*v) >= warn) {
      over.push_back(absl::StrCat(c.name, " ", *v, " (threshold ", warn, ")"));
    }
  }
  if (over.empty()) return;
  v1::Finding& f = GpuFinding(
      r, g, "health.nvlink_errors", v1::SEVERITY_WARN, "reliability",
      absl::StrCat(GpuWho(g), " NVLink ", l.link, ": ", absl::StrJoin(over, ", ")),
      "NVLink error counters since the driver loaded (nvmlDeviceGetNvLinkErrorCounter, or the "
      "NVLink5 field values); "
      "compare the change over a run: a growing count is a marginal link",
      kErrorsAction, kNvLinkDoc);
  (*f.mutable_labels())["nvlink"] = absl::StrCat(l.link);
  for (const auto& o : over) f.add_evidence(absl::StrCat("link ", l.link, ": ", o));
}

}  // namespace

void CheckNvLinks(const GpuState& g, const HealthThresholds& t, bool nvswitches_present,
                  HealthResult* r) {
  if (g.lost || g.nvlinks.empty()) return;
  int active = 0;
  std::vector<int> down;
  for (const NvLinkState& l : g.nvlinks) {
    if (l.active) {
      ++active;
    } else {
      down.push_back(l.link);
    }
  }
  MeasureLinks(g, active, static_cast<int>(down.size()), r);
  if (active == 0 && !nvswitches_present) {
    GpuFinding(r, g, "health.nvlink_none_active", v1::SEVERITY_WARN, "reliability",
               absl::StrCat(GpuWho(g), ": none of its ", g.nvlinks.size(), " NVLinks is active"),
               "no NVSwitch on this node: a PCIe card without its NVLink bridge looks like this",
               absl::StrCat("if this GPU should have NVLink peers (SXM board, bridged pair): ",
                            kResetAction),
               kNvLinkDoc);
  } else {
    for (int link : down) {
      v1::Finding& f = GpuFinding(
          r, g, "health.nvlink_down", v1::SEVERITY_FAIL, "reliability",
          absl::StrCat(GpuWho(g), ": NVLink ", link, " is down"),
          absl::StrCat(active, " of the GPU's ", g.nvlinks.size(),
                       " NVLinks are active (nvmlDeviceGetNvLinkState); traffic over this link "
                       "falls back to fewer links or PCIe"),
          kResetAction, kNvLinkDoc);
      (*f.mutable_labels())["nvlink"] = absl::StrCat(link);
    }
  }
  for (const NvLinkState& l : g.nvlinks) CheckCounters(g, l, t, r);
}

void CheckNvLinkPlatform(const GpuState& g, const NvLinkPlatform* p, HealthResult* r) {
  if (!p || g.lost || g.nvlinks.empty()) return;
  auto labels = GpuLabels(g);
  labels["platform"] = p->name;
  r->Measure("nvlink_links_expected", p->links, "count", labels);
  if (static_cast<int>(g.nvlinks.size()) < p->links) {
    std::vector<int> missing;
    for (int link = 0; link < p->links; ++link) {
      bool seen = false;
      for (const NvLinkState& l : g.nvlinks) seen = seen || l.link == link;
      if (!seen) missing.push_back(link);
    }
    v1::Finding& f = GpuFinding(
        r, g, "health.nvlink_count", v1::SEVERITY_FAIL, "reliability",
        absl::StrCat(GpuWho(g), ": ", g.nvlinks.size(), " NVLinks, ", p->name, " GPUs have ",
                     p->links),
        absl::StrCat("NVML reports no state at all for link(s) ", absl::StrJoin(missing, ", "),
                     " (nvmlDeviceGetNvLinkState: NOT_SUPPORTED / INVALID_ARGUMENT): the link is "
                     "disabled or missing, so traffic has fewer links than the platform's ",
                     p->links, " (data/nvlink_platforms.yaml)"),
        kResetAction, kNvLinkDoc);
    (*f.mutable_labels())["platform"] = p->name;
    (*f.mutable_labels())["nvlinks_missing"] = absl::StrJoin(missing, ",");
    f.add_evidence(absl::StrCat("links reported: ", g.nvlinks.size(), ", expected ", p->links));
  }
  if (p->link_gbps <= 0) return;
  std::optional<double> slowest;
  std::vector<std::string> slow;
  std::vector<int> slow_links;
  const double floor_gbps = p->link_gbps * 0.99;
  for (const NvLinkState& l : g.nvlinks) {
    if (!l.active || !l.speed_mbps) continue;
    const double gbps = static_cast<double>(*l.speed_mbps) / 1000.0;
    if (!slowest || gbps < *slowest) slowest = gbps;
    if (gbps < floor_gbps) {
      slow.push_back(absl::StrCat("link ", l.link, ": ", gbps, " GB/s"));
      slow_links.push_back(l.link);
    }
  }
  if (slowest) r->Measure("nvlink_link_speed_min", *slowest, "GB/s", labels);
  if (slow.empty()) return;
  v1::Finding& f = GpuFinding(
      r, g, "health.nvlink_speed", v1::SEVERITY_WARN, "reliability",
      absl::StrCat(GpuWho(g), ": NVLink ", absl::StrJoin(slow_links, ", "), " below ",
                   p->link_gbps, " GB/s"),
      absl::StrCat(slow.size(), " active link(s) run below the ", p->name, " link speed of ",
                   p->link_gbps, " GB/s per direction (NVML_FI_DEV_NVLINK_GET_SPEED; "
                   "data/nvlink_platforms.yaml): the GPU's NVLink bandwidth is reduced"),
      kResetAction, kNvLinkDoc);
  (*f.mutable_labels())["platform"] = p->name;
  (*f.mutable_labels())["nvlinks_slow"] = absl::StrJoin(slow_links, ",");
  for (const auto& e : slow) f.add_evidence(e);
}

}  // namespace cmax::health
