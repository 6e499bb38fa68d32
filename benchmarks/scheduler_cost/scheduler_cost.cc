// Scheduler cost per agent status at scale (issue 18): N connected nodes, a
// run of E node-scope entries (N x E tasks). Every status completes one task
// and is followed by what the coordinator's core does in a round that saw it:
// Scheduler::OnStatus, RefreshCounters of the run, Schedule. Prints the mean
// and the slowest per-status cost over the statuses timed.
//
//   cmax-scheduler-cost [--nodes N] [--entries E] [--statuses S] [--mode auto|full]
//
// --mode auto: Schedule as the core calls it (incremental, full pass at most
// every 10 s); --mode full: a full pass over every task each round (the
// algorithm every round used before the incremental one). Tasks complete in
// plan order (entry 0 on every node, then entry 1, ...), so the run ends when
// S = N x E. No agents, no network: the registry holds sessions that drop
// what they are sent.
//
// Built with -DCMAX_SCHEDULER_COST_OLD against the scheduler of before the
// incremental one (its scheduler.h first on the include path, its
// scheduler.cc linked ahead of libcmax_coordinator.a), it measures that code
// instead ("mode old": every call a full pass, counters recounted, the run's
// end found by a scan); how: benchmarks/scheduler_cost/build_old.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/args.h"
#include "common/plan_parser.h"
#include "coordinator/scheduler.h"

namespace cmax::coordinator {
namespace {

#ifdef CMAX_SCHEDULER_COST_OLD
constexpr bool kOld = true;
void Run(Scheduler& s, const Registry& r, int64_t now, Changes* c, bool) {
  s.Schedule(r, now, c);
}
#else
constexpr bool kOld = false;
void Run(Scheduler& s, const Registry& r, int64_t now, Changes* c, bool full) {
  s.Schedule(r, now, c, full ? ScheduleMode::kFull : ScheduleMode::kAuto);
}
#endif

class NullSession : public AgentSession {
 public:
  void Send(const v1::CoordinatorMessage&) override {}
  void Close(const std::string&) override {}
  std::string peer() const override { return "bench"; }
};

std::string NodeName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "node-%06d", i);
  return buf;
}

int Main(int argc, char** argv) {
  int64_t nodes_arg = 50000, entries_arg = 2, statuses_arg = -1;
  std::string mode = "auto";
  ArgParser p("cmax-scheduler-cost [--nodes N] [--entries E] [--statuses S] [--mode auto|full]",
              "The coordinator scheduler's cost per agent status: N connected nodes, a run "
              "of E node-scope entries; prints the mean and slowest cost per status. No "
              "agents, no network.");
  p.AddInt("nodes", &nodes_arg, "connected nodes (default 50000)");
  p.AddInt("entries", &entries_arg, "node-scope entries of the run (default 2)");
  p.AddInt("statuses", &statuses_arg,
           "statuses timed (default, or past N x E: every task, to the run's end)");
  p.AddString("mode", &mode,
              "auto: Schedule as the core calls it; full: a full pass every round "
              "(default auto)");
  p.SetCheck("mode", [](const std::string& v) {
    return v == "auto" || v == "full"
               ? absl::OkStatus()
               : absl::InvalidArgumentError(
                     absl::StrCat("--mode: '", v, "' is not auto or full"));
  });
  ParseToolArgsOrExit(p, argc, argv);
  // Node indexes and task counts are ints in the code below.
  if (nodes_arg < 1 || nodes_arg > 10'000'000 || entries_arg < 1 || entries_arg > 1000) {
    std::fprintf(stderr, "cmax-scheduler-cost: --nodes must be 1..10000000, --entries 1..1000\n");
    return 2;
  }
  const int nodes = static_cast<int>(nodes_arg), entries = static_cast<int>(entries_arg);
  long statuses = static_cast<long>(statuses_arg);
  const long total = static_cast<long>(nodes) * entries;
  if (statuses < 0 || statuses > total) statuses = total;
  const bool full = mode == "full";
  if (kOld) mode = "old";

  Registry registry(15'000'000'000);
  std::vector<std::unique_ptr<NullSession>> sessions;
  int64_t now = 1'700'000'000'000'000'000;
  for (int i = 0; i < nodes; ++i) {
    sessions.push_back(std::make_unique<NullSession>());
    v1::Hello h;
    h.set_node_name(NodeName(i));
    h.set_boot_id("boot-1");
    registry.OnHello(h, sessions.back().get(), 1, now);
  }
  std::string yaml = "name: cost\nsuites:\n";
  for (int e = 0; e < entries; ++e) yaml += "  - suite: selftest\n";
  auto plan = ParsePlan(yaml, "scheduler_cost");
  if (!plan.ok()) {
    std::fprintf(stderr, "plan: %s\n", plan.status().ToString().c_str());
    return 1;
  }
  Scheduler scheduler;
  // As in the coordinator, whose loop schedules at least once a second from
  // its start: the round after SubmitRun is not the first call (in auto mode
  // it is incremental, over every node of the new run).
  Changes none;
  Run(scheduler, registry, now, &none, full);
  now += 1'000'000;
  Changes created;
  auto run = scheduler.CreateRun(*plan, registry, now, "r1", &created);
  if (!run.ok()) {
    std::fprintf(stderr, "run: %s\n", run.status().ToString().c_str());
    return 1;
  }
  using Clock = std::chrono::steady_clock;
  Changes first;
  const auto f0 = Clock::now();
  Run(scheduler, registry, now, &first, full);
  const double first_ms = std::chrono::duration<double, std::milli>(Clock::now() - f0).count();
  std::printf("nodes %d, entries %d, tasks %ld, mode %s; the Schedule after CreateRun assigned "
              "%zu in %.1f ms\n",
              nodes, entries, total, mode.c_str(), first.out.size(), first_ms);

  double sum_us = 0;
  std::vector<double> each_us;
  each_us.reserve(static_cast<size_t>(statuses));
  long assigned = 0;
  for (long k = 0; k < statuses; ++k) {
    const int entry = static_cast<int>(k / nodes);
    const int node = static_cast<int>(k % nodes);
    const std::string id = absl::StrCat("r1.", entry, ".", NodeName(node));
    TaskRow* t = scheduler.FindTask(id);
    if (!t || t->info.state() != v1::TASK_ASSIGNED) {
      std::fprintf(stderr, "task %s is not assigned when its status comes\n", id.c_str());
      return 1;
    }
    v1::TaskStatus st;
    st.set_task_id(id);
    st.set_attempt(t->info.attempt());
    st.set_state(v1::TASK_COMPLETED);
    now += 1'000'000;  // 1 ms a status
    const auto t0 = Clock::now();
    Changes c;
    scheduler.OnStatus(NodeName(node), st, now, &c);
    scheduler.RefreshCounters(*run);
    Run(scheduler, registry, now, &c, full);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    sum_us += us;
    each_us.push_back(us);
    assigned += static_cast<long>(c.out.size());
  }
  std::sort(each_us.begin(), each_us.end());
  auto at = [&](double q) {
    return each_us.empty() ? 0.0 : each_us[static_cast<size_t>(q * (each_us.size() - 1))];
  };
  std::printf("statuses %ld: per status (OnStatus + RefreshCounters + Schedule) mean %.1f us, "
              "median %.1f us, p99 %.1f us, max %.1f us; %ld assigned meanwhile; run %s, %d of "
              "%d tasks done\n",
              statuses, statuses ? sum_us / statuses : 0.0, at(0.5), at(0.99), at(1.0), assigned,
              (*run)->info.state().c_str(), (*run)->info.tasks_done(), (*run)->info.tasks_total());
  return 0;
}

}  // namespace
}  // namespace cmax::coordinator

int main(int argc, char** argv) { return cmax::coordinator::Main(argc, argv); }
