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
#include "benchmarks/history_scale/history_sim.h"
#include "coordinator/history_queries.h"
#include "coordinator/store.h"
#include "reports/history.h"

namespace {

using cmax::history_sim::Fleet;
using cmax::history_sim::Generate;
using cmax::history_sim::NodeName;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int64_t FileBytes(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
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
  const Fleet fleet{.nodes = nodes, .weeks = weeks};  // from 2026-01-05, a Monday
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
