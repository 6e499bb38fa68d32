// The fleet's history at scale (issue 30 item 4; docs/history.md): a store
// holding W weekly runs of N nodes' summaries, all SIMULATED (generated
// here, labelled simulated in every summary), and the time the coordinator's
// history queries take on it:
//   - one node's history (`cmaxctl history NODE`, the web view's
//     /nodes/NAME): goal under 1 s;
//   - the fleet's (`cmaxctl history`, /fleet): goal under 10 s;
//   - a run's history evidence (the Reliability line of each scorecard).
// Each is measured the way the coordinator answers it (coordinator/
// core_history.cc): through the store, then reports/history.
//
//   cmax-history-scale --dir DIR [--nodes 10000] [--weeks 52] [--samples 20]
//
// Prints one "key value" line per figure. No network, no agents.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/history_queries.h"
#include "coordinator/store.h"
#include "reports/history.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int64_t FileBytes(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// The reasons a simulated node fails for, as the scorecard words them.
struct SimReason {
  const char* id;
  const char* category;
  const char* text;
};
constexpr SimReason kReasons[] = {
    {"expect.gpus_per_node", "Compute", "7 GPUs visible, 8 expected"},
    {"finding.xid", "Reliability", "Xid 79 (GPU fell off the bus) on GPU 3"},
    {"finding.row_remap_failure", "Reliability", "row remapping failed on GPU 5"},
    {"expect.busbw", "Networking", "all_reduce busbw 180 GB/s under the floor 300"},
    {"finding.ib_port_down", "Networking", "mlx5_2 port 1 down"},
};

struct Fleet {
  int nodes;
  int weeks;
  int64_t start_ns;
};

std::string NodeName(int i) { return absl::StrFormat("sim-node-%05d", i); }
std::string RunId(int w) { return absl::StrFormat("r20260105-000000-%04x", w); }

// A node fails with probability 1/200 a week; a failed node is rejected by
// the runs of 1 to 3 weeks, then accepted; 1 run in 50 does not measure a
// node (its agent was away).
std::vector<std::vector<cmax::v1::NodeRunSummary>> Generate(const Fleet& f) {
  std::mt19937_64 rng(20261205);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> noise(0, 1);
  std::vector<int> down_until(f.nodes, -1), reason(f.nodes, 0);
  std::vector<std::vector<cmax::v1::NodeRunSummary>> runs(f.weeks);
  constexpr int64_t kWeekNs = 7ll * 24 * 3600 * 1000000000;
  for (int w = 0; w < f.weeks; ++w) {
    const int64_t t = f.start_ns + w * kWeekNs;
    auto& run = runs[w];
    run.reserve(f.nodes);
    for (int n = 0; n < f.nodes; ++n) {
      cmax::v1::NodeRunSummary s;
      s.set_run_id(RunId(w));
      s.set_node(NodeName(n));
      s.set_finished_unix_ns(t);
      s.set_gpus(8);
      s.set_plan("weekly (simulated)");
      s.set_simulated(true);
      s.set_report_dir("/var/lib/cmax/reports/" + RunId(w));
      if (down_until[n] < w && u(rng) < 0.005) {
        down_until[n] = w + static_cast<int>(u(rng) * 3);
        reason[n] = static_cast<int>(u(rng) * std::size(kReasons));
      }
      if (u(rng) < 0.02) {
        s.set_verdict(cmax::reports::kVerdictNotMeasured);
        run.push_back(std::move(s));
        continue;
      }
      const bool down = w <= down_until[n];
      s.set_verdict(down ? cmax::reports::kVerdictReject : cmax::reports::kVerdictAccept);
      if (down) {
        const SimReason& r = kReasons[reason[n]];
        auto* rr = s.add_reasons();
        rr->set_id(r.id);
        rr->set_outcome("fail");
        rr->set_category(r.category);
        rr->set_text(r.text);
      }
      auto figure = [&](const char* name, double v, const char* unit) {
        auto* fig = s.add_figures();
        fig->set_name(name);
        fig->set_value(v);
        fig->set_unit(unit);
        fig->set_simulated(true);
      };
      figure("gemm_tflops_per_gpu", (down ? 610 : 720) + 8 * noise(rng), "TFLOP/s");
      figure("allreduce_busbw_gbps", 360 + 5 * noise(rng), "GB/s");
      figure("storage_read_mbps", 5200 + 150 * noise(rng), "MB/s");
      figure("burnin_gpu_temperature_c", 68 + 2 * noise(rng), "C");
      run.push_back(std::move(s));
    }
  }
  return runs;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int nodes = 10000, weeks = 52, samples = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    bool ok = true;
    if (a == "--dir") {
      dir = next();
    } else if (a == "--nodes") {
      ok = absl::SimpleAtoi(next(), &nodes) && nodes > 0;
    } else if (a == "--weeks") {
      ok = absl::SimpleAtoi(next(), &weeks) && weeks > 0;
    } else if (a == "--samples") {
      ok = absl::SimpleAtoi(next(), &samples) && samples > 0;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "usage: cmax-history-scale --dir DIR [--nodes N] [--weeks W] [--samples S]\n");
      return 2;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "cmax-history-scale: --dir is required (an empty folder)\n");
    return 2;
  }
  const std::string db = dir + "/cmax.db";
  if (FileBytes(db) > 0) {
    std::fprintf(stderr, "cmax-history-scale: %s exists; give an empty folder\n", db.c_str());
    return 2;
  }
  std::printf("data simulated (%d nodes x %d weekly runs, generated; no agents)\n", nodes, weeks);
  const Fleet fleet{nodes, weeks, 1767571200ll * 1000000000};  // 2026-01-05, a Monday
  auto t0 = Clock::now();
  auto runs = Generate(fleet);
  std::printf("generate_s %.2f\n", Seconds(t0, Clock::now()));

  auto store = cmax::coordinator::Store::Open(db);
  if (!store.ok()) {
    std::fprintf(stderr, "cmax-history-scale: %s\n", store.status().ToString().c_str());
    return 1;
  }
  std::vector<double> put_s;
  for (const auto& run : runs) {
    auto a = Clock::now();
    if (auto s = cmax::coordinator::PutRunHistory(**store, run.front().run_id(), run,
                                                  run.front().finished_unix_ns());
        !s.ok()) {
      std::fprintf(stderr, "cmax-history-scale: %s\n", s.ToString().c_str());
      return 1;
    }
    put_s.push_back(Seconds(a, Clock::now()));
  }
  std::printf("store_run_summaries_s_median %.3f\n", Median(put_s));
  store->reset();  // checkpoints the WAL into the file
  const int64_t bytes = FileBytes(db);
  std::printf("store_bytes %lld\n", static_cast<long long>(bytes));
  std::printf("store_bytes_per_node_run %.0f\n",
              static_cast<double>(bytes) / (static_cast<double>(nodes) * weeks));

  store = cmax::coordinator::Store::Open(db);
  if (!store.ok()) return 1;
  // One node's history, as `cmaxctl history NODE` asks it.
  std::mt19937 pick(7);
  std::vector<double> node_s;
  int incidents_seen = 0;
  for (int i = 0; i < samples; ++i) {
    const std::string node = NodeName(static_cast<int>(pick() % nodes));
    auto a = Clock::now();
    auto h = cmax::coordinator::QueryNodeHistory(**store, node);
    node_s.push_back(Seconds(a, Clock::now()));
    if (!h.ok() || h->runs_size() != weeks) {
      std::fprintf(stderr, "cmax-history-scale: %s: %s\n", node.c_str(),
                   h.ok() ? absl::StrCat(h->runs_size(), " runs, not ", weeks).c_str()
                          : h.status().ToString().c_str());
      return 1;
    }
    incidents_seen += h->incidents_size();
  }
  std::sort(node_s.begin(), node_s.end());
  std::printf("node_history_s_median %.4f\n", node_s[node_s.size() / 2]);
  std::printf("node_history_s_max %.4f\n", node_s.back());
  std::printf("node_history_incidents_in_sample %d\n", incidents_seen);

  // The fleet's, as /fleet and `cmaxctl history` ask it.
  auto a = Clock::now();
  auto fleet_summary = cmax::coordinator::QueryFleetReliability(**store);
  const double fleet_s = Seconds(a, Clock::now());
  if (!fleet_summary.ok()) {
    std::fprintf(stderr, "cmax-history-scale: %s\n", fleet_summary.status().ToString().c_str());
    return 1;
  }
  std::printf("fleet_s %.3f\n", fleet_s);
  std::printf("fleet_incidents %d\n", fleet_summary->incidents());
  std::printf("fleet_open_incidents %d\n", fleet_summary->open_incidents());
  std::printf("fleet_median_repair_hours %.1f\n", fleet_summary->median_repair_hours());
  std::printf("fleet_p90_repair_hours %.1f\n", fleet_summary->p90_repair_hours());
  std::printf("fleet_weeks %d\n", fleet_summary->weeks_size());
  std::printf("goal node_history_s < 1: %s\n", node_s.back() < 1 ? "met" : "NOT met");
  std::printf("goal fleet_s < 10: %s\n", fleet_s < 10 ? "met" : "NOT met");
  return 0;
}
