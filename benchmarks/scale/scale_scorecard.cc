// cmax-scale-scorecard: builds the scorecard of a run already in a cmax
// store (e.g. the one `benchmarks/scale/run.sh --keep` leaves), the way the
// coordinator's scorecard thread reads it, and prints its time and this
// process's peak RSS. Two ways: the records held as wire bytes in a
// reports::RecordSet (the coordinator's path since issue 18), or --parsed:
// as parsed ExportedRecords in RunData.records (the path before). With
// --check-same it builds both and exits 1 when the cards differ. Reads only
// (a read-only connection); writes nothing.
//   cmax-scale-scorecard --db DATA_DIR/cmax.db [--run ID] [--parsed | --check-same]
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmarks/scale/measure.h"
#include "common/args.h"
#include "coordinator/store.h"
#include "reports/record_set.h"
#include "reports/scorecard.h"

namespace {

using cmax::coordinator::Store;
namespace v1 = cmax::v1;

// The run's data as CoordinatorCore hands it to the scorecard thread
// (tasks in the scheduler's order, the agents' last inventories), with the
// records read as `parsed` says. Empty run id: the newest run.
absl::StatusOr<cmax::reports::RunData> Load(Store& store, std::string run_id,
                                            bool parsed) {
  if (run_id.empty()) {
    auto runs = store.ListRuns(1, false);
    if (!runs.ok()) return runs.status();
    if (runs->empty()) return absl::NotFoundError("the store holds no run");
    run_id = runs->front().info.run_id();
  }
  auto run = store.GetRun(run_id);
  if (!run.ok()) return run.status();
  cmax::reports::RunData data;
  data.run = run->info;
  data.run.clear_tier();
  data.run.clear_nodes_failed();
  data.run.clear_report_dir();
  data.plan = run->plan;
  data.nodes = run->nodes;
  auto tasks = store.LoadTasks(run_id);
  if (!tasks.ok()) return tasks.status();
  std::stable_sort(tasks->begin(), tasks->end(), [](const auto& a, const auto& b) {
    return a.info.suite_index() < b.info.suite_index();
  });
  for (const auto& t : *tasks) data.tasks.push_back(t.info);
  auto agents = store.LoadAgents();
  if (!agents.ok()) return agents.status();
  for (const auto& a : *agents) data.inventories[a.node] = a.inventory;
  if (parsed) {
    auto scan = store.ScanRecords(run_id, [&](const v1::ExportedRecord& r) {
      data.records.push_back(r);
      return true;
    });
    if (!scan.ok()) return scan;
    return data;
  }
  // As the coordinator's scorecard thread reads them (core_report.cc): the
  // stored bytes, not parsed and serialized again.
  auto set = std::make_shared<cmax::reports::RecordSet>();
  auto scan = store.ScanRecordRows(run_id, [&](const cmax::coordinator::StoredRecordView& r) {
    set->AddWire(r.task_id, r.attempt, r.seq, r.node, r.suite, r.record, r.late, r.rank);
    return true;
  });
  if (!scan.ok()) return scan;
  data.record_set = std::move(set);
  return data;
}

}  // namespace

int main(int argc, char** argv) {
  std::string db, run_id, html;
  bool parsed = false, check_same = false;
  cmax::ArgParser p(
      "cmax-scale-scorecard --db PATH [--run ID] [--parsed | --check-same] [--html FILE]",
      "Builds the scorecard of a stored run as the coordinator does; prints the "
      "time and the peak RSS. Reads only (--html writes the card, rendered now, to FILE).");
  p.AddString("db", &db, "the store (a coordinator's DATA_DIR/cmax.db)");
  p.AddString("run", &run_id, "the run (default: the newest)");
  p.AddString("html", &html, "render the card as HTML into FILE (the renderer of this build)");
  p.AddFlag("parsed", &parsed,
            "hold the records as parsed messages (the path before issue 18)");
  p.AddFlag(
      "check-same", &check_same,
      "build the card both ways; exit 1 when they differ (peak RSS is then both's)");
  cmax::ParseToolArgsOrExit(p, argc, argv);
  if (db.empty()) {
    std::fprintf(stderr, "need --db PATH\n%s", p.Help().c_str());
    return 2;
  }
  auto store = Store::OpenReader(db);
  if (!store.ok()) {
    std::fprintf(stderr, "%s: %s\n", db.c_str(), store.status().ToString().c_str());
    return 1;
  }
  using cmax::scale::Clock;
  using cmax::scale::Seconds;
  auto build = [&](bool as_parsed, v1::Scorecard* card) -> bool {
    const auto a = Clock::now();
    auto data = Load(**store, run_id, as_parsed);
    if (!data.ok()) {
      std::fprintf(stderr, "%s\n", data.status().ToString().c_str());
      return false;
    }
    const size_t records = cmax::reports::RecordCount(*data);
    const double held_mb = data->record_set ? data->record_set->bytes() / 1048576.0 : -1;
    const auto b = Clock::now();
    *card = cmax::reports::BuildScorecard(std::move(*data));
    const auto c = Clock::now();
    malloc_trim(0);
    std::printf(
        "%s: %zu records read in %.1f s%s; scorecard built in %.1f s; peak RSS so far "
        "%.1f MB\n",
        as_parsed ? "parsed records" : "record set", records,
        Seconds(a, b),
        held_mb >= 0
            ? absl::StrCat(" (", static_cast<int64_t>(held_mb), " MB held)").c_str()
            : "",
        Seconds(b, c), cmax::scale::StatusKb("VmHWM") / 1024.0);
    return true;
  };
  v1::Scorecard card, other;
  if (!build(parsed && !check_same, &card)) return 1;
  std::printf("%s%s\n", card.simulated() ? "SIMULATED: " : "", card.tier().c_str());
  if (!html.empty()) {
    std::ofstream out(html, std::ios::binary | std::ios::trunc);
    out << cmax::reports::RenderHtml(card);
    out.close();
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", html.c_str());
      return 1;
    }
    std::printf("wrote %s\n", html.c_str());
  }
  if (!check_same) return 0;
  if (!build(true, &other)) return 1;
  if (!cmax::scale::SameScorecard(card, other)) return 1;
  std::printf("the same scorecard both ways (%d nodes)\n", card.nodes_size());
  return 0;
}
