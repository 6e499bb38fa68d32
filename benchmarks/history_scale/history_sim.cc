#include "benchmarks/history_scale/history_sim.h"

#include <iterator>
#include <memory>
#include <random>

#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "coordinator/history_queries.h"
#include "coordinator/store.h"
#include "reports/history.h"

namespace cmax::history_sim {
namespace {

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

}  // namespace

std::string NodeName(int i) { return absl::StrFormat("sim-node-%05d", i); }
std::string RunId(int w) { return absl::StrFormat("r20260105-000000-%04x", w); }

std::vector<std::vector<v1::NodeRunSummary>> Generate(const Fleet& f) {
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
      // A weekly full run: it measures every category its reasons come
      // from, so what failed a week is measured again the next.
      s.set_version(cmax::reports::kSummaryVersion);
      for (const char* c : {"Compute", "Networking", "Reliability"}) s.add_measured_categories(c);
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

absl::Status FillStore(const std::string& db_path, const Fleet& fleet) {
  CMAX_ASSIGN_OR_RETURN(std::unique_ptr<coordinator::Store> store,
                        coordinator::Store::Open(db_path));
  for (const auto& run : Generate(fleet)) {
    if (run.empty()) continue;
    CMAX_RETURN_IF_ERROR(coordinator::PutRunHistory(*store, run.front().run_id(), run,
                                                    run.front().finished_unix_ns()));
  }
  return absl::OkStatus();
}

}  // namespace cmax::history_sim
