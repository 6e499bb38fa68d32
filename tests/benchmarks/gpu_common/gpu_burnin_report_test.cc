// The GPU burn-in's verdict, from synthetic per-GPU results: what
// cmax-bench-cuda burnin writes at the end, checked without a GPU.
#include "benchmarks/gpu_common/gpu_burnin_report.h"

#include <cstdio>
#include <cstdlib>

#include <catch2/catch.hpp>

#include "absl/strings/str_split.h"

namespace cmax::bench {
namespace {

std::vector<v1::Record> Report(const GpuBurninResult& r, const BurninContext& ctx, bool* failed) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&buf, &len);
  REQUIRE(mem != nullptr);
  {
    RecordWriter out("burnin", mem);
    *failed = ReportGpuBurnin(r, ctx, &out);
  }
  std::fclose(mem);
  std::vector<v1::Record> records;
  for (absl::string_view line : absl::StrSplit(absl::string_view(buf, len), '\n', absl::SkipEmpty())) {
    auto rec = ParseRecordLine(std::string_view(line.data(), line.size()));
    REQUIRE(rec.ok());
    records.push_back(*rec);
  }
  std::free(buf);
  return records;
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

}  // namespace

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
      CHECK(rec.artifact().name() == "burnin_gpu3_nvml_state.txt");
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

TEST_CASE("telemetry windows: one-second samples or 5-second min/mean/max", "[burnin]") {
  SampleWindow one(1);
  one.Add("gpu_temperature_c", "C", 60);
  auto s = one.Tick("burnin", {{"gpu", "0"}}, 1);
  REQUIRE(s.size() == 1);
  CHECK(s[0].count() == 1);
  CHECK(s[0].value() == 60);
  CHECK(s[0].labels().at("gpu") == "0");

  SampleWindow five(5);
  std::vector<v1::Sample> got;
  for (int i = 0; i < 5; ++i) {
    five.Add("gpu_power_w", "W", 600 + 10 * i);
    five.AddBits("gpu_throttle_reasons", i == 2 ? kReasonSwPowerCap : 0);
    got = five.Tick("burnin", {}, i);
    if (i < 4) CHECK(got.empty());
  }
  REQUIRE(got.size() == 2);
  for (const auto& x : got) {
    CHECK(x.count() == 5);
    if (x.metric() == "gpu_power_w") {
      CHECK(x.min() == 600);
      CHECK(x.max() == 640);
      CHECK(x.value() == Approx(620));
    } else {
      CHECK(x.value() == static_cast<double>(kReasonSwPowerCap));
    }
  }
  five.Add("gpu_power_w", "W", 1);
  CHECK(five.Tick("burnin", {}, 9, /*flush=*/true).size() == 1);
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
