// Workload judge (docs/workload.md): one training job is one task of the
// workload suite; every rank's records carry labels rank and world_size (a
// record counts for its rank only when it is that rank's own, record_speaker.h:
// one node's records never speak for another node's rank); the
// per-step figures (loss, step_time_s, compute_s) are Samples.
//
//  1. Loss agreement: every replica trains on the same batch with the same
//     parameters, so at every logged step every rank's loss must equal the
//     others'. The reference at a step is the value most ranks logged (rank
//     0's on a tie). Tolerance: exact on CPU (fp32, deterministic gloo); on
//     GPUs (bf16 autocast, NCCL) a relative 1e-6, room for nothing but a
//     last-bit difference: NCCL's all-reduce hands every rank the same sum,
//     so replicas with identical parameters compute identical losses, and a
//     real departure grows step by step. A rank that departs -> fail naming
//     its node, rank and GPU, and the first step; none -> pass.
//     Against a baseline (the plan's `baseline:` file, saved from a run of
//     the same model: its loss curve, reports/loss_curve.h): every rank's
//     loss at each step both logged within a relative 1e-5 (CPU, fp32) or
//     1e-3 (GPU, bf16) of the baseline's. A rank outside -> fail naming its
//     node, GPU and rank and the step; when the baseline ran another device
//     or PyTorch, one fleet warn instead (the software may be what differs,
//     no node is blamed); a baseline without this model's curve -> not
//     measured.
//  2. Stragglers: a rank whose median step time outside the gradient
//     all-reduce after the warm-up (compute_s per step, else
//     compute_median_s, else step time) is above 1.05x the job's median of
//     those medians -> warn naming its node and rank (whole step times agree
//     in synchronous data parallelism: the others wait in the all-reduce);
//     the job's worst step-time p99/p50 ratio is reported with the pass.
//     Per-step records make it work for a job that later stalled too.
//  3. Stalls (workload.no_step findings, written by ranks that logged no step
//     for the stall time): the rank that stopped is blamed (fail), not the
//     ones that waited: the ranks of the job that wrote no stall finding and
//     did not finish, else those whose python rank was stopped (process
//     state T), else those that had not reached the step's gradient
//     all-reduce (in_comm false), else the ones with the fewest steps.
//  4. CPU MFU: where the run measured a node's host GEMM (gemm suite, cpu
//     backend, fp32 like the CPU training; its best shape), a CPU rank's
//     model_tflops over it is its MFU; one fleet-wide pass reports the
//     median and the lowest ranks (the scorecard's key figures); never
//     against a made-up peak.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/loss_curve.h"
#include "reports/record_speaker.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

constexpr double kStragglerFactor = 1.05;
constexpr double kGpuLossTolerance = 1e-6;
// Against a baseline run of the same model on the same device and PyTorch:
// room for the rounding of another world size's all-reduce (a sum of N
// equal gradients over N is not always the gradient to the last bit) grown
// over the steps. A run of the same plan on the same machine repeats the
// baseline to the bit; the 1e-3 LayerNorm perturbation of the tests moves
// the next step's loss by 5e-5 (CPU), which 1e-5 catches. bf16 autocast
// rounds a GEMM's inputs to 8 bits of mantissa, where such a last-bit
// difference can flip a rounding, so a GPU run gets 1e-3.
constexpr double kCpuBaselineLossTolerance = 1e-5;
constexpr double kGpuBaselineLossTolerance = 1e-3;

std::string Category() { return JudgeCategory("workload"); }

v1::RuleResult Rule(const std::string& id, const std::string& outcome, const std::string& node,
                    const std::string& subject, const std::string& message) {
  return MakeRule(absl::StrCat("workload.", id), Category(), outcome, node, subject, message);
}

struct RankInfo {
  std::string node, gpu, device;
  bool cuda = false;
  std::map<int, double> loss;  // step -> loss
  double median_s = -1, compute_median_s = -1, p99_p50 = -1, tflops = -1;
  // Per step after the warm-up: its time outside the all-reduce, its time.
  std::vector<double> compute, step_time;
  bool finished = false;  // wrote its summary figures
};

struct Stall {
  std::string node;
  int last_step = -1;
  bool in_comm = false;
  bool stopped = false;  // its python rank was in state T (stopped)
  double waited_s = 0;
};

struct Job {
  int world = 0;
  // What fixes its loss curve, from the loss Samples' labels.
  std::string model, device, dtype, torch_version;
  std::map<int, RankInfo> ranks;
  std::map<int, Stall> stalls;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Who(int rank, const RankInfo& r) {
  return absl::StrCat("rank ", rank, " (", r.node, r.gpu.empty() ? "" : " gpu:" + r.gpu, ")");
}

std::string Subject(int rank, const RankInfo& r) {
  return absl::StrCat("node:", r.node, r.gpu.empty() ? "" : " gpu:" + r.gpu, " rank:", rank);
}

// How far a loss is from the reference: relative, or absolute below 1 nat.
double LossDiff(double got, double ref) {
  return std::fabs(got - ref) / std::max(1.0, std::fabs(ref));
}

void JudgeLoss(const std::string& task, const Job& job, std::vector<v1::RuleResult>* out) {
  bool cuda = false;
  std::map<int, std::map<int, double>> loss_by_rank;
  for (const auto& [rank, r] : job.ranks) {
    loss_by_rank[rank] = r.loss;
    cuda = cuda || r.cuda;
  }
  const std::map<int, double> agreed = AgreedLosses(loss_by_rank);  // step -> reference
  if (agreed.empty() || job.ranks.size() < 2) return;
  const double tol = cuda ? kGpuLossTolerance : 0;
  std::map<int, std::pair<int, double>> departed;  // rank -> (first step, its loss - ref)
  for (const auto& [s, ref] : agreed) {
    for (const auto& [rank, r] : job.ranks) {
      auto it = r.loss.find(s);
      if (it == r.loss.end() || departed.count(rank)) continue;
      if (LossDiff(it->second, ref) > tol) {
        departed[rank] = {s, it->second - ref};
      }
    }
  }
  const std::string tol_text = cuda ? "relative 1e-6 (GPU, bf16)" : "exact (CPU, fp32)";
  for (const auto& [rank, d] : departed) {
    const RankInfo& r = job.ranks.at(rank);
    v1::RuleResult res = Rule(
        "loss_departs", "fail", r.node, Subject(rank, r),
        absl::StrCat("training loss of ", Who(rank, r), " departs from the other replicas' at "
                     "step ", d.first, " (by ", absl::StrFormat("%.3g", d.second),
                     "): replicas with the same parameters and batch must agree (",
                     tol_text, "), so this one computed something else"));
    res.set_value(r.loss.at(d.first));
    res.set_unit("nats");
    res.add_evidence(absl::StrCat("task ", task, ", ", job.ranks.size(), " ranks, tolerance ",
                                  tol_text));
    res.set_action("check this GPU or CPU for silent data corruption (ECC, Xid, the consistency "
                   "suite) and rerun the workload");
    out->push_back(std::move(res));
  }
  if (departed.empty()) {
    v1::RuleResult res =
        Rule("loss_agrees", "pass", "", absl::StrCat("task ", task),
             absl::StrCat("training loss identical on ", job.ranks.size(), " replicas at ",
                          agreed.size(), " steps (", tol_text, ")"));
    res.add_evidence(absl::StrCat("task ", task));
    out->push_back(std::move(res));
  }
}

// The job's losses against the plan's baseline run (its loss curve of the
// same model): see the top of this file.
void JudgeLossBaseline(const std::string& task, const Job& job, const v1::Plan& plan,
                       std::vector<v1::RuleResult>* out) {
  if (!plan.has_baseline()) return;
  bool cuda = false, any_loss = false;
  for (const auto& [rank, r] : job.ranks) {
    cuda = cuda || r.cuda;
    any_loss = any_loss || !r.loss.empty();
  }
  if (!any_loss) return;
  const v1::BaselineFile& b = plan.baseline();
  const std::string from = absl::StrCat("the baseline run ", b.run_id(),
                                        b.source().empty() ? "" : " (" + b.source() + ")");
  const std::string subject = absl::StrCat("task ", task);
  const v1::LossCurve* want = nullptr;
  for (const auto& c : b.loss_curves()) {
    if (!job.model.empty() && c.model() == job.model && c.dtype() == job.dtype) {
      want = &c;
      break;
    }
  }
  if (want == nullptr) {
    std::vector<std::string> held;
    for (const auto& c : b.loss_curves()) held.push_back(absl::StrCat(c.model(), " ", c.dtype()));
    v1::RuleResult res = Rule(
        "loss_baseline", "not_measured", "", subject,
        absl::StrCat("training loss not compared with a baseline: ", from,
                     " holds no loss curve of this job's model (",
                     job.model.empty() ? "its records name none" : job.model + " " + job.dtype,
                     ")", held.empty() ? "" : "; it holds: " + absl::StrJoin(held, "; ")));
    res.set_action("save a baseline from a run of this plan (cmaxctl baseline save RUN -o FILE) "
                   "and name it in the plan's baseline:");
    out->push_back(std::move(res));
    return;
  }
  std::map<int, double> ref;
  for (int i = 0; i < want->steps_size() && i < want->losses_size(); ++i) {
    ref[want->steps(i)] = want->losses(i);
  }
  const double tol = cuda ? kGpuBaselineLossTolerance : kCpuBaselineLossTolerance;
  const std::string tol_text = cuda ? "relative 1e-3 (GPU, bf16)" : "relative 1e-5 (CPU, fp32)";
  struct Departure {
    int step;
    double got, want;
  };
  std::map<int, Departure> departed;  // rank -> its first step outside the tolerance
  std::set<int> common;
  double worst = 0;
  for (const auto& [rank, r] : job.ranks) {
    for (const auto& [step, got] : r.loss) {
      auto it = ref.find(step);
      if (it == ref.end()) continue;
      common.insert(step);
      const double rel = LossDiff(got, it->second);
      worst = std::max(worst, rel);
      if (rel > tol && !departed.count(rank)) departed[rank] = {step, got, it->second};
    }
  }
  const std::string evidence =
      absl::StrCat(subject, ", ", job.ranks.size(), " ranks; ", from, ": ", want->model(), ", ",
                   want->device(), ", torch ", want->torch_version(), ", ", want->replicas(),
                   " replicas, steps ", ref.empty() ? 0 : ref.begin()->first, "-",
                   ref.empty() ? 0 : ref.rbegin()->first);
  if (common.empty()) {
    v1::RuleResult res = Rule(
        "loss_baseline", "not_measured", "", subject,
        absl::StrCat("training loss not compared with a baseline: no step logged by both this "
                     "job and ", from));
    res.add_evidence(evidence);
    out->push_back(std::move(res));
    return;
  }
  const bool same_stack =
      want->device() == job.device && want->torch_version() == job.torch_version;
  if (!departed.empty() && !same_stack) {
    const auto& [rank, d] = *departed.begin();
    v1::RuleResult res = Rule(
        "loss_baseline", "warn", "", subject,
        absl::StrCat("training loss departs from ", from, "'s on ", departed.size(), " of ",
                     job.ranks.size(), " replicas (first rank ", rank, " at step ", d.step, ": ",
                     FormatNumber(d.got), " vs ", FormatNumber(d.want), ", tolerance ", tol_text,
                     "), but the baseline ran on ", want->device(), " with torch ",
                     want->torch_version(), " and this job on ", job.device, " with torch ",
                     job.torch_version, ": the difference may be the software's or the "
                     "hardware's, so no node is blamed"));
    res.set_value(worst);
    res.set_unit("ratio");
    res.add_evidence(evidence);
    res.set_action("compare with a baseline saved on this device and PyTorch (cmaxctl baseline "
                   "save RUN -o FILE) once a run is trusted");
    out->push_back(std::move(res));
    return;
  }
  for (const auto& [rank, d] : departed) {
    const RankInfo& r = job.ranks.at(rank);
    v1::RuleResult res = Rule(
        "loss_baseline", "fail", r.node, Subject(rank, r),
        absl::StrCat("training loss of ", Who(rank, r), " departs from ", from, "'s at step ",
                     d.step, ": ", FormatNumber(d.got), " vs ", FormatNumber(d.want),
                     " (tolerance ", tol_text, "; same model, device and torch)",
                     departed.size() == job.ranks.size()
                         ? "; every replica departs alike: if this cluster's CPUs or PyTorch "
                           "build differ from the baseline's, save a new baseline"
                         : ""));
    res.set_value(d.got);
    res.set_expected(d.want);
    res.set_unit("nats");
    res.add_evidence(evidence);
    res.set_action("check this GPU or CPU for silent data corruption (ECC, Xid, the consistency "
                   "suite) and rerun the workload");
    out->push_back(std::move(res));
  }
  if (departed.empty()) {
    v1::RuleResult res = Rule(
        "loss_baseline", "pass", "", subject,
        absl::StrCat("training loss within ", tol_text, " of ", from, "'s at ", common.size(),
                     " steps on every one of ", job.ranks.size(),
                     " replicas (largest relative difference ",
                     absl::StrFormat("%.3g", worst), ")"));
    res.set_value(worst);
    res.set_unit("ratio");
    res.add_evidence(evidence);
    out->push_back(std::move(res));
  }
}

// A rank's time per step for the straggler rule: its median time outside
// the all-reduce (per-step records, else its summary), else its median step
// time. In synchronous data parallelism every rank leaves the all-reduce
// together, so whole step times agree; the slow rank shows in its compute
// while the others wait in the all-reduce.
double StragglerFigure(const RankInfo& r) {
  if (!r.compute.empty()) return Median(r.compute);
  if (r.compute_median_s > 0) return r.compute_median_s;
  if (!r.step_time.empty()) return Median(r.step_time);
  return r.median_s;
}

double P99OverP50(std::vector<double> v) {
  if (v.size() < 2) return -1;
  std::sort(v.begin(), v.end());
  const double p50 = Median(v);
  const double pos = 0.99 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(v.size() - 1, lo + 1);
  const double p99 = v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  return p50 > 0 ? p99 / p50 : -1;
}

void JudgeStragglers(const std::string& task, const Job& job,
                     std::vector<v1::RuleResult>* out) {
  std::vector<double> figures;
  double worst_ratio = 0;
  for (const auto& [rank, r] : job.ranks) {
    const double f = StragglerFigure(r);
    if (f > 0) figures.push_back(f);
    const double ratio = r.step_time.size() >= 2 ? P99OverP50(r.step_time) : r.p99_p50;
    worst_ratio = std::max(worst_ratio, ratio);
  }
  if (figures.size() < 2) return;
  const double job_median = Median(figures);
  int named = 0;
  for (const auto& [rank, r] : job.ranks) {
    const double f = StragglerFigure(r);
    if (f <= kStragglerFactor * job_median) continue;
    ++named;
    v1::RuleResult res = Rule(
        "straggler", "warn", r.node, Subject(rank, r),
        absl::StrCat(Who(rank, r), " is a straggler: median step time outside the all-reduce ",
                     FormatNumber(f), " s, ", FormatNumber(f / job_median),
                     "x the job's median ", FormatNumber(job_median), " s (limit ",
                     FormatNumber(kStragglerFactor), "x); every other rank waits for it"));
    res.set_value(f);
    res.set_expected(kStragglerFactor * job_median);
    res.set_unit("s");
    res.add_evidence(absl::StrCat("task ", task, ", ", r.compute.size(),
                                  " steps after the warm-up; step-time p99/p50 of this rank ",
                                  FormatNumber(r.step_time.size() >= 2 ? P99OverP50(r.step_time)
                                                                       : r.p99_p50)));
    res.set_action("check this node's clocks, throttling, CPU load and NIC; rerun the workload");
    out->push_back(std::move(res));
  }
  if (named == 0) {
    v1::RuleResult res = Rule(
        "steady", "pass", "", absl::StrCat("task ", task),
        absl::StrCat("no straggler among ", figures.size(), " ranks: job median step time "
                     "outside the all-reduce ", FormatNumber(job_median), " s, every rank within ",
                     FormatNumber(kStragglerFactor), "x; worst step-time p99/p50 ",
                     FormatNumber(worst_ratio)));
    res.set_value(worst_ratio);
    res.set_unit("ratio");
    out->push_back(std::move(res));
  }
}

void JudgeStalls(const std::string& task, const Job& job, std::vector<v1::RuleResult>* out) {
  if (job.stalls.empty()) return;
  int world = job.world;
  for (const auto& [rank, r] : job.ranks) world = std::max(world, rank + 1);
  std::vector<int> blamed;
  std::string why;
  for (int rank = 0; rank < world; ++rank) {
    auto it = job.ranks.find(rank);
    const bool finished = it != job.ranks.end() && it->second.finished;
    if (!job.stalls.count(rank) && !finished) blamed.push_back(rank);
  }
  // The ranks of the stall findings that `pred` holds for, when they are
  // some of the job's ranks but not all of them.
  auto some = [&](auto pred) {
    std::vector<int> ranks;
    for (const auto& [rank, s] : job.stalls) {
      if (pred(s)) ranks.push_back(rank);
    }
    if (static_cast<int>(ranks.size()) >= world) ranks.clear();
    return ranks;
  };
  if (!blamed.empty()) {
    why = "it reported nothing while the other ranks waited for it, so it stopped first";
  } else if (blamed = some([](const Stall& s) { return s.stopped; }); !blamed.empty()) {
    why = "its python rank was stopped (process state T) while the other ranks waited";
  } else if (blamed = some([](const Stall& s) { return !s.in_comm; }); !blamed.empty()) {
    why = "it never reached the step's gradient all-reduce, where the other ranks waited";
  } else {
    int least = -1;
    for (const auto& [rank, s] : job.stalls) {
      least = least < 0 ? s.last_step : std::min(least, s.last_step);
    }
    for (const auto& [rank, s] : job.stalls) {
      if (s.last_step == least) blamed.push_back(rank);
    }
    why = static_cast<int>(blamed.size()) == world
              ? "every rank stalled at the same step: the job hung together (fabric, or a "
                "collective that never completed)"
              : absl::StrCat("it completed the fewest steps (", least, ")");
  }
  std::vector<std::string> waited;
  for (const auto& [rank, s] : job.stalls) {
    waited.push_back(absl::StrFormat("rank %d (%s) waited %.1f s after step %d%s", rank, s.node,
                                     s.waited_s, s.last_step,
                                     s.in_comm ? " in the all-reduce" : ""));
  }
  for (int rank : blamed) {
    std::string node;
    std::string gpu;
    if (auto it = job.ranks.find(rank); it != job.ranks.end()) {
      node = it->second.node;
      gpu = it->second.gpu;
    }
    if (node.empty()) {
      if (auto it = job.stalls.find(rank); it != job.stalls.end()) node = it->second.node;
    }
    v1::RuleResult res = Rule(
        "stall", "fail", node,
        absl::StrCat("node:", node, gpu.empty() ? "" : " gpu:" + gpu, " rank:", rank),
        absl::StrCat("training job stalled: rank ", rank, " (", node, ") is to blame: ", why));
    res.add_evidence(absl::StrCat("task ", task, ", ", world, " ranks"));
    for (const auto& w : waited) res.add_evidence(w);
    res.set_action("check this node: the python rank (stopped or hung?), its kernel log (Xid), "
                   "GPU and NIC; then rerun the workload");
    out->push_back(std::move(res));
  }
}

// A CPU rank's model TFLOP/s over its node's best fp32 host GEMM.
struct CpuMfu {
  double ratio = 0;
  std::string line;  // "rank 0 (node-0): model ... TFLOP/s, 9.8% of ..."
  std::string node;
};

constexpr size_t kCpuMfuLines = 10;  // ranks listed in the rule's evidence

// One fleet-wide pass for the scorecard's key figures (a category shows
// per-node passes nowhere): the median ratio and the lowest rank, with the
// lowest ranks' own lines as its evidence. Information, never a grade.
void JudgeCpuMfu(std::vector<CpuMfu> ranks, std::vector<v1::RuleResult>* out) {
  if (ranks.empty()) return;
  std::sort(ranks.begin(), ranks.end(),
            [](const CpuMfu& a, const CpuMfu& b) { return a.ratio < b.ratio; });
  std::vector<double> ratios;
  for (const auto& r : ranks) ratios.push_back(r.ratio);
  const double median = Median(ratios);
  std::string message = absl::StrCat(
      "CPU MFU (model TFLOP/s over the node's own measured fp32 host GEMM) of ",
      ranks.size() == 1 ? "1 rank" : absl::StrCat(ranks.size(), " ranks"), ": ");
  if (ranks.size() == 1) {
    absl::StrAppend(&message, FormatNumber(100 * median), "% (", ranks[0].node, ")");
  } else {
    absl::StrAppend(&message, "median ", FormatNumber(100 * median), "%, lowest ",
                    FormatNumber(100 * ranks[0].ratio), "% (", ranks[0].node, ")");
  }
  v1::RuleResult res = Rule("cpu_mfu", "pass", "", "fleet", message);
  res.set_value(median);
  res.set_unit("ratio");
  for (size_t i = 0; i < ranks.size() && i < kCpuMfuLines; ++i) res.add_evidence(ranks[i].line);
  if (ranks.size() > kCpuMfuLines) {
    res.add_evidence(absl::StrCat("and ", ranks.size() - kCpuMfuLines, " more ranks"));
  }
  out->push_back(std::move(res));
}

}  // namespace

void WorkloadJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  std::map<std::string, Job> jobs;  // by task
  std::map<std::string, double> host_gemm;  // node -> best cpu GEMM TFLOP/s
  const RecordSpeaker speaker(data);
  RecordFilter filter;
  ForEachRecord(data, filter, [&](const v1::ExportedRecord& rec) {
    const v1::Record& r = rec.record();
    if (r.has_sample()) {  // per step: loss, step_time_s, compute_s
      const v1::Sample& sm = r.sample();
      const std::string suite = sm.suite().empty() ? rec.suite() : sm.suite();
      if (suite != "workload") return;
      // A rank's figures are its own records' (RecordSpeaker): a record
      // labelled with another node's rank is ignored.
      const std::optional<int> own = speaker.OwnRank(rec, sm.labels());
      int step = 0;
      if (!own || !absl::SimpleAtoi(LabelValue(sm.labels(), "step"), &step)) return;
      const int rank = *own;
      Job& job = jobs[rec.task_id()];
      int world = 0;
      if (absl::SimpleAtoi(LabelValue(sm.labels(), "world_size"), &world)) job.world = world;
      RankInfo& ri = job.ranks[rank];
      ri.node = RecordNode(rec);
      ri.gpu = LabelValue(sm.labels(), "gpu");
      ri.cuda = ri.cuda || !ri.gpu.empty();
      const bool warmup = LabelValue(sm.labels(), "warmup") == "true";
      if (sm.metric() == "loss") {
        ri.loss[step] = sm.value();
        if (job.model.empty()) {
          job.model = LabelValue(sm.labels(), "model");
          job.device = CurveDevice(sm.labels());
          job.dtype = LabelValue(sm.labels(), "dtype");
          job.torch_version = LabelValue(sm.labels(), "torch_version");
        }
      } else if (sm.metric() == "compute_s" && !warmup) {
        ri.compute.push_back(sm.value());
      } else if (sm.metric() == "step_time_s" && !warmup) {
        ri.step_time.push_back(sm.value());
      }
      return;
    }
    if (r.has_measurement()) {
      const v1::Measurement& m = r.measurement();
      const std::string suite = m.suite().empty() ? rec.suite() : m.suite();
      if (suite == "gemm" && m.metric() == "gemm_tflops" && LabelValue(m, "backend") == "cpu" &&
          LabelValue(m, "dtype") == "fp32") {
        double& g = host_gemm[RecordNode(rec)];
        g = std::max(g, m.value());
        return;
      }
      if (suite != "workload") return;
      const std::optional<int> own = speaker.OwnRank(rec, m.labels());
      if (!own) return;
      const int rank = *own;
      Job& job = jobs[rec.task_id()];
      int world = 0;
      if (absl::SimpleAtoi(LabelValue(m, "world_size"), &world)) job.world = world;
      RankInfo& ri = job.ranks[rank];
      ri.node = RecordNode(rec);
      ri.gpu = LabelValue(m, "gpu");
      ri.cuda = ri.cuda || !ri.gpu.empty();
      if (m.metric() == "compute_median_s") {
        ri.compute_median_s = m.value();
      } else if (m.metric() == "step_time_median_s") {
        ri.median_s = m.value();
        ri.finished = true;
      } else if (m.metric() == "step_time_p99_p50") {
        ri.p99_p50 = m.value();
      } else if (m.metric() == "model_tflops") {
        ri.tflops = m.value();
      }
      return;
    }
    if (!r.has_finding() || r.finding().check_id() != "workload.no_step") return;
    const auto& l = r.finding().labels();
    const std::optional<int> own = speaker.OwnRank(rec, l);
    if (!own) return;
    const int rank = *own;
    Job& job = jobs[rec.task_id()];
    int world = 0;
    if (absl::SimpleAtoi(LabelValue(l, "world_size"), &world)) job.world = world;
    Stall& s = job.stalls[rank];
    s.node = RecordNode(rec);
    (void)absl::SimpleAtoi(LabelValue(l, "last_step"), &s.last_step);
    (void)absl::SimpleAtod(LabelValue(l, "waited_s"), &s.waited_s);
    s.in_comm = LabelValue(l, "in_comm") == "true";
    s.stopped = LabelValue(l, "process_state") == "T";
  });
  std::vector<CpuMfu> cpu_mfu;
  for (const auto& [task, job] : jobs) {
    JudgeLoss(task, job, out);
    JudgeLossBaseline(task, job, data.plan, out);
    JudgeStragglers(task, job, out);
    JudgeStalls(task, job, out);
    for (const auto& [rank, r] : job.ranks) {
      if (r.cuda || r.tflops <= 0) continue;
      auto it = host_gemm.find(r.node);
      if (it == host_gemm.end() || it->second <= 0) continue;
      cpu_mfu.push_back({r.tflops / it->second,
                         absl::StrCat(Who(rank, r), ": model ", FormatNumber(r.tflops),
                                      " TFLOP/s, ", FormatNumber(100 * r.tflops / it->second),
                                      "% of this node's measured host GEMM (",
                                      FormatNumber(it->second), " TFLOP/s, gemm suite)"),
                         r.node});
    }
  }
  JudgeCpuMfu(std::move(cpu_mfu), out);
}

}  // namespace cmax::reports
