// A real training job across the cluster (benchmarks/workload): train.py,
// a decoder-only transformer trained data-parallel with torch.distributed,
// one rank per GPU (or per CPU-only node); judged by
// benchmarks/workload/workload_judge.cc (loss agreement, stragglers, stalls).
#include "common/suite_declaration.h"

#include <regex>

#include "absl/strings/str_cat.h"

namespace cmax::suites::workload {

using v1::SCOPE_GANG;

namespace {

// One bar chart per plan entry and figure, a bar per GPU (per node on
// CPU-only nodes): "workload:tokens_per_s (<entry>)".
bool PerRankChart(const v1::Measurement& m, const std::string&, const std::string& entry,
                  ChartNames* out) {
  const bool gpu = !ChartLabel(m, "gpu").empty();
  const std::string per = gpu ? " per GPU" : " per node (CPU)";
  out->id = absl::StrCat("workload:", m.metric(), " (", entry, ")");
  if (m.metric() == "tokens_per_s") {
    out->title = absl::StrCat("Training tokens/s", per, " (", entry, ")");
  } else if (m.metric() == "mfu") {
    out->title = absl::StrCat("Training MFU", per, " (", entry, ")");
  } else {
    out->title = absl::StrCat("Training step time outside the all-reduce", per, " (", entry, ")");
  }
  return true;
}

}  // namespace

SuiteInfo Declaration() {
  return {
    .name = "workload",
    .binary = "cmax-bench",
    .category = "compute",
    // Loss agreement, stragglers and stalls are about the node's
    // reliability under a real job.
    .judge_category = "reliability",
    .help = "a data-parallel transformer training job (PyTorch): tokens/s, MFU, stragglers, "
            "loss agreement",
    .details =
        "Trains a small decoder-only transformer (train.py, shipped in\n"
        "<prefix>/share/cmax/workload) data-parallel with torch.distributed: NCCL and\n"
        "BF16 autocast on GPUs, gloo and fp32 on CPU-only nodes. Each cmax-bench rank\n"
        "starts one python rank (argv, never a shell) with MASTER_ADDR/MASTER_PORT from\n"
        "rank 0's address, published through the group's rendezvous. Every replica\n"
        "draws the same synthetic batch, so every replica's loss must be identical.\n"
        "A rank that logs no step for --stall seconds reports the stall and exits 1.\n"
        "Without torch, without CUDA in torch on a GPU node, or with --device cuda on a\n"
        "node without NVIDIA GPUs, it is not measured (exit 2). Run alone (no\n"
        "rendezvous) it trains on one rank.",
    .scopes = {SCOPE_GANG},
    .default_timeout_s = 900,
    .exclusive = true,
    .params =
        {
            {.name = "python", .type = ParamType::kToken,
             .help = "the interpreter, a name looked up on PATH: python, python3 or "
                     "python3.N (default python3)"},
            {.name = "layers", .type = ParamType::kInt, .help = "transformer blocks (default 4)",
             .min = 1, .max = 256},
            {.name = "width", .type = ParamType::kInt,
             .help = "model width, a multiple of heads (default 256)", .min = 8, .max = 65536},
            {.name = "heads", .type = ParamType::kInt, .help = "attention heads (default 4)",
             .min = 1, .max = 512},
            {.name = "seq", .type = ParamType::kInt, .help = "sequence length (default 128)",
             .min = 2, .max = 131072},
            {.name = "batch", .type = ParamType::kInt,
             .help = "sequences per rank per step (default 8)", .min = 1, .max = 65536},
            {.name = "vocab", .type = ParamType::kInt, .help = "vocabulary size (default 1024)",
             .min = 16, .max = 1 << 20},
            {.name = "steps", .type = ParamType::kInt, .help = "training steps (default 50)",
             .min = 2, .max = 1000000},
            {.name = "warmup-steps", .type = ParamType::kInt,
             .help = "first steps left out of the figures (default 5)", .min = 0, .max = 100000},
            {.name = "threads", .type = ParamType::kInt,
             .help = "CPU threads per rank (default: torch's)", .min = 1, .max = 1024},
            {.name = "device", .type = ParamType::kEnum,
             .help = "auto (default: cuda where the node has NVIDIA GPUs), cpu or cuda",
             .choices = {"auto", "cpu", "cuda"}},
            {.name = "stall", .type = ParamType::kNumber,
             .help = "seconds without a step on a rank that count as a stall (default 120; "
                     "before the first step at least 180)",
             .min = 1, .max = 86400},
            {.name = "port-range", .type = ParamType::kToken,
             .help = "LOW-HIGH: rank 0's MASTER_PORT is the first free port of this range "
                     "(default: any free port)"},
        },
    .metrics =
        {
            {.name = "loss", .unit = "nats", .better = MetricBetter::kNeither,
             .help = "training loss (cross entropy, natural log) of a step on one replica (a "
                     "Sample per step; label step, rank)",
             .loss_curve = true},
            {.name = "step_time_s", .unit = "s", .better = MetricBetter::kLower,
             .help = "wall time of one training step on one rank (a Sample per step; label "
                     "step, warmup)",
             .chart = {.kind = ChartKind::kOverTime,
                       .title = "Training step time per rank",
                       .family = "Training step time per rank over time"}},
            {.name = "compute_s", .unit = "s", .better = MetricBetter::kLower,
             .help = "a step's time outside the gradient all-reduce on one rank (a Sample per "
                     "step; label step, warmup): where a slow rank shows, the others wait in the "
                     "all-reduce"},
            {.name = "compute_median_s", .unit = "s", .better = MetricBetter::kLower,
             .help = "a rank's median compute_s after the warm-up steps",
             .chart = {.kind = ChartKind::kPerSubject, .names = PerRankChart, .labels = {"gpu"},
                       .family = "Training step time per rank"}},
            {.name = "step_time_median_s", .unit = "s", .better = MetricBetter::kLower,
             .help = "a rank's median step time after the warm-up steps"},
            {.name = "step_time_p99_p50", .unit = "ratio", .better = MetricBetter::kLower,
             .help = "a rank's 99th over 50th percentile step time after the warm-up steps"},
            {.name = "tokens_per_s", .unit = "tokens/s", .better = MetricBetter::kHigher,
             .help = "tokens per second of one rank (one GPU), median over the steps after "
                     "the warm-up",
             .chart = {.kind = ChartKind::kPerSubject, .names = PerRankChart, .labels = {"gpu"},
                       .family = "Training tokens/s per GPU"}},
            {.name = "model_tflops", .unit = "TFLOP/s", .better = MetricBetter::kHigher,
             .help = "achieved model FLOP/s of one rank: (6*N + 12*L*s*d) per token times "
                     "tokens/s (PaLM appendix B)"},
            {.name = "mfu", .unit = "ratio", .better = MetricBetter::kHigher,
             .help = "model FLOPs utilisation: model_tflops over the GPU's dense BF16 peak "
                     "(reports/gpu_specs.cc); GPUs only",
             .chart = {.kind = ChartKind::kPerSubject, .names = PerRankChart, .labels = {"gpu"},
                       .family = "Training MFU per GPU",
                       .family_needs = "a GPU whose dense BF16 peak is known"}},
            {.name = "optimizer_s", .unit = "s", .better = MetricBetter::kLower,
             .help = "a rank's median optimizer step time after the warm-up"},
            {.name = "comm_s", .unit = "s", .better = MetricBetter::kLower,
             .help = "a rank's median gradient all-reduce time after the warm-up"},
            {.name = "peak_mem_bytes", .unit = "bytes", .better = MetricBetter::kNeither,
             .help = "peak memory of a rank: GPU memory allocated, or the process's peak RSS "
                     "on CPU"},
        },
    .check =
        [](const std::map<std::string, std::string>& p) -> absl::Status {
          if (auto it = p.find("python"); it != p.end()) {
            static const std::regex kPython("python(3(\\.[0-9]{1,2})?)?");
            if (!std::regex_match(it->second, kPython)) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "python '", it->second, "' is not python, python3 or python3.N"));
            }
          }
          auto num = [&](const char* k, long def) {
            auto it = p.find(k);
            return it == p.end() ? def : std::atol(it->second.c_str());
          };
          if (num("width", 256) % num("heads", 4) != 0) {
            return absl::InvalidArgumentError("width must be a multiple of heads");
          }
          if (num("warmup-steps", 5) >= num("steps", 50)) {
            return absl::InvalidArgumentError("warmup-steps must be below steps");
          }
          if (auto it = p.find("port-range"); it != p.end()) {
            static const std::regex kRange("[0-9]{1,5}-[0-9]{1,5}");
            if (!std::regex_match(it->second, kRange)) {
              return absl::InvalidArgumentError(
                  absl::StrCat("port-range '", it->second, "' is not LOW-HIGH"));
            }
          }
          return absl::OkStatus();
        },
  };
}

}  // namespace cmax::suites::workload
