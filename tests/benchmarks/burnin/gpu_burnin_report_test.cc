// The GPU burn-in's verdict, from synthetic per-GPU results: what
// cmax-bench-cuda burnin writes at the end, checked without a GPU.
#include "benchmarks/burnin/gpu_burnin_report.h"

#include <algorithm>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"

#include "benchmarks/health/kernel_log.h"
#include "benchmarks/health/xid_catalog.h"
#include "tests/benchmarks/gpu_common/capture_records.h"

namespace cmax::bench {
namespace {

std::vector<v1::Record> Report(const GpuBurninResult& r, const BurninContext& ctx, bool* failed) {
  return CaptureRecords([&](RecordWriter* out) { *failed = ReportGpuBurnin(r, ctx, out); });
}

GpuBurninResult Healthy() {
  GpuBurninResult r;
  r.index = 3;
  r.uuid = "GPU-8f0c1a2b-0000-1111-2222-333344445555";
  r.pci_bus_id = "0000:3b:00.0";
  r.model = "NVIDIA H200";
  r.iterations = 4000;
  r.seconds = 10;
  r.window_tflops = {700, 710, 690, 705, 695, 700, 702, 698, 701, 699};
  r.total_tflop = 7000;
  r.max_temperature_c = 71;
  r.ecc_corrected_start = r.ecc_corrected_end = 0;
  r.ecc_uncorrected_start = r.ecc_uncorrected_end = 0;
  r.nvml_state = "temperature_c=71.0\n";
  return r;
}

BurninContext Ctx() {
  BurninContext c;
  c.node = "node-07";
  c.dtype = "bf16";
  c.command = "cmax-bench-cuda burnin --duration 10";
  c.size = 8192;
  return c;
}

const v1::Finding* FindCheck(const std::vector<v1::Record>& recs, const std::string& id) {
  for (const auto& r : recs) {
    if (r.has_finding() && r.finding().check_id() == id) return &r.finding();
  }
  return nullptr;
}

double Metric(const std::vector<v1::Record>& recs, const std::string& name) {
  for (const auto& r : recs) {
    if (r.has_measurement() && r.measurement().metric() == name) return r.measurement().value();
  }
  FAIL("no measurement " << name);
  return 0;
}

// The catalogue compiled into cmax (benchmarks/health/data/xid_catalog.yaml)
// as the burn-in binds it.
XidLookup Catalog() {
  auto c = health::XidCatalog::LoadDefault();
  REQUIRE(c.ok());
  return [c = *c](const BurninXid& x) {
    health::XidInfo i = x.sxid ? c.ForSxid(x.code, x.fatal) : c.Lookup(x.code);
    return XidMeaning{.name = i.name, .severity = i.severity,
                      .action = health::ActionWords(i.action), .advice = i.advice};
  };
}

// Kernel log lines as the follower hands them over, parsed as the burn-in does.
std::vector<BurninXid> Xids(const std::vector<std::string>& texts) {
  std::vector<health::KernelLogLine> lines;
  for (const auto& t : texts) lines.push_back({.mono_s = 1, .text = t});
  std::vector<BurninXid> out;
  for (const auto& e : health::ParseXidEvents(lines)) {
    out.push_back({.sxid = e.sxid, .fatal = e.fatal, .code = e.code, .pci = e.pci, .text = e.text});
  }
  return out;
}

std::string Normalize(const std::string& pci) { return health::NormalizePciAddress(pci); }

const v1::Artifact* FindArtifact(const std::vector<v1::Record>& recs) {
  for (const auto& r : recs) {
    if (r.has_artifact()) return &r.artifact();
  }
  return nullptr;
}

constexpr char kXid79[] =
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=cmax-bench-cuda, GPU has fallen off the bus.";
constexpr char kXid13[] =
    "NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=cmax-bench-cuda, Graphics SM Warp Exception";
constexpr char kSxid[] =
    "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Fatal, Link 32 LTSSM Fault Up";

}  // namespace

TEST_CASE("Xids are given to the burned GPU with the same PCI address", "[burnin][xid]") {
  std::vector<GpuBurninResult> gpus(2, Healthy());
  gpus[1].index = 0;
  gpus[1].pci_bus_id = "00000000:18:00.0";  // NVML's spelling
  auto rest = AssignXids(Xids({kXid79, "unrelated line", kXid13, kXid79, kSxid}), Normalize, &gpus);
  REQUIRE(gpus[0].xids.size() == 2);
  CHECK(gpus[0].xids[0].code == 79);
  REQUIRE(gpus[1].xids.size() == 1);
  CHECK(gpus[1].xids[0].code == 13);
  REQUIRE(rest.size() == 1);
  CHECK(rest[0].sxid);
  CHECK(rest[0].code == 12028);
}

TEST_CASE("an Xid during burn-in is a finding with the catalogue's severity and action",
          "[burnin][xid]") {
  GpuBurninResult r = Healthy();
  r.kernel_log_watched = true;
  r.xids = Xids({kXid79, kXid79});
  BurninContext ctx = Ctx();
  ctx.xid_lookup = Catalog();
  bool failed = false;
  auto recs = Report(r, ctx, &failed);
  CHECK(failed);
  CHECK(Metric(recs, "burnin_xids") == 2);
  const v1::Finding* f = FindCheck(recs, "burnin.xid");
  REQUIRE(f != nullptr);
  CHECK(f->severity() == v1::SEVERITY_CRITICAL);
  CHECK(f->subject() == "gpu:3");
  CHECK(f->labels().at("xid") == "79");
  CHECK_THAT(f->title(), Catch::Contains("Xid 79 (GPU has fallen off the bus)") &&
                             Catch::Contains("2 times") && Catch::Contains("node-07") &&
                             Catch::Contains("GPU-8f0c1a2b") && Catch::Contains("0000:3b:00.0"));
  CHECK_THAT(f->action(), Catch::StartsWith("drain and inspect hardware: "));
  CHECK(std::find(f->evidence().begin(), f->evidence().end(), kXid79) != f->evidence().end());
  const v1::Artifact* a = FindArtifact(recs);
  REQUIRE(a != nullptr);
  CHECK(a->name() == "burnin_gpu3_evidence.txt");
  CHECK_THAT(a->content(), Catch::Contains("Xid lines during the run") && Catch::Contains(kXid79));

  // An application-level Xid warns without failing the GPU or keeping evidence.
  r.xids = Xids({kXid13});
  recs = Report(r, ctx, &failed);
  CHECK_FALSE(failed);
  REQUIRE(FindCheck(recs, "burnin.xid") != nullptr);
  CHECK(FindCheck(recs, "burnin.xid")->severity() == v1::SEVERITY_WARN);
  CHECK(FindArtifact(recs) == nullptr);
}

TEST_CASE("a watched log without Xids counts zero, an unwatched one counts nothing",
          "[burnin][xid]") {
  GpuBurninResult r = Healthy();
  r.kernel_log_watched = true;
  bool failed = true;
  auto recs = Report(r, Ctx(), &failed);
  CHECK_FALSE(failed);
  CHECK(Metric(recs, "burnin_xids") == 0);
  CHECK(FindCheck(recs, "burnin.xid") == nullptr);

  r.kernel_log_watched = false;
  recs = Report(r, Ctx(), &failed);
  for (const auto& rec : recs) {
    CHECK_FALSE((rec.has_measurement() && rec.measurement().metric() == "burnin_xids"));
  }
}

TEST_CASE("an unreadable kernel log is reported as not measured, never as no Xids",
          "[burnin][xid]") {
  BurninContext ctx = Ctx();
  ctx.kernel_log_error =
      "open /dev/kmsg: Operation not permitted (kernel.dmesg_restrict=1 allows only privileged "
      "readers)";
  bool failed = true;
  auto recs = CaptureRecords([&](RecordWriter* out) { failed = ReportNodeXids({}, ctx, out); });
  CHECK_FALSE(failed);
  const v1::Finding* f = FindCheck(recs, "burnin.xid_not_measured");
  REQUIRE(f != nullptr);
  CHECK(f->severity() == v1::SEVERITY_INFO);
  CHECK(f->not_measured());
  CHECK(f->category() == "reliability");
  CHECK(f->subject() == "node");
  CHECK_THAT(f->title(), Catch::Contains("not measured") && Catch::Contains("node-07"));
  CHECK_THAT(f->detail(), Catch::Contains("dmesg_restrict"));
  bool logged = false;
  for (const auto& rec : recs) {
    if (rec.has_log() && rec.log().message().find("not measured") != std::string::npos) {
      logged = true;
    }
  }
  CHECK(logged);
}

TEST_CASE("a GPU without NVML telemetry is reported as not measured, never as unthrottled",
          "[burnin]") {
  GpuBurninResult r = Healthy();
  r.telemetry_error = "libnvidia-ml.so.1: cannot open shared object file";
  r.nvml_state.clear();
  bool failed = true;
  auto recs = Report(r, Ctx(), &failed);
  CHECK_FALSE(failed);
  const v1::Finding* f = FindCheck(recs, "burnin.telemetry_not_measured");
  REQUIRE(f != nullptr);
  CHECK(f->not_measured());
  CHECK(f->category() == "reliability");
  CHECK(f->subject() == "gpu:3");
  CHECK_THAT(f->detail(), Catch::Contains("libnvidia-ml.so.1"));
  // No throttle figure is written without telemetry; the throughput still is.
  for (const auto& rec : recs) {
    CHECK_FALSE((rec.has_measurement() && rec.measurement().metric() == "burnin_throttled_s"));
  }
  CHECK(Metric(recs, "burnin_tflops_mean") > 0);

  // With telemetry there is no such finding.
  recs = Report(Healthy(), Ctx(), &failed);
  CHECK(FindCheck(recs, "burnin.telemetry_not_measured") == nullptr);
}

TEST_CASE("Xids on no burned GPU are reported on the node", "[burnin][xid]") {
  BurninContext ctx = Ctx();
  ctx.xid_lookup = Catalog();
  bool failed = false;
  auto recs =
      CaptureRecords([&](RecordWriter* out) { failed = ReportNodeXids(Xids({kSxid}), ctx, out); });
  CHECK(failed);  // a fatal SXid
  const v1::Finding* f = FindCheck(recs, "burnin.xid");
  REQUIRE(f != nullptr);
  CHECK(f->subject() == "node");
  CHECK(f->severity() == v1::SEVERITY_FAIL);
  CHECK(f->labels().at("sxid") == "12028");
  CHECK_THAT(f->title(), Catch::Contains("SXid 12028") && Catch::Contains("node-07"));
  const v1::Artifact* a = FindArtifact(recs);
  REQUIRE(a != nullptr);
  CHECK_THAT(a->content(), Catch::Contains(kSxid));
}

TEST_CASE("a mismatch keeps the last kernel log lines of the run, bounded", "[burnin][xid]") {
  GpuBurninResult r = Healthy();
  r.kernel_log_watched = true;
  r.mismatches = 1;
  r.first_mismatch_iteration = 7;
  BurninContext ctx = Ctx();
  for (int i = 0; i < 150; ++i) ctx.recent_kernel_lines.push_back(absl::StrCat("kline ", i, ";"));
  bool failed = false;
  auto recs = Report(r, ctx, &failed);
  CHECK(failed);
  const v1::Artifact* a = FindArtifact(recs);
  REQUIRE(a != nullptr);
  CHECK_THAT(a->content(), Catch::Contains("kline 149;") && Catch::Contains("kline 50;") &&
                               Catch::Contains("last 100 lines"));
  CHECK_FALSE(a->content().find("kline 49;") != std::string::npos);
}

TEST_CASE("a healthy GPU burn-in gives figures and no finding", "[burnin]") {
  bool failed = true;
  auto recs = Report(Healthy(), Ctx(), &failed);
  CHECK_FALSE(failed);
  CHECK(Metric(recs, "burnin_tflops_mean") == Approx(700));
  CHECK(Metric(recs, "burnin_tflops_min_window") == Approx(690));
  CHECK(Metric(recs, "burnin_cv") < 0.01);
  CHECK(Metric(recs, "burnin_mismatches") == 0);
  CHECK(Metric(recs, "burnin_max_temp_c") == 71);
  CHECK(Metric(recs, "burnin_throttled_s") == 0);
  for (const auto& r : recs) {
    CHECK_FALSE(r.has_finding());
    CHECK_FALSE(r.has_artifact());
    if (r.has_measurement()) {
      CHECK(r.measurement().labels().at("uuid") == "GPU-8f0c1a2b-0000-1111-2222-333344445555");
      CHECK(r.measurement().labels().at("pci_bus_id") == "0000:3b:00.0");
      CHECK(r.measurement().labels().at("dtype") == "bf16");
    }
  }
}

TEST_CASE("mismatched elements are a critical SDC finding naming node, GPU, UUID and PCI",
          "[burnin]") {
  GpuBurninResult r = Healthy();
  r.mismatches = 17;
  r.first_mismatch_iteration = 1234;
  bool failed = false;
  auto recs = Report(r, Ctx(), &failed);
  CHECK(failed);
  const v1::Finding* f = FindCheck(recs, "burnin.gpu_mismatch");
  REQUIRE(f != nullptr);
  CHECK(f->severity() == v1::SEVERITY_CRITICAL);
  CHECK(f->category() == "reliability");
  CHECK(f->subject() == "gpu:3");
  CHECK(f->title().find("silent data corruption suspect") != std::string::npos);
  const std::string all = f->title() + f->detail() + f->evidence(1);
  CHECK(all.find("node-07") != std::string::npos);
  CHECK(all.find("GPU-8f0c1a2b") != std::string::npos);
  CHECK(all.find("0000:3b:00.0") != std::string::npos);
  CHECK(f->detail().find("1234") != std::string::npos);
  CHECK(Metric(recs, "burnin_mismatches") == 17);
  bool artifact = false;
  for (const auto& rec : recs) {
    if (rec.has_artifact()) {
      artifact = true;
      CHECK(rec.artifact().name() == "burnin_gpu3_evidence.txt");
    }
  }
  CHECK(artifact);
}

TEST_CASE("new ECC errors fail (uncorrected) or warn (corrected)", "[burnin]") {
  GpuBurninResult r = Healthy();
  r.ecc_uncorrected_end = 2;
  r.ecc_corrected_start = 5;
  r.ecc_corrected_end = 9;
  bool failed = false;
  auto recs = Report(r, Ctx(), &failed);
  CHECK(failed);
  const v1::Finding* dbe = FindCheck(recs, "burnin.ecc_errors");
  REQUIRE(dbe != nullptr);
  CHECK(dbe->severity() == v1::SEVERITY_FAIL);
  CHECK(dbe->title().find("2 new uncorrected") != std::string::npos);
  const v1::Finding* sbe = FindCheck(recs, "burnin.ecc_corrected");
  REQUIRE(sbe != nullptr);
  CHECK(sbe->severity() == v1::SEVERITY_WARN);
  CHECK(sbe->title().find("4 new corrected") != std::string::npos);
}

TEST_CASE("thermal throttling warns, power capping alone is information", "[burnin]") {
  GpuBurninResult hot = Healthy();
  hot.throttle.Add(kReasonGpuIdle, 3);  // masked: not throttling
  hot.throttle.Add(kReasonApplicationsClocks, 3);
  hot.throttle.Add(kReasonHwThermal | kReasonSwPowerCap, 4);
  CHECK(hot.throttle.throttled_s() == 4);
  bool failed = true;
  auto recs = Report(hot, Ctx(), &failed);
  CHECK_FALSE(failed);
  const v1::Finding* f = FindCheck(recs, "burnin.throttled");
  REQUIRE(f != nullptr);
  CHECK(f->severity() == v1::SEVERITY_WARN);
  CHECK(f->detail().find("hw_thermal_slowdown") != std::string::npos);
  CHECK(Metric(recs, "burnin_throttled_s") == 4);
  CHECK(Metric(recs, "burnin_throttled_hot_s") == 4);

  GpuBurninResult capped = Healthy();
  capped.throttle.Add(kReasonSwPowerCap, 6);
  recs = Report(capped, Ctx(), &failed);
  CHECK(FindCheck(recs, "burnin.throttled") == nullptr);
  const v1::Finding* cap = FindCheck(recs, "burnin.power_capped");
  REQUIRE(cap != nullptr);
  CHECK(cap->severity() == v1::SEVERITY_INFO);
  CHECK(Metric(recs, "burnin_throttled_hot_s") == 0);
  CHECK(Metric(recs, "burnin_power_capped_s") == 6);
}

TEST_CASE("a CUDA error fails the GPU and keeps the NVML state", "[burnin]") {
  GpuBurninResult r = Healthy();
  r.error = "cublasLtMatmul: cuBLAS status 13";
  r.iterations = 10;
  bool failed = false;
  auto recs = Report(r, Ctx(), &failed);
  CHECK(failed);
  REQUIRE(FindCheck(recs, "burnin.cuda_error") != nullptr);
  bool artifact = false;
  for (const auto& rec : recs) {
    if (rec.has_artifact()) {
      artifact = true;
      CHECK(rec.artifact().content().find("temperature_c=71.0") != std::string::npos);
    }
  }
  CHECK(artifact);
}

TEST_CASE("throttle reason names mask idle and application clocks", "[burnin]") {
  CHECK(MaskThrottleReasons(0x3) == 0);
  auto names = ThrottleReasonNames(MaskThrottleReasons(0x1 | 0x4 | 0x40 | 0x10000));
  REQUIRE(names.size() == 3);
  CHECK(names[0] == "sw_power_cap");
  CHECK(names[1] == "hw_thermal_slowdown");
  CHECK(names[2] == "0x10000");
}

}  // namespace cmax::bench
