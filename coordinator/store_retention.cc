// Retention (store.h, "Retention"): dropping the records of runs that ended
// long ago while their runs, tasks and scorecards stay (but for scheduled
// runs, whose scorecard folders go too), and giving the freed pages back to
// the file system.
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/run_id.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "coordinator/store.h"

namespace cmax::coordinator {
namespace {

// Tasks whose records one transaction deletes: a 10,000-node run's pruning
// is then hundreds of short transactions, and the coordinator's writer,
// which shares the database, waits for one of them at most.
constexpr int kTasksPerTransaction = 64;
// Pages one incremental_vacuum step frees (4 KiB pages: 8 MiB).
constexpr int kPagesPerVacuumStep = 2048;

absl::Status SqlError(sqlite3* db, const std::string& what, int rc) {
  std::string msg = absl::StrCat("retention: ", what, ": ", sqlite3_errmsg(db));
  if ((rc & 0xff) == SQLITE_FULL || (rc & 0xff) == SQLITE_IOERR) {
    return absl::ResourceExhaustedError(
        absl::StrCat(msg, "; is the coordinator's data directory full?"));
  }
  if ((rc & 0xff) == SQLITE_BUSY) return absl::UnavailableError(msg);
  return absl::InternalError(msg);
}

absl::Status ExecOn(sqlite3* db, const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  return rc == SQLITE_OK ? absl::OkStatus() : SqlError(db, sql, rc);
}

// A prepared statement that finalizes itself.
struct Prepared {
  sqlite3_stmt* stmt = nullptr;
  int rc;
  Prepared(sqlite3* db, const char* sql) { rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr); }
  ~Prepared() { sqlite3_finalize(stmt); }
};

// Bytes an unprivileged writer may still use on the file system of `dir`.
absl::StatusOr<int64_t> FreeBytes(const std::string& dir) {
  struct statvfs vfs;
  if (statvfs(dir.c_str(), &vfs) != 0) {
    return absl::InternalError(absl::StrCat("statvfs ", dir, ": ", std::strerror(errno)));
  }
  return static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
}

absl::StatusOr<int64_t> PragmaInt(sqlite3* db, const char* sql) {
  Prepared p(db, sql);
  if (p.rc != SQLITE_OK) return SqlError(db, sql, p.rc);
  const int rc = sqlite3_step(p.stmt);
  if (rc != SQLITE_ROW) return SqlError(db, sql, rc);
  return sqlite3_column_int64(p.stmt, 0);
}

// Runs in a write transaction; rolled back when `body` fails.
absl::Status InTransaction(sqlite3* db, const std::function<absl::Status()>& body) {
  CMAX_RETURN_IF_ERROR(ExecOn(db, "BEGIN IMMEDIATE"));
  absl::Status s = body();
  if (s.ok()) s = ExecOn(db, "COMMIT");
  if (!s.ok()) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  return s;
}

// The run ids of the rows `sql` selects (column 1: the RunInfo blob) that
// `keep` accepts; a row whose info does not parse is skipped. `what` names
// the query in errors.
absl::StatusOr<std::vector<std::string>> SelectRuns(
    sqlite3* db, const char* sql, const char* what,
    const std::function<bool(const v1::RunInfo&, sqlite3_stmt*)>& keep) {
  Prepared p(db, sql);
  if (p.rc != SQLITE_OK) return SqlError(db, what, p.rc);
  std::vector<std::string> out;
  int rc;
  while ((rc = sqlite3_step(p.stmt)) == SQLITE_ROW) {
    v1::RunInfo info;
    const void* blob = sqlite3_column_blob(p.stmt, 1);
    if (!blob || !info.ParseFromArray(blob, sqlite3_column_bytes(p.stmt, 1))) continue;
    if (keep(info, p.stmt)) out.push_back(info.run_id());
  }
  if (rc != SQLITE_DONE) return SqlError(db, what, rc);
  return out;
}

// The runs to prune: ended before the cutoff, with a scorecard, and either
// not marked yet or marked by a pass that did not finish (records -1).
absl::StatusOr<std::vector<std::string>> RunsToPrune(sqlite3* db, int64_t cutoff_unix_ns) {
  return SelectRuns(
      db,
      "SELECT runs.run_id, runs.info, pruned_runs.records FROM runs "
      "LEFT JOIN pruned_runs USING(run_id) "
      "WHERE runs.state NOT IN ('pending', 'running') "
      "AND (pruned_runs.records IS NULL OR pruned_runs.records < 0)",
      "list runs to prune", [cutoff_unix_ns](const v1::RunInfo& info, sqlite3_stmt* row) {
        const bool unfinished_pass = sqlite3_column_type(row, 2) != SQLITE_NULL;
        // A run without a finish time or without a scorecard keeps its
        // records: they are all there is of it.
        return unfinished_pass ||
               (info.finished_unix_ns() > 0 && info.finished_unix_ns() < cutoff_unix_ns &&
                !info.report_dir().empty());
      });
}

absl::StatusOr<std::vector<std::string>> TasksOf(sqlite3* db, const std::string& run_id) {
  Prepared p(db, "SELECT task_id FROM tasks WHERE run_id = ?");
  if (p.rc != SQLITE_OK) return SqlError(db, "list tasks", p.rc);
  sqlite3_bind_text(p.stmt, 1, run_id.data(), static_cast<int>(run_id.size()), SQLITE_TRANSIENT);
  std::vector<std::string> out;
  int rc;
  while ((rc = sqlite3_step(p.stmt)) == SQLITE_ROW) {
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(p.stmt, 0)),
                     sqlite3_column_bytes(p.stmt, 0));
  }
  if (rc != SQLITE_DONE) return SqlError(db, "list tasks", rc);
  return out;
}

absl::Status SetMark(sqlite3* db, const std::string& run_id, int64_t records) {
  Prepared p(db,
             "INSERT INTO pruned_runs(run_id, pruned_ns, records) VALUES(?, ?, ?) "
             "ON CONFLICT(run_id) DO UPDATE SET records = excluded.records");
  if (p.rc != SQLITE_OK) return SqlError(db, "mark pruned run", p.rc);
  sqlite3_bind_text(p.stmt, 1, run_id.data(), static_cast<int>(run_id.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(p.stmt, 2, NowUnixNs());
  sqlite3_bind_int64(p.stmt, 3, records);
  const int rc = sqlite3_step(p.stmt);
  return rc == SQLITE_DONE ? absl::OkStatus() : SqlError(db, "mark pruned run", rc);
}

// Deletes one run's records; how many.
absl::StatusOr<int64_t> PruneRun(sqlite3* db, const std::string& run_id) {
  // Marked first, in its own transaction: from here on the run reads as
  // dropped (an export refuses it) even while its deletion is under way.
  CMAX_RETURN_IF_ERROR(InTransaction(db, [&] { return SetMark(db, run_id, -1); }));
  CMAX_ASSIGN_OR_RETURN(std::vector<std::string> tasks, TasksOf(db, run_id));
  int64_t deleted = 0;
  for (size_t i = 0; i < tasks.size(); i += kTasksPerTransaction) {
    CMAX_RETURN_IF_ERROR(InTransaction(db, [&]() -> absl::Status {
      // The records' key starts with task_id: each delete is a range scan.
      Prepared p(db, "DELETE FROM records WHERE task_id = ?");
      if (p.rc != SQLITE_OK) return SqlError(db, "delete records", p.rc);
      for (size_t j = i; j < std::min(tasks.size(), i + kTasksPerTransaction); ++j) {
        sqlite3_bind_text(p.stmt, 1, tasks[j].data(), static_cast<int>(tasks[j].size()),
                          SQLITE_TRANSIENT);
        const int rc = sqlite3_step(p.stmt);
        if (rc != SQLITE_DONE) return SqlError(db, "delete records", rc);
        deleted += sqlite3_changes(db);
        sqlite3_reset(p.stmt);
      }
      return absl::OkStatus();
    }));
  }
  // Records without a task row (none are written so; a store edited by
  // hand) go by the run index.
  CMAX_RETURN_IF_ERROR(InTransaction(db, [&]() -> absl::Status {
    Prepared p(db, "DELETE FROM records WHERE run_id = ?");
    if (p.rc != SQLITE_OK) return SqlError(db, "delete records", p.rc);
    sqlite3_bind_text(p.stmt, 1, run_id.data(), static_cast<int>(run_id.size()), SQLITE_TRANSIENT);
    if (const int rc = sqlite3_step(p.stmt); rc != SQLITE_DONE) {
      return SqlError(db, "delete records", rc);
    }
    deleted += sqlite3_changes(db);
    return SetMark(db, run_id, deleted);
  }));
  return deleted;
}

// Gives the free pages back to the file system, a step at a time (a store
// without auto_vacuum=INCREMENTAL keeps them for reuse: incremental_vacuum
// does nothing there).
absl::StatusOr<int64_t> ReturnFreePages(sqlite3* db) {
  CMAX_ASSIGN_OR_RETURN(int64_t before, PragmaInt(db, "PRAGMA freelist_count"));
  const std::string step = absl::StrCat("PRAGMA incremental_vacuum(", kPagesPerVacuumStep, ")");
  for (int64_t left = before; left > 0;) {
    Prepared p(db, step.c_str());
    if (p.rc != SQLITE_OK) return SqlError(db, step, p.rc);
    int rc;
    while ((rc = sqlite3_step(p.stmt)) == SQLITE_ROW) {
    }
    if (rc != SQLITE_DONE) return SqlError(db, step, rc);
    CMAX_ASSIGN_OR_RETURN(int64_t now, PragmaInt(db, "PRAGMA freelist_count"));
    if (now >= left) break;  // not an incremental store: nothing moves
    left = now;
  }
  CMAX_ASSIGN_OR_RETURN(int64_t after, PragmaInt(db, "PRAGMA freelist_count"));
  return before - after;
}

// Scheduled runs (RunInfo.schedule_id) that ended before the cutoff, have
// had a scorecard and whose folder is not marked dropped yet.
absl::StatusOr<std::vector<std::string>> ScorecardsToDrop(sqlite3* db, int64_t cutoff_unix_ns) {
  return SelectRuns(
      db,
      "SELECT runs.run_id, runs.info FROM runs LEFT JOIN pruned_reports USING(run_id) "
      "WHERE runs.state NOT IN ('pending', 'running') AND pruned_reports.run_id IS NULL",
      "list scorecards to drop", [cutoff_unix_ns](const v1::RunInfo& info, sqlite3_stmt*) {
        return !info.schedule_id().empty() && !info.report_dir().empty() &&
               info.finished_unix_ns() > 0 && info.finished_unix_ns() < cutoff_unix_ns;
      });
}

enum class FolderGone { kDeleted, kAbsent, kLeft };

// Deletes REPORTS_ROOT/RUN_ID when it is a directory (not a link to one)
// and RUN_ID a run id; its contents go without following any link. kLeft
// (logged, nothing deleted) for anything else there or a name that is not
// a run id.
absl::StatusOr<FolderGone> DeleteScorecardFolder(const std::string& reports_root,
                                                 const std::string& run_id) {
  const std::string dir = absl::StrCat(reports_root, "/", run_id);
  if (!IsSafeRunId(run_id) || run_id.front() == '.') {
    GetLogger("coordinator")->warn("retention: '{}' is not a run id; nothing deleted", run_id);
    return FolderGone::kLeft;
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return FolderGone::kAbsent;
  if (!S_ISDIR(st.st_mode)) {
    GetLogger("coordinator")
        ->warn("retention: {} is not a directory (a link?); left as it is", dir);
    return FolderGone::kLeft;
  }
  std::error_code ec;
  // remove_all removes links themselves and never descends through them.
  std::filesystem::remove_all(std::filesystem::path(dir), ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("retention: deleting the scorecard folder ", dir, ": ", ec.message()));
  }
  return FolderGone::kDeleted;
}

absl::Status MarkScorecardDropped(sqlite3* db, const std::string& run_id) {
  return InTransaction(db, [&]() -> absl::Status {
    Prepared p(db, "INSERT OR IGNORE INTO pruned_reports(run_id, dropped_ns) VALUES(?, ?)");
    if (p.rc != SQLITE_OK) return SqlError(db, "mark dropped scorecard", p.rc);
    sqlite3_bind_text(p.stmt, 1, run_id.data(), static_cast<int>(run_id.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_int64(p.stmt, 2, NowUnixNs());
    const int rc = sqlite3_step(p.stmt);
    return rc == SQLITE_DONE ? absl::OkStatus() : SqlError(db, "mark dropped scorecard", rc);
  });
}

absl::StatusOr<Store::PrunePass> PruneOn(sqlite3* db, int64_t cutoff_unix_ns,
                                         const std::string& reports_root) {
  Store::PrunePass pass;
  if (!reports_root.empty()) {
    // Deleted first, then marked: a pass cut short between the two marks
    // it the next time (nothing is left to delete).
    CMAX_ASSIGN_OR_RETURN(std::vector<std::string> cards, ScorecardsToDrop(db, cutoff_unix_ns));
    for (const auto& run_id : cards) {
      CMAX_ASSIGN_OR_RETURN(FolderGone gone, DeleteScorecardFolder(reports_root, run_id));
      if (gone == FolderGone::kLeft) continue;
      CMAX_RETURN_IF_ERROR(MarkScorecardDropped(db, run_id));
      if (gone == FolderGone::kDeleted) {
        ++pass.scorecards;
        GetLogger("coordinator")
            ->info("retention: dropped the scorecard folder of scheduled run {}", run_id);
      }
    }
  }
  CMAX_ASSIGN_OR_RETURN(std::vector<std::string> runs, RunsToPrune(db, cutoff_unix_ns));
  for (const auto& run_id : runs) {
    CMAX_ASSIGN_OR_RETURN(int64_t n, PruneRun(db, run_id));
    ++pass.runs;
    pass.records += n;
    GetLogger("coordinator")
        ->info("retention: dropped the {} records of run {} (the run and its tasks stay)", n,
               run_id);
  }
  if (pass.runs > 0) {
    CMAX_ASSIGN_OR_RETURN(pass.pages_freed, ReturnFreePages(db));
  }
  return pass;
}

}  // namespace

absl::StatusOr<Store::PrunePass> Store::PruneRecords(int64_t cutoff_unix_ns,
                                                     const std::string& reports_root) {
  return PruneOn(db_, cutoff_unix_ns, reports_root);
}

absl::StatusOr<int> Store::AutoVacuumMode() {
  CMAX_ASSIGN_OR_RETURN(int64_t mode, PragmaInt(db_, "PRAGMA auto_vacuum"));
  return static_cast<int>(mode);
}

absl::StatusOr<int64_t> Store::ConversionBytesNeeded() {
  CMAX_ASSIGN_OR_RETURN(int64_t pages, PragmaInt(db_, "PRAGMA page_count"));
  CMAX_ASSIGN_OR_RETURN(int64_t free_pages, PragmaInt(db_, "PRAGMA freelist_count"));
  CMAX_ASSIGN_OR_RETURN(int64_t page_size, PragmaInt(db_, "PRAGMA page_size"));
  // VACUUM builds a copy of the live pages in a temporary file (in dir_,
  // Open), then writes them back through the WAL: two copies at the peak.
  return 2 * (pages - free_pages) * page_size;
}

absl::Status Store::ConvertToIncremental() {
  auto log = GetLogger("coordinator");
  CMAX_ASSIGN_OR_RETURN(int64_t need, ConversionBytesNeeded());
  absl::StatusOr<int64_t> avail = free_space_ ? free_space_(dir_) : FreeBytes(dir_);
  if (!avail.ok()) {
    log->warn("retention: not converting the store to incremental vacuum now: {}; the next "
              "start tries again",
              std::string(avail.status().message()));
    return absl::OkStatus();
  }
  if (*avail < need) {
    log->warn("retention: converting the store to incremental vacuum (a one-time VACUUM) "
              "needs about {} MiB free in {} (a copy of the store's live data and its "
              "journal), {} MiB are free; skipped, the next start tries again (until then "
              "the space of dropped records is reused but the file does not shrink)",
              (need + (1 << 20) - 1) >> 20, dir_, *avail >> 20);
    return absl::OkStatus();
  }
  const int64_t t0 = MonotonicNs();
  absl::Status s = Exec("PRAGMA auto_vacuum=INCREMENTAL");
  if (s.ok()) s = Exec("VACUUM");
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("retention: converting the store to incremental vacuum "
                                     "(a one-time VACUUM) failed: ",
                                     s.message(), "; VACUUM needs about ",
                                     (need + (1 << 20) - 1) >> 20, " MiB free in ", dir_));
  }
  // The WAL now holds a copy of the store: give that space back too. BUSY
  // while the checkpointer's own pass runs (kCheckpointEveryMs): try again.
  int rc = SQLITE_BUSY;
  for (int i = 0; i < 50 && rc == SQLITE_BUSY; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  }
  if (rc != SQLITE_OK) {
    log->warn("retention: truncating the WAL after the VACUUM failed: {}; the next "
              "checkpoints reuse its space",
              sqlite3_errstr(rc));
  }
  log->info("retention: the store now returns freed space (one-time VACUUM took {} ms)",
            (MonotonicNs() - t0) / 1000000);
  return absl::OkStatus();
}

absl::Status Store::StartRetention(int64_t keep_ns, int64_t every_ns,
                                   const std::string& reports_root) {
  if (keep_ns <= 0 || every_ns <= 0) {
    return absl::InvalidArgumentError("retention needs a positive age and interval");
  }
  if (!checkpoint_db_) return absl::FailedPreconditionError("retention needs a writer store");
  CMAX_ASSIGN_OR_RETURN(int mode, AutoVacuumMode());
  if (mode != 2) CMAX_RETURN_IF_ERROR(ConvertToIncremental());
  sqlite3_busy_timeout(checkpoint_db_, 5000);
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  retention_keep_ns_ = keep_ns;
  retention_every_ns_ = every_ns;
  retention_reports_root_ = reports_root;
  retention_next_ns_ = MonotonicNs();  // the first pass at the next tick
  return absl::OkStatus();
}

Store::RetentionStats Store::retention_stats() const {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  return retention_stats_;
}

void Store::RetentionPassLocked(std::unique_lock<std::mutex>& lock) {
  if (retention_keep_ns_ <= 0 || MonotonicNs() < retention_next_ns_) return;
  retention_next_ns_ = MonotonicNs() + retention_every_ns_;
  const int64_t cutoff = NowUnixNs() - retention_keep_ns_;
  const std::string reports_root = retention_reports_root_;
  lock.unlock();
  auto pass = PruneOn(checkpoint_db_, cutoff, reports_root);
  lock.lock();
  ++retention_stats_.passes;
  retention_stats_.last_pass_unix_ns = NowUnixNs();
  if (!pass.ok()) {
    ++retention_stats_.failed_passes;
    GetLogger("coordinator")->warn("{}; the next pass retries", std::string(pass.status().message()));
    return;
  }
  retention_stats_.runs_pruned += pass->runs;
  retention_stats_.records_dropped += pass->records;
  retention_stats_.pages_freed += pass->pages_freed;
  retention_stats_.scorecards_dropped += pass->scorecards;
}

}  // namespace cmax::coordinator
