// The generated, SIMULATED run of cmax-report-scale (report_scale_data.h).
#include "benchmarks/report_scale/report_scale_data.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cmax::report_scale {
namespace {

using cmax::reports::RunData;
namespace v1 = cmax::v1;

// A deterministic pseudo-random value in [0, 1) (splitmix64).
double Noise(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) / 9007199254740992.0;
}

struct Gen {
  RunData d;
  int64_t t0 = int64_t{1764451065} * 1000000000;

  v1::ExportedRecord& Rec(const std::string& node, const std::string& suite) {
    v1::ExportedRecord& r = d.records.emplace_back();
    r.set_node(node);
    r.set_suite(suite);
    r.set_task_id(absl::StrCat(suite, "@", node));
    r.set_attempt(1);
    return r;
  }
  void Meas(const std::string& node, const std::string& suite, const std::string& metric,
            double value, const std::string& unit,
            std::initializer_list<std::pair<const std::string, std::string>> labels) {
    v1::Measurement* m = Rec(node, suite).mutable_record()->mutable_measurement();
    m->set_suite(suite);
    m->set_metric(metric);
    m->set_value(value);
    m->set_unit(unit);
    m->set_simulated(true);
    for (const auto& [k, v] : labels) (*m->mutable_labels())[k] = v;
  }
  void Finding(const std::string& node, const std::string& suite, const std::string& id,
               v1::Severity sev, const std::string& category, const std::string& title) {
    v1::Finding* f = Rec(node, suite).mutable_record()->mutable_finding();
    f->set_suite(suite);
    f->set_check_id(id);
    f->set_severity(sev);
    f->set_category(category);
    f->set_subject("node");
    f->set_title(title);
    f->set_simulated(true);
  }
  void Sample(const std::string& node, const std::string& metric, const std::string& unit,
              const std::string& gpu, int64_t t, double v) {
    v1::Sample* s = Rec(node, "burnin").mutable_record()->mutable_sample();
    s->set_suite("burnin");
    s->set_metric(metric);
    s->set_unit(unit);
    s->set_value(v);
    s->set_time_unix_ns(t);
    (*s->mutable_labels())["gpu"] = gpu;
  }
};

}  // namespace

RunData Generate(int nodes, int gpus, int samples) {
  Gen g;
  RunData& d = g.d;
  d.run.set_run_id(absl::StrCat("simulated-", nodes, "x", gpus));
  d.run.set_plan_name("report-scale (simulated)");
  d.run.set_state("completed");
  d.run.set_created_unix_ns(g.t0);
  d.run.set_finished_unix_ns(g.t0 + int64_t{3600} * 1000000000);
  d.plan.set_name("report-scale (simulated)");
  for (const char* s :
       {"hostcheck", "gemm", "collective", "burnin", "storage", "connectivity"}) {
    d.plan.add_suites()->set_suite(s);
  }
  (*d.plan.mutable_expect()->mutable_metrics())["busbw_gbps.all_reduce.node"] = 400;
  for (int i = 0; i < nodes; ++i) {
    const std::string n = absl::StrFormat("gpu-node-%04d", i);
    d.nodes.push_back(n);
    v1::Inventory& inv = d.inventories[n];
    inv.set_hostname(n);
    inv.set_gpu_count(gpus);
    inv.set_gpu_model("NVIDIA H100 80GB HBM3");
    inv.set_cpu_cores(112);
    inv.set_memory_gib(2015.6);
    inv.set_kernel("6.8.0-simulated");
    inv.set_driver_version("550.90.07");
    for (int s = 0; s < d.plan.suites_size(); ++s) {
      v1::TaskInfo& t = d.tasks.emplace_back();
      const std::string& suite = d.plan.suites(s).suite();
      t.set_task_id(absl::StrCat(suite, "@", n));
      t.set_run_id(d.run.run_id());
      t.set_suite(suite);
      t.set_name(suite);
      t.set_node(n);
      t.set_state(v1::TASK_COMPLETED);
      t.set_attempt(1);
      t.set_suite_index(s);
      t.set_records(10);
    }
    g.Meas(n, "hostcheck", "gpu_count", gpus, "count", {});
    g.Meas(n, "hostcheck", "cpu_cores", 112, "count", {});
    g.Meas(n, "hostcheck", "memory_total_gib", 2015.6, "GiB", {});
    g.Finding(n, "hostcheck", "hostcheck.swap", v1::SEVERITY_INFO, "reliability",
              "swap is disabled");
    if (i % 97 == 5) {
      g.Finding(n, "hostcheck", "hostcheck.thp", v1::SEVERITY_WARN, "reliability",
                "transparent huge pages are always on");
    }
    if (i == 17) {
      g.Finding(n, "audit", "audit.runc", v1::SEVERITY_FAIL, "security",
                "runc 1.1.11 is affected by CVE-2024-21626");
    }
    for (int gpu = 0; gpu < gpus; ++gpu) {
      const uint64_t key = static_cast<uint64_t>(i) * 64 + static_cast<uint64_t>(gpu);
      const std::string gs = absl::StrCat(gpu);
      const bool slow = key % 1013 == 7;
      g.Meas(n, "gemm", "gemm_tflops", (slow ? 520 : 720) + 20 * Noise(key), "TFLOP/s",
             {{"gpu", gs},
              {"dtype", "bf16"},
              {"m", "8192"},
              {"n", "8192"},
              {"k", "8192"},
              {"backend", "cuda"}});
      g.Meas(n, "gemm", "memory_bandwidth_gbps", 53 + 2 * Noise(key + 1), "GB/s",
             {{"gpu", gs}, {"test", "h2d"}, {"size_bytes", "1073741824"}});
      g.Meas(n, "gemm", "memory_bandwidth_gbps", 52 + 2 * Noise(key + 2), "GB/s",
             {{"gpu", gs}, {"test", "d2h"}, {"size_bytes", "1073741824"}});
      g.Meas(n, "gemm", "memory_bandwidth_gbps", 2900 + 100 * Noise(key + 3), "GB/s",
             {{"gpu", gs}, {"test", "hbm"}, {"size_bytes", "1073741824"}});
      g.Meas(n, "burnin", "burnin_tflops_mean", (slow ? 500 : 690) + 15 * Noise(key + 4),
             "TFLOP/s", {{"gpu", gs}});
      g.Meas(n, "burnin", "burnin_tflops_min_window",
             (slow ? 480 : 670) + 15 * Noise(key + 5), "TFLOP/s", {{"gpu", gs}});
      g.Meas(n, "burnin", "burnin_mismatches", 0, "count", {{"gpu", gs}});
      g.Meas(n, "burnin", "burnin_seconds", 120, "s", {{"gpu", gs}});
      for (int s = 0; s < samples; ++s) {
        const int64_t t = g.t0 + int64_t{s} * 10 * 1000000000;
        g.Sample(n, "gpu_sm_clock_mhz", "MHz", gs, t,
                 (slow ? 1500 : 1980) - 10 * Noise(key + s));
        g.Sample(n, "gpu_temperature_c", "C", gs, t,
                 55 + s * 0.5 + 5 * Noise(key * 7 + s));
        g.Sample(n, "gpu_power_w", "W", gs, t, 650 + 40 * Noise(key * 13 + s));
      }
    }
    for (int e = 10; e <= 33; e += 3) {
      const double size = static_cast<double>(int64_t{1} << e);
      g.Meas(n, "collective", "busbw_gbps",
             470 * size / (size + 8e6) + 5 * Noise(i * 100 + e), "GB/s",
             {{"op", "all_reduce"},
              {"dtype", "bfloat16"},
              {"backend", "nccl"},
              {"size_bytes", absl::StrCat(int64_t{1} << e)},
              {"nodes", n},
              {"ranks", "8"}});
    }
    g.Meas(n, "storage", "storage_bandwidth_mbps", 5200 + 400 * Noise(i * 3), "MB/s",
           {{"pattern", "seq_read"}, {"op", "read"}, {"job", "all"}});
    g.Meas(n, "storage", "storage_bandwidth_mbps",
           (i == 333 ? 900 : 3100) + 300 * Noise(i * 5), "MB/s",
           {{"pattern", "seq_write"}, {"op", "write"}, {"job", "all"}});
    for (int step : {1, nodes - 1}) {
      if (nodes < 2) break;
      const std::string peer = absl::StrFormat("gpu-node-%04d", (i + step) % nodes);
      g.Meas(n, "connectivity", "reachable", 1, "bool", {{"src", n}, {"dst", peer}});
      g.Meas(n, "connectivity", "rtt_ms", 0.05 + 0.02 * Noise(i * 11 + step), "ms",
             {{"src", n}, {"dst", peer}});
    }
  }
  return d;
}

}  // namespace cmax::report_scale
