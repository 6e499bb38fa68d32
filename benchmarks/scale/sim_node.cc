#include "benchmarks/scale/sim_node.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cmax::scale {
namespace {

// splitmix64: a fixed, fast mix so fault choice and jitter are reproducible.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
double Unit(uint64_t x) { return static_cast<double>(Mix(x) >> 11) / 9007199254740992.0; }

// The same shapes the GPU GEMM times by default (benchmarks/cuda/gpu_gemm.cc).
struct Shape {
  const char* name;
  int m, n, k;
  double tflops;  // simulated H100 SXM BF16 figure for this shape
};
constexpr Shape kShapes[] = {{"square_8192", 8192, 8192, 8192, 720},
                             {"llama3_8b_mlp_up", 8192, 14336, 4096, 700},
                             {"llama3_8b_mlp_down", 8192, 4096, 14336, 690},
                             {"llama3_70b_kv", 8192, 1024, 8192, 560}};
constexpr int kNumShapes = 4;
// nccl-tests' default sweep shape: 8 B .. 8 GiB, factor 2 (31 sizes).
constexpr int kNcclSizes = 31;
constexpr const char* kNcclOps[] = {"all_reduce", "all_gather"};
constexpr const char* kIbCounters[] = {"symbol_error", "link_error_recovery", "link_downed",
                                       "port_rcv_errors"};
constexpr int kNumCounters = 4;
constexpr const char* kModel = "NVIDIA H100 80GB HBM3";

std::map<std::string, std::string> GpuLabels(const SimNode& n, int gpu) {
  return {{"gpu", absl::StrCat(gpu)},
          {"uuid", absl::StrFormat("GPU-5c1a0000-0000-4000-8000-%05d%07d", n.index, gpu)},
          {"pci_bus_id", absl::StrFormat("00000000:%02X:00.0", 0x18 + gpu * 0x10)},
          {"numa_node", gpu < 4 ? "0" : "1"},
          {"model", kModel},
          {"cc", "9.0"},
          {"simulated", "true"}};
}

v1::Record Measure(const std::string& suite, const std::string& metric, double value,
                   const std::string& unit, std::map<std::string, std::string> labels) {
  v1::Record r;
  auto* m = r.mutable_measurement();
  m->set_suite(suite);
  m->set_metric(metric);
  m->set_value(value);
  m->set_unit(unit);
  for (auto& [k, v] : labels) (*m->mutable_labels())[k] = v;
  m->set_simulated(true);
  return r;
}

v1::Record LogRecord(const std::string& suite, const std::string& text) {
  v1::Record r;
  r.mutable_log()->set_level("info");
  r.mutable_log()->set_suite(suite);
  r.mutable_log()->set_message(absl::StrCat("simulated: ", text));
  return r;
}

v1::Record FindingRecord(const std::string& suite, const std::string& id, v1::Severity sev,
                         const std::string& category, const std::string& subject,
                         const std::string& title, const std::string& detail,
                         const std::string& action) {
  v1::Record r;
  auto* f = r.mutable_finding();
  f->set_suite(suite);
  f->set_check_id(id);
  f->set_severity(sev);
  f->set_category(category);
  f->set_subject(subject);
  f->set_title(title);
  f->set_detail(detail);
  f->set_action(action);
  f->add_evidence("simulated by cmax-scale-agents (benchmarks/scale): not a real node");
  f->set_simulated(true);
  return r;
}

// --- gemm: 8 GPUs x 4 shapes, then (sdc nodes never reach here) a log.
int64_t GemmCount(const SimNode&) { return kSimGpus * kNumShapes + 1; }
v1::Record Gemm(const SimNode& n, int64_t seq) {
  if (seq == kSimGpus * kNumShapes) return LogRecord("gemm", "cuBLASLt bf16 on 8 GPUs");
  const int gpu = static_cast<int>(seq / kNumShapes);
  const Shape& s = kShapes[seq % kNumShapes];
  double v = s.tflops * (0.98 + 0.04 * Unit(static_cast<uint64_t>(n.index) * 131 + seq));
  if (n.slow_gpu && gpu == 3) v *= 0.70;
  auto labels = GpuLabels(n, gpu);
  labels["dtype"] = "bf16";
  labels["shape"] = s.name;
  labels["m"] = absl::StrCat(s.m);
  labels["n"] = absl::StrCat(s.n);
  labels["k"] = absl::StrCat(s.k);
  labels["verified"] = "true";
  labels["algos_timed"] = "8";
  labels["split_k"] = "1";
  return Measure("gemm", "gemm_tflops", v, "TFLOP/s", std::move(labels));
}

// --- collective (node scope, 8 ranks, nccl): 2 ops x 31 sizes, then 2 facts.
int64_t CollectiveCount(const SimNode&) { return 2 * kNcclSizes + 2; }
v1::Record Collective(const SimNode& n, int64_t seq) {
  std::map<std::string, std::string> base = {{"dtype", "float"},   {"ranks", "8"},
                                             {"nodes", n.name},    {"group_size", "1"},
                                             {"backend", "nccl"},  {"simulated", "true"}};
  if (seq >= 2 * kNcclSizes) {
    base["op"] = "all_reduce";
    return Measure("collective", seq == 2 * kNcclSizes ? "nccl_net_connections" : "nccl_channels",
                   seq == 2 * kNcclSizes ? 0 : 32, "count", base);
  }
  const char* op = kNcclOps[seq / kNcclSizes];
  const int i = static_cast<int>(seq % kNcclSizes);
  const int64_t bytes = int64_t{8} << i;
  // A latency-bound curve rising to ~480 GB/s bus bandwidth (NVLink 4, 8 GPUs).
  const double peak = op[4] == 'r' ? 480 : 370;
  const double half = 4e6;  // bytes at half the peak
  double v = peak * static_cast<double>(bytes) / (static_cast<double>(bytes) + half);
  v *= 0.99 + 0.02 * Unit(static_cast<uint64_t>(n.index) * 977 + seq);
  base["op"] = op;
  base["size_bytes"] = absl::StrCat(bytes);
  base["placement"] = "out";
  return Measure("collective", "busbw_gbps", v, "GB/s", std::move(base));
}

// --- health: counts, per GPU (4), per port (2 + 4 counters), xid totals,
// then the flapping port's finding.
constexpr int64_t kHealthGpu = 4, kHealthPort = 2 + kNumCounters;
int64_t HealthFixed() { return 3 + kSimGpus * kHealthGpu + kSimIbPorts * kHealthPort + 2; }
int64_t HealthCount(const SimNode& n) { return HealthFixed() + (n.flap_port ? 1 : 0); }
v1::Record Health(const SimNode& n, int64_t seq) {
  if (seq == 0) return Measure("health", "gpu_count", kSimGpus, "count", {{"simulated", "true"}});
  if (seq == 1) return Measure("health", "gpu_pci_count", kSimGpus, "count", {{"simulated", "true"}});
  if (seq == 2) return Measure("health", "ib_port_count", kSimIbPorts, "count", {{"simulated", "true"}});
  int64_t i = seq - 3;
  if (i < kSimGpus * kHealthGpu) {
    const int gpu = static_cast<int>(i / kHealthGpu);
    auto labels = GpuLabels(n, gpu);
    switch (i % kHealthGpu) {
      case 0: return Measure("health", "gpu_recovery_action", 0, "enum", labels);
      case 1: return Measure("health", "gpu_throttle_reasons", 0, "bitmask", labels);
      case 2: return Measure("health", "nvlink_links_active", 18, "count", labels);
      default: return Measure("health", "nvlink_links_down", 0, "count", labels);
    }
  }
  i -= kSimGpus * kHealthGpu;
  if (i < kSimIbPorts * kHealthPort) {
    const int port = static_cast<int>(i / kHealthPort);
    std::map<std::string, std::string> labels = {{"device", absl::StrCat("mlx5_", port)},
                                                 {"port", "1"},
                                                 {"link_layer", "InfiniBand"},
                                                 {"simulated", "true"}};
    const int64_t j = i % kHealthPort;
    if (j == 0) return Measure("health", "ib_port_active", 1, "bool", labels);
    if (j == 1) return Measure("health", "ib_port_rate_gbps", 400, "Gb/s", labels);
    const char* counter = kIbCounters[j - 2];
    const bool flapping = n.flap_port && port == 2;
    double v = 0;
    if (flapping && j - 2 == 2) v = 12;  // link_downed
    if (flapping && j - 2 == 1) v = 40;  // link_error_recovery
    labels["counter"] = counter;
    labels["width_bits"] = j - 2 == 0 || j - 2 == 3 ? "16" : "8";
    return Measure("health", "ib_counter", v, "count", labels);
  }
  i -= kSimIbPorts * kHealthPort;
  if (i == 0) return Measure("health", "xid_events_total", 0, "count", {{"simulated", "true"}});
  if (i == 1) return Measure("health", "sxid_events_total", 0, "count", {{"simulated", "true"}});
  v1::Record r = FindingRecord(
      "health", "health.ib_counter", v1::SEVERITY_WARN, "networking", "port:mlx5_2/1",
      "InfiniBand port mlx5_2/1: link_downed is 12",
      "times the link went down (flaps); link_error_recovery is 40",
      "check the cable and switch port for a bad link; clear the counters (perfquery -x -R) "
      "and rerun to measure the current rate");
  (*r.mutable_finding()->mutable_labels())["device"] = "mlx5_2";
  (*r.mutable_finding()->mutable_labels())["port"] = "1";
  (*r.mutable_finding()->mutable_labels())["counter"] = "link_downed";
  return r;
}

// --- consistency: one digest per GPU; an SDC node's GPU 5 differs and fails.
int64_t ConsistencyCount(const SimNode& n) { return kSimGpus + (n.sdc ? 1 : 0); }
v1::Record Consistency(const SimNode& n, int64_t seq) {
  if (seq < kSimGpus) {
    const bool bad = n.sdc && seq == 5;
    auto labels = GpuLabels(n, static_cast<int>(seq));
    labels["workload"] = "gemm_chain";
    labels["dtype"] = "fp32";
    labels["digest"] = bad ? "sha256:5dc0bad0" : "sha256:9f1c2e7a";
    labels["backend"] = "cuda";
    return Measure("consistency", "consistency_digest", bad ? 1.0000001e6 : 1e6, "sum", labels);
  }
  v1::Record r = FindingRecord(
      "consistency", "consistency.nondeterministic", v1::SEVERITY_FAIL, "reliability", "gpu:5",
      "gemm_chain gave a different digest on GPU 5 than on the node's other GPUs",
      "the same deterministic computation differed between GPUs: silent data corruption",
      "drain and inspect hardware: run the vendor's GPU diagnostics (dcgmi diag -r 3)");
  (*r.mutable_finding()->mutable_labels())["workload"] = "gemm_chain";
  (*r.mutable_finding()->mutable_labels())["gpu"] = "5";
  return r;
}

}  // namespace

SimNode MakeSimNode(int index, const std::string& prefix, const SimFaults& f) {
  SimNode n;
  n.index = index;
  n.name = absl::StrFormat("%s%05d", prefix, index);
  const uint64_t base = Mix(f.seed) ^ (static_cast<uint64_t>(index) << 8);
  n.slow_gpu = Unit(base + 1) < f.slow_gpu;
  n.flap_port = Unit(base + 2) < f.flap_port;
  n.sdc = Unit(base + 3) < f.sdc;
  n.hang = Unit(base + 4) < f.hang;
  n.disconnect = Unit(base + 5) < f.disconnect;
  return n;
}

v1::Inventory SimInventory(const SimNode& n) {
  v1::Inventory inv;
  inv.set_hostname(n.name);
  inv.set_gpu_count(kSimGpus);
  inv.set_gpu_model(kModel);
  inv.set_cpu_cores(112);
  inv.set_memory_gib(2015.6);
  inv.set_kernel("6.8.0-simulated");
  inv.set_driver_version("550.90.07");
  (*inv.mutable_facts())["simulated"] = "true";
  return inv;
}

int64_t SimRecordCount(const SimNode& n, const std::string& suite) {
  if (suite == "gemm") return GemmCount(n);
  if (suite == "collective") return CollectiveCount(n);
  if (suite == "health") return HealthCount(n);
  if (suite == "consistency") return ConsistencyCount(n);
  return 2;
}

v1::Record SimRecordAt(const SimNode& n, const std::string& suite, int64_t seq,
                       int64_t time_unix_ns) {
  v1::Record r;
  if (suite == "gemm") {
    r = Gemm(n, seq);
  } else if (suite == "collective") {
    r = Collective(n, seq);
  } else if (suite == "health") {
    r = Health(n, seq);
  } else if (suite == "consistency") {
    r = Consistency(n, seq);
  } else if (seq == 0) {
    r = LogRecord(suite, "this suite is not modelled by the simulator");
  } else {
    r = FindingRecord(suite, absl::StrCat(suite, ".not_measured"), v1::SEVERITY_INFO, "lifecycle",
                      "node", absl::StrCat("not measured: ", suite, " is not simulated"),
                      "cmax-scale-agents writes records only for gemm, collective, health and "
                      "consistency",
                      "none");
    r.mutable_finding()->set_not_measured(true);
  }
  r.set_time_unix_ns(time_unix_ns);
  return r;
}

}  // namespace cmax::scale
