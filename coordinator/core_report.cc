// The coordinator core's report writing: when a run ends (FinishRun) its
// scorecard is built on the scorecard thread from the store's read-only
// connection (ScorecardLoop), and rendered and written there as
// <data_dir>/reports/<run_id>/scorecard.{json,md,html,xml}
// (BuildScorecardFiles); the core thread then records the result on the run,
// drains failed nodes (--slurm-drain), tells the watchers and forgets the run
// (CompleteRun). HandleGetReport serves the written files.
#include <malloc.h>
#include <sys/stat.h>

#include <fstream>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/atomic_file.h"
#include "common/logging.h"
#include "common/run_id.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "coordinator/core.h"
#include "coordinator/history_queries.h"
#include "reports/record_set.h"
#include "reports/scorecard.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("coordinator"); }

}  // namespace

v1::RunEvent CoordinatorCore::RunEventFor(const RunRow& run) {
  v1::RunEvent ev;
  *ev.mutable_run() = run.info;
  return ev;
}

void CoordinatorCore::FinishRun(const std::string& run_id) {
  RunRow* run = scheduler_.FindRun(run_id);
  if (!run || building_.count(run_id)) return;
  reports::RunData data;
  data.run = run->info;
  data.plan = run->plan;
  data.nodes = run->nodes;
  for (TaskRow* t : scheduler_.TasksOf(run_id)) data.tasks.push_back(t->info);
  for (const auto& node : run->nodes) {
    if (const AgentEntry* e = registry_.Find(node)) data.inventories[node] = e->inventory;
  }
  if (!scorecard_thread_.joinable()) {
    CompleteRun(BuildScorecardFiles(std::move(data), store_.get(), [] { return false; }));
    return;
  }
  building_.insert(run_id);
  Log()->info("run {} {}: building its scorecard", run_id, run->info.state());
  // Handed over once this round is committed: the scorecard thread reads
  // the store through its own connection, which sees only committed data.
  scorecard_ready_.push_back(std::move(data));
  if (!store_->in_round()) EndRound();
}

void CoordinatorCore::ScorecardLoop() {
  std::unique_ptr<Store> reader;
  auto stopping = [this] {
    absl::MutexLock lock(&scorecard_mu_);
    return scorecard_stop_;
  };
  for (;;) {
    reports::RunData job;
    {
      absl::MutexLock lock(&scorecard_mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(scorecard_mu_) {
        return !scorecard_jobs_.empty() || scorecard_stop_;
      };
      scorecard_mu_.Await(absl::Condition(&ready));
      if (scorecard_stop_) return;
      job = std::move(scorecard_jobs_.front());
      scorecard_jobs_.pop_front();
    }
    if (!reader) {
      auto r = Store::OpenReader(db_path_);
      if (!r.ok()) {
        Log()->error("scorecard thread: {}", r.status().ToString());
      } else {
        reader = std::move(*r);
      }
    }
    // Memory the core thread's arenas freed (record batches, gRPC buffers)
    // is not reused by this thread's arena: give it back first, then after.
    malloc_trim(0);
    BuiltScorecard built = BuildScorecardFiles(std::move(job), reader.get(), stopping);
    malloc_trim(0);
    if (built.aborted) return;
    auto shared = std::make_shared<BuiltScorecard>(std::move(built));
    Post([this, shared] {
      building_.erase(shared->run_id);
      CompleteRun(std::move(*shared));
    });
  }
}

CoordinatorCore::BuiltScorecard CoordinatorCore::BuildScorecardFiles(
    reports::RunData data, Store* store, const std::function<bool()>& stopping) {
  BuiltScorecard built;
  built.run_id = data.run.run_id();
  const std::string& run_id = built.run_id;
  std::vector<StoredArtifact> artifacts;
  if (store == nullptr) {
    Log()->error("run {}: no store connection to read its records from", run_id);
  } else {
    int64_t scanned = 0;
    // Each record kept as its serialized bytes (reports/record_set.h): the
    // judges parse one at a time, so a 10,000-node card fits in 2 GiB.
    auto set = std::make_shared<reports::RecordSet>();
    data.record_set = set;
    // The stored bytes go into the set as they are (AddWire): no parse of
    // the whole ExportedRecord and no serializing it again.
    // Each task's record count is what the store holds for its judged
    // (latest) attempt, late records included: a task that ended without a
    // final status of its own (lost, expired, cancelled, or ended across a
    // coordinator restart) still shows the records it left.
    absl::flat_hash_map<std::string, std::map<int, int64_t>> stored;
    auto scan = store->ScanRecordRows(run_id, [&](const StoredRecordView& r) {
      set->AddWire(r.task_id, r.attempt, r.seq, r.node, r.suite, r.record, r.late, r.rank);
      // An Artifact record: its one field is the oneof's `artifact` (field 6,
      // length-delimited: tag byte 6 << 3 | 2), kept for the RMA bundle.
      if (!r.record.empty() && static_cast<uint8_t>(r.record[0]) == 0x32) {
        artifacts.push_back(
            {std::string(r.node), std::string(r.task_id), r.seq, std::string(r.record)});
      }
      const absl::string_view task(r.task_id.data(), r.task_id.size());
      auto it = stored.find(task);
      if (it == stored.end()) it = stored.try_emplace(std::string(task)).first;
      ++it->second[r.attempt];
      // Checked now and then: a stop must not wait for a long scan.
      if ((++scanned & 0xffff) == 0 && stopping()) {
        built.aborted = true;
        return false;
      }
      return true;
    });
    if (!scan.ok()) Log()->error("run {}: reading records: {}", run_id, scan.ToString());
    if (built.aborted) return built;
    if (scan.ok()) {
      for (auto& t : data.tasks) {
        int64_t n = 0;
        if (auto it = stored.find(t.task_id()); it != stored.end()) {
          if (auto a = it->second.find(t.attempt()); a != it->second.end()) n = a->second;
        }
        t.set_records(n);
      }
    }
  }
  const int64_t finished_ns =
      data.run.finished_unix_ns() > 0 ? data.run.finished_unix_ns() : NowUnixNs();
  built.card = reports::BuildScorecard(std::move(data));
  built.dir = absl::StrCat(options_.data_dir, "/reports/", run_id);
  AddHistory(store, finished_ns, &built);
  mkdir(built.dir.c_str(), 0750);
  std::set<std::string> rejected;
  for (const auto& n : built.card.nodes()) {
    if (n.verdict() == "fail") rejected.insert(n.node());
  }
  WriteRejectedArtifacts(built.dir, artifacts, rejected);
  built.written = true;
  const v1::Scorecard& card = built.card;
  for (const auto& [ext, content] :
       std::vector<std::pair<std::string, std::string>>{{"json", reports::RenderJson(card)},
                                                        {"md", reports::RenderMarkdown(card)},
                                                        {"html", reports::RenderHtml(card)},
                                                        {"xml", reports::RenderJunit(card)}}) {
    if (auto s = WriteFileAtomically(absl::StrCat(built.dir, "/scorecard.", ext), content);
        !s.ok()) {
      Log()->error("run {}: writing scorecard: {}", run_id, s.ToString());
      built.written = false;
    }
  }
  return built;
}

void CoordinatorCore::CompleteRun(BuiltScorecard built) {
  const std::string& run_id = built.run_id;
  RunRow* run = scheduler_.FindRun(run_id);
  if (!run) return;
  const v1::Scorecard& card = built.card;
  const std::string& dir = built.dir;
  const bool written = built.written;
  int nodes_failed = 0;
  for (const auto& n : card.nodes()) nodes_failed += n.verdict() == "fail";
  LastScorecard last{run_id, card.tier(), {}, {}};
  for (const auto& c : card.categories()) last.grades.emplace_back(c.name(), c.grade());
  for (const auto& n : card.nodes()) last.verdicts.emplace_back(n.node(), n.verdict());
  last_scorecard_ = std::move(last);
  if (slurm_) {
    std::vector<std::pair<std::string, std::string>> failed;
    for (const auto& n : card.nodes()) {
      if (n.verdict() != "fail") continue;
      failed.emplace_back(n.node(), n.reasons_size() > 0 ? n.reasons(0) : "verdict fail");
    }
    slurm_->Drain(run_id, std::move(failed));
  }
  {
    std::map<std::string, std::pair<std::string, std::string>> verdicts;
    for (const auto& n : card.nodes()) {
      verdicts[n.node()] = {n.verdict(), n.reasons_size() > 0 ? n.reasons(0) : ""};
    }
    incidents_->OnRunEnded(run_id, verdicts, NowUnixNs());
  }
  ++runs_ended_[run->info.state()];
  run->info.set_tier(card.tier());
  run->info.set_nodes_failed(nodes_failed);
  if (written) run->info.set_report_dir(dir);
  scheduler_.RefreshCounters(run);
  if (auto s = store_->PutRun(*run); !s.ok()) Log()->error("persisting run: {}", s.ToString());
  if (auto s = PutRunHistory(*store_, run_id, built.summaries, NowUnixNs()); !s.ok()) {
    Log()->error("run {}: storing node history: {}", run_id, s.ToString());
  }
  NoteSummaries(built.summaries);
  // Counted like cmaxctl counts them (RunInfo.tasks_failed includes the
  // tasks that could not run; this line says those apart).
  std::vector<v1::TaskInfo> tasks;
  for (const TaskRow* t : scheduler_.TasksOf(run_id)) tasks.push_back(t->info);
  Log()->info("{}; scorecard in {}",
              RunEndedLine(run_id, run->info.state(), card.tier(), CountTasks(tasks), nodes_failed),
              dir);
  v1::RunEvent final_event = RunEventFor(*run);
  Broadcast(run_id, final_event);
  if (auto it = watchers_.find(run_id); it != watchers_.end()) {
    for (auto& w : it->second) w->OnEnd();
    watchers_.erase(it);
  }
  schedules_.OnRunEnded(run->info);
  scheduler_.Forget(run_id);
}

absl::StatusOr<v1::GetReportResponse> CoordinatorCore::HandleGetReport(
    const v1::GetReportRequest& request) {
  if (!IsSafeRunId(request.run_id())) return absl::InvalidArgumentError("bad run id");
  std::string fmt = request.format().empty() ? "json" : request.format();
  if (fmt == "markdown") fmt = "md";
  if (fmt == "junit") fmt = "xml";  // scorecard.xml, JUnit XML
  if (fmt != "json" && fmt != "md" && fmt != "html" && fmt != "xml") {
    return absl::InvalidArgumentError("format must be json, md, html or junit");
  }
  CMAX_ASSIGN_OR_RETURN(RunRow run, store_->GetRun(request.run_id()));
  std::string path =
      absl::StrCat(options_.data_dir, "/reports/", request.run_id(), "/scorecard.", fmt);
  std::ifstream in(path, std::ios::binary);
  if (!in && fmt == "xml" && std::ifstream(absl::StrCat(options_.data_dir, "/reports/",
                                                       request.run_id(), "/scorecard.json"))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", request.run_id(), " has a scorecard but no JUnit XML (scorecard.xml): it ended "
        "before this coordinator wrote one; use --format json, md or html"));
  }
  if (!in && run.info.scorecard_dropped_unix_ns() > 0) {
    return absl::NotFoundError(absl::StrCat(
        "run ", request.run_id(), " was started by schedule ", run.info.schedule_id(),
        " and its scorecard was dropped by retention (cmax-coordinator --keep-runs-for) at ",
        FormatRfc3339(run.info.scorecard_dropped_unix_ns())));
  }
  if (!in) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", request.run_id(), " has no scorecard yet (state ", run.info.state(), ")"));
  }
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  v1::GetReportResponse resp;
  resp.set_content(content);
  resp.set_path(path);
  return resp;
}

}  // namespace cmax::coordinator
