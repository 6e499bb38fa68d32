// cmax-report-scale: generates the run data of an N-node x G-GPU cluster
// (SIMULATED: every Measurement and Finding has simulated = true, and the
// scorecard shows the banner), builds its scorecard and renders it. Prints
// the build and render times and the file sizes; writes scorecard.{json,md,
// html,xml} into --out. Used by tests/reports/report_scale_browser.sh to
// check that a 1,000-node scorecard stays under 10 MB and loads in a browser
// in under 3 s.
//
// The generated cluster: H100 nodes; hostcheck inventory; bf16 GEMM and
// memory copies (h2d, d2h, hbm) per GPU with a few slow GPUs; a one-node
// all_reduce sweep per node; a burn-in with clock, temperature and power
// Samples per GPU; storage seq_read and seq_write per node; connectivity to
// the two ring neighbours; a few warnings and failures (report_scale_data.h).
//
// --record-set builds it the way the coordinator does for a big run: the
// records moved into a compact reports::RecordSet (wire bytes), the parsed
// ones freed, and prints the set's size and the process's peak RSS while the
// scorecard was built (VmHWM, reset just before: /proc/self/clear_refs "5").
// --check-same builds the card both ways and exits 1 when they differ.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmarks/report_scale/report_scale_data.h"
#include "benchmarks/scale/measure.h"
#include "common/args.h"
#include "common/atomic_file.h"
#include "reports/charts.h"
#include "reports/record_set.h"
#include "reports/run_data.h"
#include "reports/scorecard.h"

namespace {

using cmax::reports::RunData;
using cmax::scale::Clock;
using cmax::scale::Seconds;
namespace v1 = cmax::v1;

// Moves data.records into a RecordSet (one at a time, each freed after it
// is serialized) and hands the freed memory back to the kernel.
void Compact(RunData* data) {
  auto set = std::make_shared<cmax::reports::RecordSet>();
  for (auto& r : data->records) {
    set->Add(r);
    r = v1::ExportedRecord();
  }
  data->records.clear();
  data->records.shrink_to_fit();
  data->record_set = std::move(set);
  malloc_trim(0);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t nodes = 1000, gpus = 8, samples = 12;
  std::string out;
  bool record_set = false, check_same = false;
  cmax::ArgParser p(
      "cmax-report-scale [--nodes N] [--gpus G] [--samples S] [--record-set] "
      "[--check-same] --out DIR",
      "Builds and renders the scorecard of a generated, SIMULATED N-node run; "
      "prints times and file sizes.");
  p.AddInt("nodes", &nodes, "nodes in the generated run (default 1000)");
  p.AddInt("gpus", &gpus, "GPUs per node (default 8)");
  p.AddInt("samples", &samples, "burn-in Samples per GPU and metric (default 12)");
  p.AddString("out", &out, "folder for scorecard.{json,md,html,xml} (must exist)");
  p.AddFlag(
      "record-set", &record_set,
      "hold the records in a compact RecordSet, as the coordinator does, and print the "
      "peak RSS while the scorecard is built");
  p.AddFlag("check-same", &check_same,
            "with --record-set (implied): also build the card from the records as parsed "
            "messages; exit 1 if the two differ");
  if (auto s = p.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "%s\n%s", std::string(s.message()).c_str(), p.Help().c_str());
    return 2;
  }
  if (p.help_requested()) {
    std::printf("%s", p.Help().c_str());
    return 0;
  }
  if (out.empty() || nodes < 1 || nodes > 20000 || gpus < 1 || gpus > 64 || samples < 1 ||
      samples > 1000) {
    std::fprintf(stderr, "need --out DIR, 1 <= --nodes <= 20000, 1 <= --gpus <= 64, "
                         "1 <= --samples <= 1000\n%s", p.Help().c_str());
    return 2;
  }
  if (check_same) record_set = true;  // the record-set card against the parsed one
  const auto a = Clock::now();
  RunData data = cmax::report_scale::Generate(
      static_cast<int>(nodes), static_cast<int>(gpus), static_cast<int>(samples));
  const auto b0 = Clock::now();
  const size_t records = data.records.size();
  std::printf("%s\n", cmax::reports::kSimulatedBanner);
  std::printf("generated %zu records for %lld nodes x %lld GPUs in %.0f ms\n", records,
              static_cast<long long>(nodes), static_cast<long long>(gpus), 1e3 * Seconds(a, b0));
  cmax::v1::Scorecard parsed_card;
  if (check_same) parsed_card = cmax::reports::BuildScorecard(data);
  if (record_set) {
    Compact(&data);
    std::printf(
        "record set: %.1f MB (%.0f bytes a record); RSS %.1f MB before the build\n",
        data.record_set->bytes() / 1048576.0,
        static_cast<double>(data.record_set->bytes()) / static_cast<double>(records),
        cmax::scale::StatusKb("VmRSS") / 1024.0);
    cmax::scale::ResetPeakRss();  // VmHWM := VmRSS from here on
  }
  const auto b = Clock::now();
  // With a record set, the moving overload (as the coordinator calls it):
  // the const one would copy the set.
  const cmax::v1::Scorecard card = record_set
                                       ? cmax::reports::BuildScorecard(std::move(data))
                                       : cmax::reports::BuildScorecard(data);
  const auto c = Clock::now();
  if (record_set) {
    std::printf("peak RSS while building the scorecard: %.1f MB\n",
                cmax::scale::StatusKb("VmHWM") / 1024.0);
  }
  if (check_same) {
    if (!cmax::scale::SameScorecard(card, parsed_card)) return 1;
    std::printf("the scorecard is the same built from parsed records\n");
  }
  std::printf("BuildScorecard: %.0f ms (%d charts)\n", 1e3 * Seconds(b, c), card.charts_size());
  if (!record_set) {
    // The chart builder's share: run it again on a copy without its output.
    cmax::v1::Scorecard again = card;
    again.clear_charts();
    again.clear_charts_not_measured();
    again.clear_node_grid();
    const auto c0 = Clock::now();
    cmax::reports::BuildCharts(data, &again);
    std::printf("  of which BuildCharts (run again on the same data): %.0f ms\n",
                1e3 * cmax::scale::SecondsSince(c0));
  }
  int rc = 0;
  for (const auto& [ext, render] :
       std::vector<std::pair<std::string, std::string (*)(const cmax::v1::Scorecard&)>>{
           {"json", cmax::reports::RenderJson},
           {"md", cmax::reports::RenderMarkdown},
           {"html", cmax::reports::RenderHtml},
           {"xml", cmax::reports::RenderJunit}}) {
    const auto r0 = Clock::now();
    const std::string text = render(card);
    const auto r1 = Clock::now();
    const std::string path = absl::StrCat(out, "/scorecard.", ext);
    if (auto s = cmax::WriteFileAtomically(path, text); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      rc = 1;
      continue;
    }
    std::printf("scorecard.%s: %zu bytes, rendered in %.0f ms\n", ext.c_str(), text.size(),
                1e3 * Seconds(r0, r1));
  }
  return rc;
}
