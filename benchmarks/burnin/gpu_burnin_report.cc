#include "benchmarks/burnin/gpu_burnin_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace cmax::bench {
namespace {

struct ReasonName {
  uint64_t bit;
  const char* name;
};
constexpr ReasonName kReasonNames[] = {
    {kReasonGpuIdle, "gpu_idle"},           {kReasonApplicationsClocks, "applications_clocks"},
    {kReasonSwPowerCap, "sw_power_cap"},    {kReasonHwSlowdown, "hw_slowdown"},
    {kReasonSyncBoost, "sync_boost"},       {kReasonSwThermal, "sw_thermal_slowdown"},
    {kReasonHwThermal, "hw_thermal_slowdown"}, {kReasonHwPowerBrake, "hw_power_brake"},
    {kReasonDisplayClock, "display_clock"},
};

// At most this many lines of each kind go into an Artifact.
constexpr size_t kMaxEvidenceLines = 100;
constexpr size_t kMaxFindingLines = 5;

// Builds the Findings of one subject (a GPU or the node) and remembers
// whether any failed.
class FindingSink {
 public:
  FindingSink(const BurninContext& ctx, std::string subject,
              std::map<std::string, std::string> labels, std::string whom, RecordWriter* out)
      : ctx_(ctx), subject_(std::move(subject)), labels_(std::move(labels)),
        whom_(std::move(whom)), out_(out) {}
  void Add(const std::string& id, v1::Severity sev, const std::string& title,
           const std::string& detail, const std::string& action,
           const std::map<std::string, std::string>& extra_labels = {},
           const std::vector<std::string>& extra_evidence = {}) {
    Write(id, sev, false, title, detail, action, extra_labels, extra_evidence);
  }
  // A check that could not run: an INFO finding with not_measured set
  // (record.proto), never a pass.
  void NotMeasured(const std::string& id, const std::string& title, const std::string& detail,
                   const std::string& action) {
    Write(id, v1::SEVERITY_INFO, true, title, detail, action, {}, {});
  }
  bool failed() const { return failed_; }

 private:
  void Write(const std::string& id, v1::Severity sev, bool not_measured, const std::string& title,
             const std::string& detail, const std::string& action,
             const std::map<std::string, std::string>& extra_labels,
             const std::vector<std::string>& extra_evidence) {
    v1::Finding f;
    f.set_check_id(id);
    f.set_severity(sev);
    f.set_not_measured(not_measured);
    f.set_category("reliability");
    f.set_subject(subject_);
    f.set_title(title);
    f.set_detail(detail);
    f.add_evidence(ctx_.command);
    f.add_evidence(whom_);
    for (const auto& e : extra_evidence) f.add_evidence(e);
    f.set_action(action);
    for (const auto& [k, v] : labels_) (*f.mutable_labels())[k] = v;
    for (const auto& [k, v] : extra_labels) (*f.mutable_labels())[k] = v;
    (*f.mutable_labels())["node"] = ctx_.node;
    if (sev == v1::SEVERITY_FAIL || sev == v1::SEVERITY_CRITICAL) failed_ = true;
    out_->Find(f);
  }

  const BurninContext& ctx_;
  std::string subject_;
  std::map<std::string, std::string> labels_;
  std::string whom_;
  RecordWriter* out_;
  bool failed_ = false;
};

std::string XidWord(bool sxid) { return sxid ? "SXid" : "Xid"; }

XidMeaning Meaning(const BurninContext& ctx, const BurninXid& x) {
  if (ctx.xid_lookup) return ctx.xid_lookup(x);
  XidMeaning m;
  m.name = absl::StrCat("unknown ", XidWord(x.sxid), " ", x.code);
  m.action = "check the application";
  m.advice = "look the code up in NVIDIA's Xid documentation";
  return m;
}

// One burnin.xid finding per code (Xid or SXid): the catalogue's severity
// and action.
void ReportXids(const std::vector<BurninXid>& xids, const std::string& who,
                const BurninContext& ctx, FindingSink* sink) {
  std::map<std::pair<bool, int>, std::vector<const BurninXid*>> by_code;
  for (const auto& x : xids) by_code[{x.sxid, x.code}].push_back(&x);
  for (const auto& [key, events] : by_code) {
    const int code = key.second;
    const std::string word = XidWord(key.first);
    const XidMeaning m = Meaning(ctx, *events.front());
    std::vector<std::string> lines;
    for (size_t i = 0; i < events.size() && i < kMaxFindingLines; ++i) {
      lines.push_back(events[i]->text);
    }
    sink->Add("burnin.xid", m.severity,
              absl::StrCat(word, " ", code, " (", m.name, ") during burn-in on ", who,
                           events.size() > 1 ? absl::StrCat(", ", events.size(), " times") : ""),
              absl::StrCat("the kernel log printed ", word, " ", code, " (", m.name, ") ",
                           events.size(), " time(s) while the burn-in ran; first: ",
                           events.front()->text),
              absl::StrCat(m.action, ": ", m.advice),
              {{absl::AsciiStrToLower(word), absl::StrCat(code)}}, lines);
  }
}

// The kernel log part of a failure's Artifact: the Xid lines, and with
// `recent` the last lines seen during the run.
void AppendKernelEvidence(const std::vector<BurninXid>& xids, bool recent,
                          const BurninContext& ctx, std::string* text) {
  if (!ctx.kernel_log_error.empty()) {
    absl::StrAppend(text, "-- kernel log: not watched (", ctx.kernel_log_error, ") --\n");
    return;
  }
  if (!xids.empty()) {
    absl::StrAppend(text, "-- kernel log: Xid lines during the run --\n");
    for (size_t i = 0; i < xids.size() && i < kMaxEvidenceLines; ++i) {
      absl::StrAppend(text, xids[i].text, "\n");
    }
  }
  if (recent) {
    const auto& lines = ctx.recent_kernel_lines;
    const size_t from = lines.size() > kMaxEvidenceLines ? lines.size() - kMaxEvidenceLines : 0;
    absl::StrAppend(text, "-- kernel log: last ", lines.size() - from,
                    " lines seen during the run --\n");
    for (size_t i = from; i < lines.size(); ++i) absl::StrAppend(text, lines[i], "\n");
  }
}

}  // namespace

uint64_t MaskThrottleReasons(uint64_t reasons) {
  return reasons & ~(kReasonGpuIdle | kReasonApplicationsClocks);
}

std::vector<std::string> ThrottleReasonNames(uint64_t reasons) {
  std::vector<std::string> out;
  uint64_t known = 0;
  for (const auto& r : kReasonNames) {
    known |= r.bit;
    if (reasons & r.bit) out.push_back(r.name);
  }
  if (uint64_t rest = reasons & ~known) out.push_back(absl::StrFormat("0x%x", rest));
  return out;
}

void ThrottleTracker::Add(uint64_t reasons, double seconds) {
  uint64_t masked = MaskThrottleReasons(reasons);
  if (!masked || seconds <= 0) return;
  seen_ |= masked;
  throttled_s_ += seconds;
  for (const auto& name : ThrottleReasonNames(masked)) by_reason_[name] += seconds;
  by_bit_[masked] += seconds;
}

double ThrottleTracker::seconds_for(uint64_t bits) const {
  double s = 0;
  for (const auto& [mask, secs] : by_bit_) {
    if (mask & bits) s += secs;
  }
  return s;
}

void AddTelemetry(const GpuTelemetry& t, SampleWindow* w) {
  if (t.temperature_c) w->Add("gpu_temperature_c", "C", *t.temperature_c);
  if (t.memory_temperature_c) w->Add("gpu_memory_temperature_c", "C", *t.memory_temperature_c);
  if (t.power_w) w->Add("gpu_power_w", "W", *t.power_w);
  if (t.sm_clock_mhz) w->Add("gpu_sm_clock_mhz", "MHz", *t.sm_clock_mhz);
  if (t.throttle_reasons) w->AddBits("gpu_throttle_reasons", MaskThrottleReasons(*t.throttle_reasons));
  if (t.ecc_corrected_volatile) {
    w->Add("gpu_ecc_corrected_volatile", "count", static_cast<double>(*t.ecc_corrected_volatile));
  }
  if (t.ecc_uncorrected_volatile) {
    w->Add("gpu_ecc_uncorrected_volatile", "count",
           static_cast<double>(*t.ecc_uncorrected_volatile));
  }
}

ThroughputStats ComputeThroughput(const std::vector<double>& w, double total_tflop,
                                  double seconds) {
  ThroughputStats s;
  s.windows = static_cast<int>(w.size());
  s.mean = seconds > 0 ? total_tflop / seconds : 0;
  if (w.empty()) return s;
  s.min_window = *std::min_element(w.begin(), w.end());
  double m = 0;
  for (double x : w) m += x;
  m /= w.size();
  double var = 0;
  for (double x : w) var += (x - m) * (x - m);
  var /= w.size();
  s.cv = m > 0 ? std::sqrt(var) / m : 0;
  return s;
}

std::vector<BurninXid> AssignXids(std::vector<BurninXid> xids,
                                  const std::function<std::string(const std::string&)>& normalize,
                                  std::vector<GpuBurninResult>* gpus) {
  std::map<std::string, GpuBurninResult*> by_pci;
  for (auto& g : *gpus) {
    if (std::string pci = normalize(g.pci_bus_id); !pci.empty()) by_pci[pci] = &g;
  }
  std::vector<BurninXid> unmatched;
  for (auto& x : xids) {
    auto it = by_pci.find(normalize(x.pci));
    if (x.pci.empty() || it == by_pci.end()) {
      unmatched.push_back(std::move(x));
    } else {
      it->second->xids.push_back(std::move(x));
    }
  }
  return unmatched;
}

bool ReportGpuBurnin(const GpuBurninResult& r, const BurninContext& ctx, RecordWriter* out) {
  const std::map<std::string, std::string> labels = {{"gpu", absl::StrCat(r.index)},
                                                     {"uuid", r.uuid},
                                                     {"pci_bus_id", r.pci_bus_id},
                                                     {"model", r.model},
                                                     {"dtype", ctx.dtype}};
  const std::string who = absl::StrFormat("GPU %d (%s, PCI %s) on node %s", r.index, r.uuid,
                                          r.pci_bus_id, ctx.node);
  FindingSink sink(ctx, absl::StrCat("gpu:", r.index), labels,
                   absl::StrCat("node ", ctx.node, ", GPU ", r.index, ", UUID ", r.uuid, ", PCI ",
                                r.pci_bus_id, ", ", r.model),
                   out);

  ThroughputStats st = ComputeThroughput(r.window_tflops, r.total_tflop, r.seconds);
  if (r.iterations > 0) {
    out->Measure("burnin_tflops_mean", st.mean, "TFLOP/s", labels);
    if (st.windows > 0) out->Measure("burnin_tflops_min_window", st.min_window, "TFLOP/s", labels);
    if (st.windows > 1) out->Measure("burnin_cv", st.cv, "ratio", labels);
    out->Measure("burnin_mismatches", static_cast<double>(r.mismatches), "count", labels);
    out->Measure("burnin_iterations", static_cast<double>(r.iterations), "count", labels);
  }
  if (r.max_temperature_c) out->Measure("burnin_max_temp_c", *r.max_temperature_c, "C", labels);
  if (r.max_memory_temperature_c) {
    out->Measure("burnin_max_memory_temp_c", *r.max_memory_temperature_c, "C", labels);
  }
  if (r.max_power_w) out->Measure("burnin_max_power_w", *r.max_power_w, "W", labels);
  if (r.telemetry_error.empty()) {
    out->Measure("burnin_throttled_s", r.throttle.throttled_s(), "s", labels);
    // Split for the fleet analysis (benchmarks/burnin/burnin_judge.cc): heat or
    // power delivery, against the configured power cap.
    out->Measure("burnin_throttled_hot_s", r.throttle.seconds_for(kThermalOrHwPowerReasons), "s",
                 labels);
    out->Measure("burnin_power_capped_s", r.throttle.seconds_for(kReasonSwPowerCap), "s", labels);
    out->Measure("burnin_seconds", r.seconds, "s", labels);
  }

  if (r.hung) {
    sink.Add("burnin.gpu_hang", v1::SEVERITY_FAIL, absl::StrCat("GPU hang: burn-in stalled on ", who),
             absl::StrCat(r.error, " (after ", r.iterations, " iterations)"),
             "check the kernel log for Xids (e.g. 79, 109, 119) and nvidia-smi on this GPU; drain "
             "the node and reset or replace the GPU");
  } else if (!r.error.empty()) {
    sink.Add("burnin.cuda_error", v1::SEVERITY_FAIL,
             absl::StrCat("burn-in failed on ", who),
             absl::StrCat(r.error, " (after ", r.iterations, " iterations)"),
             "check the kernel log for Xids on this GPU; drain the node if the error repeats");
  } else if (r.iterations == 0) {
    sink.Add("burnin.no_iterations", v1::SEVERITY_FAIL,
             absl::StrCat("burn-in finished no verified iteration on ", who),
             absl::StrCat("the duration was shorter than one GEMM of n=", ctx.size),
             "rerun with a longer --duration");
  }
  if (r.mismatches > 0) {
    sink.Add("burnin.gpu_mismatch", v1::SEVERITY_CRITICAL,
             absl::StrCat("silent data corruption suspect: ", who, " computed ", r.mismatches,
                          " differing elements",
                          ctx.fault_injected ? " (injected by --fault-inject: test only)" : ""),
             absl::StrFormat("%s GEMM n=%d: the same inputs and the same cuBLASLt algorithm gave "
                             "output differing from the first iteration's in %d elements, first "
                             "seen by iteration %d of %d",
                             ctx.dtype, ctx.size, r.mismatches, r.first_mismatch_iteration,
                             r.iterations),
             ctx.fault_injected ? "none: the corruption was injected on purpose (--fault-inject)"
                                : "drain the node and replace the GPU (RMA) after confirming with "
                                  "a second burn-in; keep the artifact as evidence");
  }
  if (r.ecc_uncorrected_start && r.ecc_uncorrected_end &&
      *r.ecc_uncorrected_end > *r.ecc_uncorrected_start) {
    sink.Add("burnin.ecc_errors", v1::SEVERITY_FAIL,
             absl::StrCat(*r.ecc_uncorrected_end - *r.ecc_uncorrected_start,
                          " new uncorrected ECC errors during burn-in on ", who),
             absl::StrCat("volatile uncorrected ECC count went from ", *r.ecc_uncorrected_start,
                          " to ", *r.ecc_uncorrected_end),
             "drain the node; reset the GPU and check row remapping; replace it if errors recur");
  }
  if (r.ecc_corrected_start && r.ecc_corrected_end &&
      *r.ecc_corrected_end > *r.ecc_corrected_start) {
    sink.Add("burnin.ecc_corrected", v1::SEVERITY_WARN,
             absl::StrCat(*r.ecc_corrected_end - *r.ecc_corrected_start,
                          " new corrected ECC errors during burn-in on ", who),
             absl::StrCat("volatile corrected ECC count went from ", *r.ecc_corrected_start,
                          " to ", *r.ecc_corrected_end,
                          "; the hardware corrected them, a growing count predicts failure"),
             "watch the count; check row remapping with the health suite");
  }
  const double hot_s = r.throttle.seconds_for(kThermalOrHwPowerReasons);
  const double cap_s = r.throttle.seconds_for(kReasonSwPowerCap);
  std::vector<std::string> reasons;
  for (const auto& [name, secs] : r.throttle.by_reason()) {
    reasons.push_back(absl::StrFormat("%s %.0f s", name, secs));
  }
  if (hot_s > 0) {
    sink.Add("burnin.throttled", v1::SEVERITY_WARN,
             absl::StrFormat("%s throttled for thermal or power-delivery reasons for %.0f s of "
                             "%.0f s", who, hot_s, r.seconds),
             absl::StrCat("clock event reasons: ", absl::StrJoin(reasons, ", "),
                          r.max_temperature_c
                              ? absl::StrFormat("; max GPU temperature %.0f C", *r.max_temperature_c)
                              : ""),
             "check cooling (airflow, inlet temperature, fans) and power delivery of this "
             "GPU's slot; compare with its neighbours");
  } else if (cap_s > 0) {
    sink.Add("burnin.power_capped", v1::SEVERITY_INFO,
             absl::StrFormat("%s held at its power limit for %.0f s of %.0f s", who, cap_s,
                             r.seconds),
             absl::StrCat("clock event reasons: ", absl::StrJoin(reasons, ", "),
                          "; a dense GEMM reaching the configured power limit is expected"),
             "none, unless the power limit is below the GPU's default (nvidia-smi -q -d POWER)");
  }
  if (!r.telemetry_error.empty()) {
    // Throttling, temperatures and ECC counts were not read: not measured,
    // never "no throttling" or "no ECC error".
    sink.NotMeasured("burnin.telemetry_not_measured",
                     absl::StrCat("GPU telemetry during burn-in not measured on ", who),
                     absl::StrCat("NVML could not be read (", r.telemetry_error,
                                  "): throttling, temperatures, power and ECC counts are "
                                  "unknown, which is not the same as none"),
                     "check that libnvidia-ml.so.1 loads (nvidia-smi works) and rerun");
  }
  if (r.kernel_log_watched) {
    out->Measure("burnin_xids", static_cast<double>(r.xids.size()), "count", labels);
  }
  ReportXids(r.xids, who, ctx, &sink);

  if (sink.failed()) {
    std::string text = absl::StrCat("node: ", ctx.node, "\ngpu: ", r.index, "\nuuid: ", r.uuid,
                                     "\npci_bus_id: ", r.pci_bus_id, "\nmodel: ", r.model,
                                     "\ncommand: ", ctx.command, "\niterations: ", r.iterations,
                                     "\nmismatches: ", r.mismatches, "\n");
    if (!r.error.empty()) absl::StrAppend(&text, "cuda_error: ", r.error, "\n");
    absl::StrAppend(&text, "throttled_s: ", r.throttle.throttled_s(), " (",
                    absl::StrJoin(reasons, ", "), ")\n");
    absl::StrAppend(&text, "-- NVML state at the end --\n",
                    r.nvml_state.empty() ? absl::StrCat("not available: ", r.telemetry_error, "\n")
                                         : r.nvml_state);
    AppendKernelEvidence(r.xids, r.mismatches > 0 || !r.error.empty(), ctx, &text);
    out->Artifact(absl::StrCat("burnin_gpu", r.index, "_evidence.txt"), "text/plain", text);
  }
  return sink.failed();
}

bool ReportNodeXids(const std::vector<BurninXid>& unmatched, const BurninContext& ctx,
                    RecordWriter* out) {
  FindingSink sink(ctx, "node", {{"dtype", ctx.dtype}}, absl::StrCat("node ", ctx.node), out);
  if (!ctx.kernel_log_error.empty()) {
    const std::string why =
        absl::StrCat("Xids during burn-in not measured: ", ctx.kernel_log_error);
    out->Log("info", why);
    sink.NotMeasured("burnin.xid_not_measured",
              absl::StrCat(why.substr(0, why.find(':')), " on node ", ctx.node),
              absl::StrCat("the kernel log could not be watched (", ctx.kernel_log_error,
                           "); no Xid was looked for, which is not the same as none"),
              "let the agent read /dev/kmsg (root, CAP_SYSLOG, or kernel.dmesg_restrict=0) and "
              "rerun, or check the node's kernel log for Xids by hand");
    return false;
  }
  ReportXids(unmatched, absl::StrCat("node ", ctx.node, " (no burned GPU at that address)"), ctx,
             &sink);
  if (sink.failed()) {
    std::string text = absl::StrCat("node: ", ctx.node, "\ncommand: ", ctx.command, "\n");
    AppendKernelEvidence(unmatched, false, ctx, &text);
    out->Artifact("burnin_node_xids.txt", "text/plain", text);
  }
  return sink.failed();
}

}  // namespace cmax::bench
