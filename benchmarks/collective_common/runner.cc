#include "benchmarks/collective_common/runner.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "benchmarks/collective_common/data_pattern.h"
#include "benchmarks/suite.h"
#include "common/status_macros.h"

namespace cmax::collective {
namespace {

using bench::kExitCouldNotRun;
using bench::kExitFoundFailures;
using bench::kExitPassed;

// The seed of the timed runs' data (nccl-tests initialises with rep 99).
constexpr uint64_t kTimingSeed = 99;

// Host staging and backend buffers for one op, sized for the largest size.
class Buffers {
 public:
  explicit Buffers(Backend& b) : backend_(b) {}
  ~Buffers() {
    if (send_) backend_.Free(send_);
    if (recv_) backend_.Free(recv_);
    if (inplace_) backend_.Free(inplace_);
  }
  absl::Status Allocate(const Shape& largest) {
    send_bytes_ = std::max<size_t>(largest.send_count * largest.elem_size, 1);
    recv_bytes_ = std::max<size_t>(largest.recv_count * largest.elem_size, 1);
    inplace_bytes_ = std::max(send_bytes_, recv_bytes_);
    auto s = backend_.Allocate(send_bytes_);
    if (!s.ok()) return s.status();
    send_ = *s;
    auto r = backend_.Allocate(recv_bytes_);
    if (!r.ok()) return r.status();
    recv_ = *r;
    auto p = backend_.Allocate(inplace_bytes_);
    if (!p.ok()) return p.status();
    inplace_ = *p;
    host_in_.assign(inplace_bytes_, 0);
    host_out_.assign(inplace_bytes_, 0);
    return absl::OkStatus();
  }
  void* send() { return send_; }
  void* recv() { return recv_; }
  char* inplace() { return static_cast<char*>(inplace_); }
  char* host_in() { return host_in_.data(); }
  char* host_out() { return host_out_.data(); }

 private:
  Backend& backend_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  void* inplace_ = nullptr;
  size_t send_bytes_ = 0, recv_bytes_ = 0, inplace_bytes_ = 0;
  std::vector<char> host_in_, host_out_;
};

struct Placement {
  const void* send;
  void* recv;
};

Placement Place(Backend& b, Buffers& buf, Op op, const Shape& s, bool in_place) {
  if (!in_place) return {buf.send(), buf.recv()};
  const size_t r = static_cast<size_t>(b.rank());
  return {buf.inplace() + s.send_inplace_offset * r * s.elem_size,
          buf.inplace() + b.InPlaceOutputOffset(op, s) * s.elem_size};
}

// Fills and uploads the input for `seed`; poisons the output first so an
// element that was never written fails the check.
absl::Status Prepare(Backend& b, Buffers& buf, Op op, DType t, const Shape& s, bool in_place,
                     uint64_t seed) {
  const size_t send_bytes = s.send_count * s.elem_size;
  const size_t recv_bytes = s.recv_count * s.elem_size;
  if (in_place) {
    const size_t whole = std::max(send_bytes, recv_bytes);
    Poison(buf.host_in(), whole);
    const size_t off = s.send_inplace_offset * static_cast<size_t>(b.rank()) * s.elem_size;
    FillInput(op, t, s, b.rank(), b.world_size(), seed, buf.host_in() + off);
    return whole == 0 ? absl::OkStatus() : b.Upload(buf.inplace(), buf.host_in(), whole);
  }
  FillInput(op, t, s, b.rank(), b.world_size(), seed, buf.host_in());
  if (send_bytes > 0) {
    if (auto st = b.Upload(buf.send(), buf.host_in(), send_bytes); !st.ok()) return st;
  }
  Poison(buf.host_out(), recv_bytes);
  return recv_bytes == 0 ? absl::OkStatus() : b.Upload(buf.recv(), buf.host_out(), recv_bytes);
}

absl::Status RunOnce(Backend& b, Op op, DType t, const Shape& s, bool in_place, Placement p) {
  if (auto st = b.Run(op, t, p.send, p.recv, s, in_place); !st.ok()) return st;
  return b.Synchronize();
}

std::string TimeText(double us) {
  if (us >= 10000.0) return absl::StrFormat("%7.0f", us);
  if (us >= 100.0) return absl::StrFormat("%7.1f", us);
  return absl::StrFormat("%7.2f", us);
}

std::string Describe(double v) { return absl::StrFormat("%.17g", v); }

struct RunState {
  const Options& o;
  Backend& b;
  RecordWriter& out;
  FILE* table;
  std::string node;
  std::vector<std::string> rank_nodes;
  std::string nodes_label;
  int group_size = 1;
  uint64_t rep = 0;
};

std::map<std::string, std::string> BaseLabels(const RunState& st, Op op) {
  return {{"op", OpName(op)},
          {"dtype", DTypeName(st.o.dtype)},
          {"ranks", absl::StrCat(st.b.world_size())},
          {"nodes", st.nodes_label},
          {"group_size", absl::StrCat(st.group_size)},
          {"backend", st.b.name()}};
}

void ReportWrong(RunState& st, Op op, const Shape& s, bool in_place, const CheckResult& c) {
  const std::string placement = in_place ? "in-place" : "out-of-place";
  v1::Finding f;
  f.set_check_id("collective.wrong_elements");
  f.set_severity(v1::SEVERITY_FAIL);
  f.set_category("networking");
  f.set_subject(absl::StrCat("node:", st.node, " rank:", st.b.rank()));
  f.set_title(absl::StrCat(OpName(op), " ", s.size_bytes(), " B ", placement, ": ", c.wrong,
                           " wrong element", c.wrong == 1 ? "" : "s", " on rank ", st.b.rank(),
                           " (", st.node, ")"));
  f.set_detail(absl::StrCat("element ", c.first_index, " of rank ", st.b.rank(),
                            "'s output: expected ", Describe(c.expected), ", got ",
                            Describe(c.got), " (", DTypeName(st.o.dtype), ", ",
                            st.b.world_size(), " ranks, backend ", st.b.name(), ")"));
  f.add_evidence(absl::StrCat("first wrong index ", c.first_index, ": expected ",
                              Describe(c.expected), " got ", Describe(c.got)));
  f.add_evidence(absl::StrCat("wrong elements on this rank: ", c.wrong, " of ", s.recv_count));
  f.add_evidence(absl::StrCat("ranks and nodes: ", absl::StrJoin(st.rank_nodes, ",")));
  if (!st.o.command.empty()) f.add_evidence(absl::StrCat("command: ", st.o.command));
  f.set_action("rerun on the same nodes; a wrong element that repeats on one node points at "
               "its memory, NIC or GPU: run the health and burn-in suites there");
  auto& l = *f.mutable_labels();
  for (const auto& [k, v] : BaseLabels(st, op)) l[k] = v;
  l["rank"] = absl::StrCat(st.b.rank());
  l["node"] = st.node;
  l["size_bytes"] = absl::StrCat(s.size_bytes());
  l["placement"] = in_place ? "in" : "out";
  l["first_wrong_index"] = absl::StrCat(c.first_index);
  st.out.Find(std::move(f));
}

// One size and placement. Non-OK: a collective failed.
absl::StatusOr<Result> BenchOne(RunState& st, Buffers& buf, Op op, size_t bytes, bool in_place) {
  Backend& b = st.b;
  const DType t = st.o.dtype;
  const Shape s = ShapeFor(op, bytes, DTypeSize(t), b.world_size());
  const Placement p = Place(b, buf, op, s, in_place);
  Result r;
  r.op = op;
  r.size_bytes = s.size_bytes();
  r.count = s.param_count;
  r.in_place = in_place;

  if (auto e = Prepare(b, buf, op, t, s, in_place, kTimingSeed); !e.ok()) return e;
  if (auto e = RunOnce(b, op, t, s, in_place, p); !e.ok()) return e;  // untimed sync call
  if (auto e = b.Barrier(); !e.ok()) return e;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < st.o.iters; ++i) {
    if (auto e = b.Run(op, t, p.send, p.recv, s, in_place); !e.ok()) return e;
  }
  if (auto e = b.Synchronize(); !e.ok()) return e;
  const double sec =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
      std::max(st.o.iters, 1);
  auto times = b.AllGather({sec});
  if (!times.ok()) return times.status();
  double sum = 0, worst = 0;
  for (double v : *times) {
    sum += v;
    worst = std::max(worst, v);
  }
  const double mean = sum / static_cast<double>(std::max<size_t>(times->size(), 1));
  r.time_us = mean * 1e6;
  r.time_us_max = worst * 1e6;
  r.bw = ComputeBandwidth(op, s, b.world_size(), mean);

  const size_t out_bytes = s.recv_count * s.elem_size;
  for (int c = 0; c < st.o.check_iters; ++c) {
    const uint64_t seed = ++st.rep;
    if (auto e = Prepare(b, buf, op, t, s, in_place, seed); !e.ok()) return e;
    if (auto e = RunOnce(b, op, t, s, in_place, p); !e.ok()) return e;
    if (out_bytes > 0) {
      if (auto e = b.Download(buf.host_out(), p.recv, out_bytes); !e.ok()) return e;
    }
    // TEST-ONLY: the last rank corrupts one element of its first check.
    if (st.o.fault_inject && c == 0 && b.rank() == b.world_size() - 1 && s.recv_count > 0) {
      const size_t i = s.recv_count / 2;
      StoreValue(t, buf.host_out(), i, LoadValue(t, buf.host_out(), i) + 3);
    }
    const CheckResult cr = CheckOutput(op, t, s, b.rank(), b.world_size(), seed, buf.host_out());
    if (cr.wrong > 0) ReportWrong(st, op, s, in_place, cr);
    auto wrongs = b.AllGather({static_cast<double>(cr.wrong)});
    if (!wrongs.ok()) return wrongs.status();
    int64_t total = 0;
    for (double w : *wrongs) total += static_cast<int64_t>(w);
    r.wrong = total;
    if (total > 0) break;
  }
  return r;
}

void PrintHeader(const RunState& st, FILE* t) {
  const Options& o = st.o;
  std::fprintf(t,
               "# cmax collective: backend %s  ranks %d  nodes %d  minBytes %zu maxBytes %zu "
               "step: %lld(factor) warmup iters: %d iters: %d validation: %d\n#\n# Using ranks\n",
               st.b.name().c_str(), st.b.world_size(), st.group_size, o.min_bytes, o.max_bytes,
               static_cast<long long>(o.factor), o.warmup, o.iters, o.check_iters);
  for (size_t r = 0; r < st.rank_nodes.size(); ++r) {
    std::fprintf(t, "#  Rank %2zu on %s\n", r, st.rank_nodes[r].c_str());
  }
}

void PrintOpHeader(FILE* t, Op op) {
  std::fprintf(t, "#\n# %s\n", OpName(op));
  std::fprintf(t, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
                  "in-place          \n", "", "", "", "", "");
  std::fprintf(t, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
               "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
               "algbw", "busbw", "#wrong");
  std::fprintf(t, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n",
               "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
               "(GB/s)", "");
}

// A busbw column: "n/a" where it is no figure (BusBwDefined).
std::string BusText(bool defined, double gbps) {
  return defined ? absl::StrFormat("%.2f", gbps) : std::string("n/a");
}

void PrintRow(FILE* t, const RunState& st, Op op, const Result& out, const Result* in) {
  std::fprintf(t, "%12zu  %12zu  %8s  %6s  %6d", out.size_bytes, out.count, DTypeName(st.o.dtype),
               IsReduction(op) ? "sum" : "none", RootOf(op));
  const bool bus = BusBwDefined(op, st.b.world_size());
  std::fprintf(t, "  %7s  %6.2f  %6s  %5lld", TimeText(out.time_us).c_str(), out.bw.algbw_gbps,
               BusText(bus, out.bw.busbw_gbps).c_str(), static_cast<long long>(out.wrong));
  if (in != nullptr) {
    std::fprintf(t, "  %7s  %6.2f  %6s  %5lld\n", TimeText(in->time_us).c_str(),
                 in->bw.algbw_gbps, BusText(bus, in->bw.busbw_gbps).c_str(),
                 static_cast<long long>(in->wrong));
  } else {
    std::fprintf(t, "  %7s  %6s  %6s  %5s\n", "N/A", "N/A", "N/A", "N/A");
  }
  std::fflush(t);
}

// Not measured: `op`'s bus bandwidth in a one-rank run (BusBwDefined), one
// finding per op from rank 0. The run's algbw, times and element check are
// recorded as usual; only the figure that needs a second rank is missing.
v1::Finding BusBwNotMeasured(const RunState& st, Op op) {
  v1::Finding f;
  f.set_check_id("collective.busbw_one_rank");
  f.set_severity(v1::SEVERITY_INFO);
  f.set_not_measured(true);
  f.set_category("networking");
  f.set_subject(absl::StrCat("node:", st.node));
  f.set_title(absl::StrCat("not measured: ", OpName(op), " bus bandwidth with one rank"));
  f.set_detail(absl::StrCat(
      "bus bandwidth is algbw x ", op == Op::kAllReduce ? "2(n-1)/n" : "(n-1)/n",
      " (nccl-tests PERFORMANCE.md): with one rank no byte moves between ranks, so it is no "
      "figure, not 0; algbw and the element check were measured"));
  f.add_evidence(st.o.command);
  for (const auto& [k, v] : BaseLabels(st, op)) (*f.mutable_labels())[k] = v;
  f.set_action("run the collective over two or more GPUs or nodes to measure bus bandwidth");
  return f;
}

void Record(RunState& st, const Result& r) {
  auto labels = BaseLabels(st, r.op);
  labels["size_bytes"] = absl::StrCat(r.size_bytes);
  labels["count"] = absl::StrCat(r.count);
  labels["placement"] = r.in_place ? "in" : "out";
  labels["redop"] = IsReduction(r.op) ? "sum" : "none";
  labels["root"] = absl::StrCat(RootOf(r.op));
  labels["wrong"] = absl::StrCat(r.wrong);
  if (BusBwDefined(r.op, st.b.world_size())) {
    st.out.Measure("busbw_gbps", r.bw.busbw_gbps, "GB/s", labels);
  }
  st.out.Measure("algbw_gbps", r.bw.algbw_gbps, "GB/s", labels);
  labels["time_us_max"] = absl::StrFormat("%.3f", r.time_us_max);
  labels["time_agg"] = "mean over ranks";
  st.out.Measure("time_us", r.time_us, "us", labels);
}

// ---- soak (RunCollectives with options.soak.soak_s > 0) ----

int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::map<std::string, std::string> SoakLabels(const RunState& st, Op op, const Shape& s) {
  auto l = BaseLabels(st, op);
  l["soak"] = "true";
  l["size_bytes"] = absl::StrCat(s.size_bytes());
  l["count"] = absl::StrCat(s.param_count);
  l["placement"] = "out";
  l["redop"] = IsReduction(op) ? "sum" : "none";
  l["root"] = absl::StrCat(RootOf(op));
  l["soak_s"] = absl::StrFormat("%g", st.o.soak.soak_s);
  l["interval_s"] = absl::StrFormat("%g", st.o.soak.interval_s);
  l["stall_s"] = absl::StrFormat("%g", st.o.soak.stall_s);
  l["intervals_planned"] = absl::StrCat(PlannedIntervals(st.o.soak));
  return l;
}

// Written by the watchdog thread of a rank that is alive but has completed
// no iteration for stall_s: it is waiting on the group (or on its own GPU).
// `ended_by`: "" (its own watchdog), "SIGTERM" (terminated while waiting)
// or "error" (its collective failed while waiting: a peer went away);
// `error` is that failure.
void ReportStall(RunState& st, Op op, const Shape& s, const StallReport& r,
                 const std::string& ended_by = "", const std::string& error = "") {
  v1::Finding f;
  f.set_check_id("collective.soak_stall");
  f.set_severity(v1::SEVERITY_WARN);
  f.set_category("networking");
  f.set_subject(absl::StrCat("node:", st.node, " rank:", st.b.rank()));
  f.set_title(absl::StrFormat(
      "%s soak stalled: rank %d (%s) completed no iteration for %.1f s in interval %d; it was "
      "waiting (last completed iteration %d at %.1f s into the soak)%s",
      OpName(op), st.b.rank(), st.node, r.waited_s, r.interval,
      static_cast<long long>(r.last_iteration), r.last_progress_s,
      ended_by == "SIGTERM" ? "; then terminated (SIGTERM) as the group ended"
      : ended_by == "error" ? "; then its collective failed as a peer went away"
                            : ""));
  f.set_detail(absl::StrCat("the rank was alive and waiting for its collective to complete; a "
                            "rank of the group that wrote no soak_stall finding stopped first "
                            "(the scorecard names it). ranks and nodes: ",
                            absl::StrJoin(st.rank_nodes, ",")));
  f.add_evidence(absl::StrFormat("stall limit %g s, waited %.1f s", st.o.soak.stall_s,
                                 r.waited_s));
  f.add_evidence(absl::StrFormat("last completed iteration %lld at %.3f s (interval %d)",
                                 static_cast<long long>(r.last_iteration), r.last_progress_s,
                                 r.interval));
  f.add_evidence(absl::StrCat("ranks and nodes: ", absl::StrJoin(st.rank_nodes, ",")));
  if (!error.empty()) f.add_evidence(absl::StrCat("then: ", error));
  if (!st.o.command.empty()) f.add_evidence(absl::StrCat("command: ", st.o.command));
  f.set_action("find the rank that stopped first (the scorecard's collective.soak_stall fail): "
               "check its node's kernel log (Xid), NIC and GPU; then rerun the soak");
  auto& l = *f.mutable_labels();
  for (const auto& [k, v] : SoakLabels(st, op, s)) l[k] = v;
  l["rank"] = absl::StrCat(st.b.rank());
  l["node"] = st.node;
  l["interval"] = absl::StrCat(r.interval);
  l["last_iteration"] = absl::StrCat(r.last_iteration);
  l["last_progress_s"] = absl::StrFormat("%.3f", r.last_progress_s);
  l["last_progress_unix_ms"] =
      absl::StrCat(UnixMillis() - static_cast<int64_t>(r.waited_s * 1000));
  l["waited_s"] = absl::StrFormat("%.3f", r.waited_s);
  l["rank_nodes"] = absl::StrJoin(st.rank_nodes, ",");
  if (!ended_by.empty()) l["ended_by"] = ended_by;
  st.out.Find(std::move(f));
}

// Set by the SIGTERM handler the soak installs; read by the watchdog.
std::atomic<bool> g_soak_sigterm{false};
extern "C" void OnSoakSigterm(int) { g_soak_sigterm.store(true); }

// Installs OnSoakSigterm for the soak's lifetime. When one rank of a gang
// stops, the first waiting rank to report ends the group and the agents
// SIGTERM the others, possibly a moment before their own watchdog fires:
// such a rank still says it was waiting (see RunSoak).
class SoakSigterm {
 public:
  SoakSigterm() {
    g_soak_sigterm.store(false);
    struct sigaction sa {};
    sa.sa_handler = OnSoakSigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_);
  }
  ~SoakSigterm() {
    sigaction(SIGTERM, &old_, nullptr);
    if (g_soak_sigterm.load()) raise(SIGTERM);  // arrived as the soak ended: not lost
  }

 private:
  struct sigaction old_ {};
};

void PrintSoakHeader(FILE* t, Op op, const Shape& s, const SoakConfig& c) {
  std::fprintf(t, "#\n# %s soak: %zu B, %g s in %d intervals of %g s, stall after %g s\n",
               OpName(op), s.size_bytes(), c.soak_s, PlannedIntervals(c), c.interval_s,
               c.stall_s);
  std::fprintf(t, "# %8s  %10s  %10s  %9s  %7s  %6s  %6s  %6s\n", "interval", "t_start(s)",
               "iterations", "time(s)", "time", "algbw", "busbw", "#wrong");
  std::fprintf(t, "# %8s  %10s  %10s  %9s  %7s  %6s  %6s  %6s\n", "", "", "", "", "(us)",
               "(GB/s)", "(GB/s)", "");
}

// A soak verifies one interval per this many seconds (and its first and last).
constexpr double kSoakVerifyEvery = 60;

// A collective that failed on this rank (`what`: "failed", "soak failed"),
// with what to check.
v1::Finding FailedFinding(const RunState& st, Op op, int rank, const std::string& what,
                          const absl::Status& failed, const std::string& command,
                          const std::map<std::string, std::string>& labels) {
  v1::Finding f;
  f.set_check_id("collective.failed");
  f.set_severity(v1::SEVERITY_FAIL);
  f.set_category("networking");
  f.set_subject(absl::StrCat("node:", st.node, " rank:", rank));
  f.set_title(absl::StrCat(OpName(op), " ", what, " on rank ", rank, " (", st.node, ")"));
  f.set_detail(std::string(failed.message()));
  f.add_evidence(std::string(failed.message()));
  f.add_evidence(absl::StrCat("ranks and nodes: ", absl::StrJoin(st.rank_nodes, ",")));
  if (!command.empty()) f.add_evidence(absl::StrCat("command: ", command));
  f.set_action("check that every node of the group is up and reachable on the network "
               "used, then rerun");
  for (const auto& [k, v] : labels) (*f.mutable_labels())[k] = v;
  return f;
}

int RunSoak(RunState& st) {
  const Options& o = st.o;
  Backend& b = st.b;
  const Op op = o.ops.front();
  const DType t = o.dtype;
  const Shape s = ShapeFor(op, o.max_bytes, DTypeSize(t), b.world_size());
  if (s.param_count == 0) {
    const std::string why = absl::StrCat("soak size ", o.max_bytes, " B holds fewer ",
                                         DTypeName(t), " elements than the ", b.world_size(),
                                         " ranks: nothing to move");
    ReportNotMeasured(st.out, b.name(), why);
    std::fprintf(stderr, "collective: %s\n", why.c_str());
    return kExitCouldNotRun;
  }
  Buffers buf(b);
  if (auto e = buf.Allocate(s); !e.ok()) {
    ReportNotMeasured(st.out, b.name(), absl::StrCat("allocating buffers for the ", OpName(op),
                                                     " soak at ", o.max_bytes, " B: ",
                                                     e.message()));
    return kExitCouldNotRun;
  }
  const Placement p = Place(b, buf, op, s, false);
  absl::Status failed = Prepare(b, buf, op, t, s, false, kTimingSeed);
  for (int i = 0; i < o.warmup && failed.ok(); ++i) failed = b.Run(op, t, p.send, p.recv, s, false);
  if (failed.ok()) failed = b.Synchronize();
  if (failed.ok()) failed = b.Barrier();
  if (st.table) PrintSoakHeader(st.table, op, s, o.soak);

  SoakProgress progress(SteadySoakClock());
  progress.Start();
  SoakSigterm sigterm;
  // The watchdog polls every 50 ms: the waiting ranks of a group notice a
  // stall within that of each other (their last iterations ended together).
  const double stall_s = o.soak.stall_s;
  SoakWatchdog watchdog(&progress, stall_s, 0.05,
                        [&](const StallReport& r) {
                          ReportStall(st, op, s, r);
                          std::fprintf(stderr,
                                       "collective: soak stalled on rank %d (%s): no iteration "
                                       "for %.1f s in interval %d, last completed iteration %lld "
                                       "at %.1f s; exiting\n",
                                       b.rank(), st.node.c_str(), r.waited_s, r.interval,
                                       static_cast<long long>(r.last_iteration),
                                       r.last_progress_s);
                          std::fflush(stderr);
                          std::_Exit(kExitFoundFailures);
                        },
                        &g_soak_sigterm, [&](const StallReport& r) {
                          // Terminated while waiting for at least half the
                          // stall limit: it was waiting, say so (exit 1).
                          // Otherwise (a cancel of a healthy soak) die of
                          // SIGTERM as without the handler.
                          if (r.waited_s >= stall_s / 2) {
                            ReportStall(st, op, s, r, "SIGTERM");
                            std::_Exit(kExitFoundFailures);
                          }
                          signal(SIGTERM, SIG_DFL);
                          raise(SIGTERM);
                        });
  const int planned = PlannedIntervals(o.soak);
  const size_t out_bytes = s.recv_count * s.elem_size;
  int64_t total = 0;
  int exit_code = kExitPassed;
  for (int interval = 0; interval < planned && failed.ok(); ++interval) {
    progress.BeginInterval(interval);
    const double t_start = progress.Elapsed();
    double timed = 0;
    int64_t iterations = 0;
    std::vector<double> gathered;
    while (failed.ok()) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o.iters && failed.ok(); ++i) {
        failed = b.Run(op, t, p.send, p.recv, s, false);
      }
      if (failed.ok()) failed = b.Synchronize();
      if (!failed.ok()) break;
      timed += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      iterations += o.iters;
      total += o.iters;
      progress.NoteCompleted(total);
      auto g = b.AllGather({progress.Elapsed() - t_start, timed});
      if (!g.ok()) {
        failed = g.status();
        break;
      }
      gathered = *g;
      bool done = false;  // every rank sees the same values: the same decision
      for (size_t r = 0; r < gathered.size(); r += 2) done |= gathered[r] >= o.soak.interval_s;
      if (done) break;
    }
    if (!failed.ok()) break;
    double mean = 0, worst = 0, duration = 0;
    const size_t n = gathered.size() / 2;
    for (size_t r = 0; r < n; ++r) {
      const double per_call = gathered[2 * r + 1] / static_cast<double>(iterations);
      mean += per_call;
      worst = std::max(worst, per_call);
      duration = std::max(duration, gathered[2 * r]);
    }
    mean /= static_cast<double>(std::max<size_t>(n, 1));
    const Bandwidth bw = ComputeBandwidth(op, s, b.world_size(), mean);

    int64_t wrong = 0;
    // Checking every element costs about as much as many calls (each
    // expected value sums every rank's input), so a soak verifies its first
    // and last interval and one interval per kSoakVerifyEvery seconds; the
    // choice depends only on the index, so every rank makes the same one.
    const int every = std::max(1, static_cast<int>(std::ceil(kSoakVerifyEvery /
                                                             o.soak.interval_s)));
    const bool verify = o.check_iters > 0 &&
                        (interval == 0 || interval == planned - 1 || interval % every == 0);
    if (verify) {
      // The output of the interval's last call: input seed 99, output
      // poisoned before the first call, so an element never written fails.
      if (out_bytes > 0) failed = b.Download(buf.host_out(), p.recv, out_bytes);
      if (!failed.ok()) break;
      if (o.fault_inject && interval == 0 && b.rank() == b.world_size() - 1) {
        const size_t i = s.recv_count / 2;
        StoreValue(t, buf.host_out(), i, LoadValue(t, buf.host_out(), i) + 3);
      }
      const CheckResult cr =
          CheckOutput(op, t, s, b.rank(), b.world_size(), kTimingSeed, buf.host_out());
      if (cr.wrong > 0) ReportWrong(st, op, s, false, cr);
      auto wrongs = b.AllGather({static_cast<double>(cr.wrong)});
      if (!wrongs.ok()) {
        failed = wrongs.status();
        break;
      }
      for (double w : *wrongs) wrong += static_cast<int64_t>(w);
    }
    if (b.rank() == 0) {
      auto labels = SoakLabels(st, op, s);
      labels["interval"] = absl::StrCat(interval);
      labels["t_start_s"] = absl::StrFormat("%.3f", t_start);
      labels["duration_s"] = absl::StrFormat("%.3f", duration);
      labels["iterations"] = absl::StrCat(iterations);
      if (verify) labels["wrong"] = absl::StrCat(wrong);  // unknown when not checked
      labels["verified"] = verify ? "true" : "false";
      if (BusBwDefined(op, b.world_size())) {
        st.out.Measure("busbw_gbps", bw.busbw_gbps, "GB/s", labels);
      }
      st.out.Measure("algbw_gbps", bw.algbw_gbps, "GB/s", labels);
      labels["time_us_max"] = absl::StrFormat("%.3f", worst * 1e6);
      labels["time_agg"] = "mean over ranks";
      st.out.Measure("time_us", mean * 1e6, "us", labels);
    }
    st.out.Progress("soak", static_cast<double>(interval + 1) / planned,
                    absl::StrFormat("rank %d: interval %d of %d done, %lld iterations in total",
                                    b.rank(), interval + 1, planned,
                                    static_cast<long long>(total)));
    if (st.table) {
      const std::string wrong_text = verify ? absl::StrCat(wrong) : "-";
      std::fprintf(st.table, "  %8d  %10.1f  %10lld  %9.2f  %7s  %6.2f  %6s  %6s\n", interval,
                   t_start, static_cast<long long>(iterations), duration,
                   TimeText(mean * 1e6).c_str(), bw.algbw_gbps,
                   BusText(BusBwDefined(op, b.world_size()), bw.busbw_gbps).c_str(),
                   wrong_text.c_str());
      std::fflush(st.table);
    }
    if (wrong > 0) {
      exit_code = kExitFoundFailures;
      break;  // the data is wrong: more intervals would only repeat it
    }
  }
  watchdog.Stop();
  if (!failed.ok()) {
    // A collective that fails after this rank waited at least half the
    // stall limit failed because a peer went away (stopped, then killed or
    // exited): this rank was waiting, and says so, as its watchdog would.
    const StallReport waited = progress.Snapshot();
    if (waited.waited_s >= stall_s / 2) {
      ReportStall(st, op, s, waited, "error", std::string(failed.message()));
      std::fprintf(stderr, "collective: %s soak: rank %d waited %.1f s, then: %s\n", OpName(op),
                   b.rank(), waited.waited_s, std::string(failed.message()).c_str());
      return kExitFoundFailures;
    }
    st.out.Find(FailedFinding(st, op, b.rank(), "soak failed", failed, o.command,
                              SoakLabels(st, op, s)));
    std::fprintf(stderr, "collective: %s soak failed: %s\n", OpName(op),
                 std::string(failed.message()).c_str());
    return kExitFoundFailures;
  }
  if (b.rank() == 0 && !BusBwDefined(op, b.world_size())) st.out.Find(BusBwNotMeasured(st, op));
  return exit_code;
}

}  // namespace

void AddFlags(SuiteFlags* p, Flags* f) {
  // Help texts: the suite's declaration (benchmarks/collective/collective_declaration.cc).
  p->Bind("backend", &f->backend);
  p->Bind("op", &f->op);
  p->Bind("min-bytes", &f->min_bytes, "b");
  p->Bind("max-bytes", &f->max_bytes, "e");
  p->Bind("factor", &f->factor, "f");
  p->Bind("iters", &f->iters, "n");
  p->Bind("warmup", &f->warmup, "w");
  p->Bind("check-iters", &f->check_iters, "c");
  p->Bind("dtype", &f->dtype, "d");
  p->Bind("timeout", &f->timeout_s);
  p->Bind("soak", &f->soak_s);
  p->Bind("interval", &f->interval_s);
  p->Bind("stall", &f->stall_s);
  p->extra().AddFlag("jsonl", &f->jsonl, "write cmax.v1.Record JSON lines instead of the table");
  p->extra().AddFlag("fault-inject", &f->fault_inject,
                     "TEST-ONLY: the last rank corrupts one element of its output before the "
                     "check (proves that wrong elements are detected; never use it for a real "
                     "measurement)");
}

absl::StatusOr<Options> ResolveOptions(const Flags& f) {
  Options o;
  auto dtype = ParseDType(f.dtype);
  if (!dtype.ok()) return dtype.status();
  o.dtype = *dtype;
  auto ops = ParseOps(f.op);
  if (!ops.ok()) return ops.status();
  o.ops = *ops;
  if (f.min_bytes <= 0 || f.max_bytes <= 0) {
    return absl::InvalidArgumentError("sizes must be positive");
  }
  auto sweep = SizeSweep(static_cast<size_t>(f.min_bytes), static_cast<size_t>(f.max_bytes),
                         f.factor);
  if (!sweep.ok()) return sweep.status();
  o.min_bytes = static_cast<size_t>(f.min_bytes);
  o.max_bytes = static_cast<size_t>(f.max_bytes);
  o.factor = f.factor;
  if (f.iters < 1 || f.iters > 1000000) return absl::InvalidArgumentError("-n must be 1..1000000");
  if (f.warmup < 0 || f.warmup > 100000) return absl::InvalidArgumentError("-w must be 0..100000");
  if (f.check_iters < 0 || f.check_iters > 1000) {
    return absl::InvalidArgumentError("-c must be 0..1000");
  }
  o.iters = static_cast<int>(f.iters);
  o.warmup = static_cast<int>(f.warmup);
  o.check_iters = static_cast<int>(f.check_iters);
  o.fault_inject = f.fault_inject;
  o.soak = SoakConfig{f.soak_s, f.interval_s, f.stall_s};
  if (f.soak_s != 0) {
    CMAX_RETURN_IF_ERROR(ValidateSoak(o.soak));
    if (o.ops.size() != 1) {
      return absl::InvalidArgumentError("soak runs one op: set op to one of all_reduce, "
                                        "all_gather, reduce_scatter, alltoall, broadcast, "
                                        "sendrecv");
    }
    if (o.min_bytes != o.max_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "soak runs one size: set min-bytes and max-bytes to the same value (got ", o.min_bytes,
          " and ", o.max_bytes, ")"));
    }
  }
  return o;
}

std::string LocalNodeName() {
  for (const char* var : {"CMAX_NODE_NAME", "CMAX_NODE"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return v;
  }
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

void ReportNotMeasured(RecordWriter& out, const std::string& backend, const std::string& why) {
  v1::Finding f;
  f.set_check_id("collective.not_measured");
  f.set_severity(v1::SEVERITY_WARN);
  // Could not run: the scorecard counts it as not measured, never as a
  // warning that grades Networking (record.proto, Finding.not_measured).
  f.set_not_measured(true);
  f.set_category("networking");
  f.set_subject(absl::StrCat("node:", LocalNodeName()));
  f.set_title(absl::StrCat("collectives not measured (backend ", backend, ")"));
  f.set_detail(why);
  f.add_evidence(why);
  (*f.mutable_labels())["backend"] = backend;
  out.Find(std::move(f));
  out.Log("error", absl::StrCat("not measured: ", why));
}

int RunCollectives(const Options& o, Backend& b, RecordWriter& out, FILE* table,
                   std::vector<Result>* results) {
  RunState st{o, b, out, table, LocalNodeName(), {}, "", 1, 0};
  if (auto s = b.CheckDType(o.dtype); !s.ok()) {
    ReportNotMeasured(out, b.name(), std::string(s.message()));
    std::fprintf(stderr, "collective: %s\n", std::string(s.message()).c_str());
    return kExitCouldNotRun;
  }
  auto names = b.AllGatherStrings(st.node);
  if (!names.ok()) {
    ReportNotMeasured(out, b.name(),
                      absl::StrCat("exchanging node names: ", names.status().message()));
    return kExitCouldNotRun;
  }
  st.rank_nodes = *names;
  std::set<std::string> distinct(st.rank_nodes.begin(), st.rank_nodes.end());
  st.nodes_label = absl::StrJoin(distinct, ",");
  st.group_size = static_cast<int>(distinct.size());
  if (table) PrintHeader(st, table);
  if (o.soak.soak_s > 0) return RunSoak(st);

  auto sizes = SizeSweep(o.min_bytes, o.max_bytes, o.factor);
  if (!sizes.ok()) {
    ReportNotMeasured(out, b.name(), std::string(sizes.status().message()));
    std::fprintf(stderr, "collective: %s\n", std::string(sizes.status().message()).c_str());
    return kExitCouldNotRun;
  }
  int exit_code = kExitPassed;
  for (Op op : o.ops) {
    Buffers buf(b);
    const Shape largest = ShapeFor(op, o.max_bytes, DTypeSize(o.dtype), b.world_size());
    if (auto s = buf.Allocate(largest); !s.ok()) {
      ReportNotMeasured(out, b.name(), absl::StrCat("allocating buffers for ", OpName(op), " at ",
                                                    o.max_bytes, " B: ", s.message()));
      return kExitCouldNotRun;
    }
    absl::Status failed;
    // Warm-up at the largest and the smallest size (nccl-tests TimeTest).
    for (size_t bytes : {o.max_bytes, o.min_bytes}) {
      const Shape s = ShapeFor(op, bytes, DTypeSize(o.dtype), b.world_size());
      if (s.param_count == 0 || !failed.ok()) continue;
      failed = Prepare(b, buf, op, o.dtype, s, false, kTimingSeed);
      for (int i = 0; i < o.warmup && failed.ok(); ++i) {
        failed = b.Run(op, o.dtype, buf.send(), buf.recv(), s, false);
      }
      if (failed.ok()) failed = b.Synchronize();
    }
    if (table) PrintOpHeader(table, op);
    int bad_results = 0;
    double busbw_sum = 0;
    int busbw_n = 0;
    for (size_t bytes : *sizes) {
      if (!failed.ok()) break;
      const Shape s = ShapeFor(op, bytes, DTypeSize(o.dtype), b.world_size());
      if (s.param_count == 0) continue;  // fewer elements than ranks
      Result r_out, r_in;
      bool have_in = false;
      auto ro = BenchOne(st, buf, op, bytes, false);
      if (!ro.ok()) {
        failed = ro.status();
        break;
      }
      r_out = *ro;
      if (HasInPlace(op)) {
        auto ri = BenchOne(st, buf, op, bytes, true);
        if (!ri.ok()) {
          failed = ri.status();
          break;
        }
        r_in = *ri;
        have_in = true;
      }
      for (const Result* r : {&r_out, have_in ? &r_in : nullptr}) {
        if (r == nullptr) continue;
        if (r->wrong > 0) ++bad_results;
        busbw_sum += r->bw.busbw_gbps;
        ++busbw_n;
        if (b.rank() == 0) Record(st, *r);
        if (results) results->push_back(*r);
      }
      if (table) PrintRow(table, st, op, r_out, have_in ? &r_in : nullptr);
    }
    if (!failed.ok()) {
      out.Find(FailedFinding(st, op, b.rank(), "failed", failed, o.command, BaseLabels(st, op)));
      std::fprintf(stderr, "collective: %s failed: %s\n", OpName(op),
                   std::string(failed.message()).c_str());
      return kExitFoundFailures;
    }
    const double avg = busbw_n ? busbw_sum / busbw_n : 0;
    const bool bus = BusBwDefined(op, b.world_size());
    if (table) {
      std::fprintf(table, "# Out of bounds values : %d %s\n", bad_results,
                   bad_results ? "FAILED" : "OK");
      if (bus) {
        std::fprintf(table, "# Avg bus bandwidth    : %g \n#\n", avg);
      } else {
        std::fprintf(table, "# Avg bus bandwidth    : n/a (one rank: not measured)\n#\n");
      }
      std::fflush(table);
    }
    if (b.rank() == 0 && busbw_n > 0) {
      auto labels = BaseLabels(st, op);
      if (bus) {
        labels["results"] = absl::StrCat(busbw_n);
        out.Measure("avg_busbw_gbps", avg, "GB/s", labels);
      } else {
        out.Find(BusBwNotMeasured(st, op));
      }
    }
    if (bad_results > 0) exit_code = kExitFoundFailures;
  }
  if (b.world_size() == 1 && table) {
    std::fprintf(table, "# One rank: bus bandwidth of all_reduce, all_gather, reduce_scatter and "
                        "alltoall is not measured (factor (n-1)/n is 0); algbw and the element "
                        "check are.\n");
  }
  return exit_code;
}

}  // namespace cmax::collective
