// The coordinator core's node history (docs/history.md): each finished
// run's per-node summaries (reports/history.h) go into the store when its
// scorecard is done (CompleteRun), the scorecard gets the cluster's history
// as Reliability evidence (AddHistory, on the scorecard thread), runs that
// ended before this coordinator kept summaries are summarised at startup
// from their scorecard.json (BackfillHistory), cmaxctl history and the web
// view read it (QueryHistory: on the history threads, each with a read-only
// store connection of its own, never on the core thread), and /metrics gets each node's open incident and last
// accepted run from a compact state kept here (NoteSummaries).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/atomic_file.h"
#include "common/logging.h"
#include "common/run_id.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "coordinator/core.h"
#include "coordinator/history_queries.h"
#include "google/protobuf/util/json_util.h"
#include "reports/history.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("coordinator"); }

// [A-Za-z0-9._-] only, no leading dot, at most 80 characters; "_" if empty.
std::string SafePart(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) {
    const bool ok = absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  return out;
}

}  // namespace

std::vector<std::string> WriteRejectedArtifacts(
    const std::string& dir, const std::vector<StoredArtifact>& artifacts,
    const std::set<std::string>& rejected) {
  std::vector<std::string> written;
  for (const auto& a : artifacts) {
    if (!rejected.count(a.node)) continue;
    v1::Record record;
    if (!record.ParseFromString(a.record) || !record.has_artifact()) continue;
    const std::string folder = absl::StrCat(dir, "/artifacts/", SafePart(a.node));
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    const std::string path = absl::StrCat(folder, "/", SafePart(a.task_id), "-", a.seq,
                                          "-", SafePart(record.artifact().name()));
    if (auto s = WriteFileAtomically(path, record.artifact().content()); !s.ok()) {
      Log()->error("writing artifact {}: {}", path, s.ToString());
      continue;
    }
    written.push_back(path);
  }
  return written;
}

void CoordinatorCore::AddHistory(Store* store, int64_t finished_unix_ns,
                                 BuiltScorecard* built) {
  built->summaries = reports::SummarizeRun(built->card, finished_unix_ns, built->dir);
  std::vector<v1::NodeRunSummary> all;
  if (store != nullptr) {
    auto loaded = store->LoadNodeRunSummaries("");
    if (loaded.ok()) {
      all = std::move(*loaded);
    } else {
      Log()->error("run {}: reading node history: {}", built->run_id,
                   loaded.status().ToString());
    }
  }
  // This run's own rows may be there already (a scorecard built again).
  std::erase_if(all,
                [&](const v1::NodeRunSummary& s) { return s.run_id() == built->run_id; });
  all.insert(all.end(), built->summaries.begin(), built->summaries.end());
  reports::AddHistoryToScorecard(reports::ComputeReliability(all), &built->card);
}

void CoordinatorCore::NoteSummaries(const std::vector<v1::NodeRunSummary>& summaries) {
  const reports::HistoryOptions options;
  v1::Incident closed;
  for (const auto& s : summaries) {
    NodeHealth& h = node_health_[s.node()];
    if (s.verdict() == reports::kVerdictAccept) {
      h.last_accept_ns = std::max(h.last_accept_ns, s.finished_unix_ns());
    }
    if (reports::AdvanceIncident(s, options, &h.incident, &closed)) {
      repair_hours_.push_back(closed.repair_hours());
    }
  }
}

absl::Status CoordinatorCore::BackfillHistory() {
  CMAX_ASSIGN_OR_RETURN(std::set<std::string> done, store_->SummarizedRuns());
  // The migration to summaries that say what they measured (version 1,
  // reports/history.h): incidents are not stored, every reader derives them
  // from the stored summaries, so recomputing the incidents means
  // summarising those runs again from their scorecard.json, as for a run
  // never summarised. Idempotent: each row says its version, and a run whose
  // scorecard is gone (retention) keeps its old rows, which close nothing.
  CMAX_ASSIGN_OR_RETURN(std::vector<v1::NodeRunSummary> all, store_->LoadNodeRunSummaries(""));
  std::set<std::string> stale;
  for (const auto& s : all) {
    if (s.version() < reports::kSummaryVersion) stale.insert(s.run_id());
  }
  for (const auto& id : stale) done.erase(id);
  CMAX_ASSIGN_OR_RETURN(std::vector<RunRow> runs, store_->ListRuns(0, false));
  int filled = 0, migrated = 0;
  for (const RunRow& run : runs) {
    const std::string& id = run.info.run_id();
    if (done.count(id) || run.info.finished_unix_ns() <= 0 || !IsSafeRunId(id)) continue;
    const std::string dir = absl::StrCat(options_.data_dir, "/reports/", id);
    std::ifstream in(dir + "/scorecard.json", std::ios::binary);
    if (!in) continue;  // no scorecard (yet): nothing to summarise
    std::stringstream text;
    text << in.rdbuf();
    v1::Scorecard card;
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = true;
    if (!google::protobuf::util::JsonStringToMessage(text.str(), &card, opts).ok()) {
      Log()->warn("history: run {}: its scorecard.json does not parse; not summarised",
                  id);
      continue;
    }
    CMAX_RETURN_IF_ERROR(PutRunHistory(
        *store_, id, reports::SummarizeRun(card, run.info.finished_unix_ns(), dir), NowUnixNs()));
    ++(stale.count(id) ? migrated : filled);
  }
  if (filled > 0)
    Log()->info("history: summarised {} runs that ended before it was kept", filled);
  if (migrated > 0) {
    Log()->info("history: summarised {} runs again to record what each measured", migrated);
  }
  if (stale.size() > static_cast<size_t>(migrated)) {
    Log()->info(
        "history: {} runs' summaries predate what-was-measured and have no readable "
        "scorecard.json left: they open incidents but close none",
        stale.size() - migrated);
  }
  if (filled + migrated > 0) {
    CMAX_ASSIGN_OR_RETURN(all, store_->LoadNodeRunSummaries(""));
  }
  NoteSummaries(all);
  return absl::OkStatus();
}

namespace {

// A node's history reads its own rows and its runs' bands; the fleet's
// reads every row (history_queries.h; benchmarks/history_scale).
absl::StatusOr<v1::GetHistoryResponse> RunHistoryQuery(Store& store, const std::string& node,
                                                       const std::function<bool()>& stop) {
  v1::GetHistoryResponse resp;
  if (!node.empty()) {
    CMAX_ASSIGN_OR_RETURN(*resp.mutable_node(), QueryNodeHistory(store, node));
  } else {
    CMAX_ASSIGN_OR_RETURN(*resp.mutable_fleet(), QueryFleetReliability(store, stop));
  }
  return resp;
}

}  // namespace

absl::StatusOr<v1::GetHistoryResponse> CoordinatorCore::HandleGetHistory(
    const v1::GetHistoryRequest& request) {
  if (!request.node().empty() && !IsValidNodeName(request.node())) {
    return absl::InvalidArgumentError("bad node name");
  }
  return RunHistoryQuery(*store_, request.node(), {});
}

uint64_t CoordinatorCore::QueryHistory(const v1::GetHistoryRequest& request,
                                       HistoryPool::Done done) {
  const std::string node = request.node();
  if (!node.empty() && !IsValidNodeName(node)) {
    done(absl::InvalidArgumentError("bad node name"));
    return 0;
  }
  // Equal keys, equal queries: a node's history or the fleet's, nothing
  // else in the request changes the answer.
  return history_pool_.Submit(
      node.empty() ? "fleet" : absl::StrCat("node:", node),
      [node](Store& store, const std::function<bool()>& stop) {
        return RunHistoryQuery(store, node, stop);
      },
      std::move(done));
}

bool CoordinatorCore::AbandonHistory(uint64_t ticket) { return history_pool_.Abandon(ticket); }

absl::StatusOr<v1::GetHistoryResponse> CoordinatorCore::SnapshotHistory(
    const std::string& node, absl::Duration timeout) {
  // The answer lives in a shared block: a late one (after the wait gave
  // up) writes into memory that is still there.
  struct Reply {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::StatusOr<v1::GetHistoryResponse> value ABSL_GUARDED_BY(mu) =
        absl::UnknownError("no answer");
  };
  auto reply = std::make_shared<Reply>();
  v1::GetHistoryRequest request;
  request.set_node(node);
  const uint64_t ticket =
      QueryHistory(request, [reply](absl::StatusOr<v1::GetHistoryResponse> v) {
        absl::MutexLock lock(&reply->mu);
        reply->value = std::move(v);
        reply->done = true;
      });
  Reply* r = reply.get();
  auto done = [r]() ABSL_SHARED_LOCKS_REQUIRED(r->mu) { return r->done; };
  {
    absl::MutexLock lock(&reply->mu);
    if (reply->mu.AwaitWithTimeout(absl::Condition(&done), timeout)) {
      return std::move(reply->value);
    }
  }
  if (ticket != 0 && !AbandonHistory(ticket)) {
    // Answered meanwhile: take it.
    absl::MutexLock lock(&reply->mu);
    reply->mu.Await(absl::Condition(&done));
    return std::move(reply->value);
  }
  return absl::UnavailableError(absl::StrCat(
      "the ", node.empty() ? "fleet's" : "node's", " history took longer than ",
      absl::FormatDuration(timeout), "; retry later"));
}

}  // namespace cmax::coordinator
