// Durable state of the coordinator in SQLite (WAL, synchronous=FULL): agents,
// runs, tasks and every record, each (task, attempt, rank, seq) stored once,
// the schedules (schedules.h) and each node's history (node_runs).
//
// Schema changes: every table is CREATE TABLE IF NOT EXISTS, so a store
// written by an older coordinator gains the tables it lacks when it is
// opened (the schedules table came that way).
//
// Thread: not thread-safe (its WAL checkpointer, below, is a thread of its
// own with its own connection). Owned by the coordinator core thread (core.h);
// cmaxctl-facing reads are posted to that thread too, except the records of
// a scorecard or an export, which the scorecard and export threads read
// through read-only connections of their own (OpenReader).
//
// Errors: RESOURCE_EXHAUSTED when the disk is full (SQLITE_FULL), INTERNAL for
// other SQLite errors, with the statement and SQLite's message. A failed
// write leaves the database as it was (every write is one transaction).
#ifndef CMAX_COORDINATOR_STORE_H_
#define CMAX_COORDINATOR_STORE_H_

#include <sqlite3.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "cmax/v1/history.pb.h"
#include "cmax/v1/incident.pb.h"
#include "cmax/v1/inventory.pb.h"
#include "cmax/v1/plan.pb.h"
#include "cmax/v1/schedule.pb.h"
#include "cmax/v1/service.pb.h"

namespace cmax::coordinator {

// A run as stored.
struct RunRow {
  v1::RunInfo info;
  v1::Plan plan;
  std::vector<std::string> nodes;  // the nodes the run selected
  bool cancel_requested = false;
};

// A task as stored: what operators see (info) and what agents get (assignment).
struct TaskRow {
  v1::TaskInfo info;
  v1::TaskAssignment assignment;   // attempt and ranks filled when assigned
  std::vector<std::string> nodes;  // one for node scope; the group for gangs
  int retries = 0;                 // new attempts allowed after a failure
  bool exclusive = true;
  // The scheduler's bookkeeping: how its run counters counted this task
  // (an outcome depends on the exit code too, which may change after).
  int8_t counted_as = 0;
};

struct AgentRow {
  std::string node;
  v1::Inventory inventory;
  std::vector<std::string> addresses;
  int64_t last_seen_ns = 0;
};

// A record to insert, with what the store needs besides the wire message.
struct RecordToStore {
  const v1::SpooledRecord* record;
  std::string run_id;
  std::string node;
  std::string suite;
  bool late = false;
};

// A stored record as its row: the ExportedRecord fields and the Record's
// wire bytes as stored. Views into SQLite's row: valid during the call only.
struct StoredRecordView {
  std::string_view task_id, node, suite;
  int attempt = 0, rank = 0;
  int64_t seq = 0;
  bool late = false;
  std::string_view record;  // a serialized v1::Record
};

class Store {
 public:
  // Opens or creates `path`. Fails when the file is not a cmax database or
  // fails SQLite's quick_check. SQLite's temporary files (the VACUUM
  // copy, large sorts) go to the directory of `path` from then on, in the
  // whole process (sqlite3_temp_directory): not to /tmp, which may be a
  // tmpfs counted against the coordinator unit's MemoryMax. Open the writer
  // store before other threads use SQLite (the coordinator does, at start).
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path);
  // A second, read-only connection to an existing store (WAL: it reads the
  // last committed state while the writer goes on). No quick_check, no
  // schema changes; only the reads below work on it. For the threads that
  // build scorecards and serve exports (core.h).
  static absl::StatusOr<std::unique_ptr<Store>> OpenReader(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  absl::Status PutAgent(const AgentRow& agent);
  // Several agents in one transaction (one fsync for a burst of Hellos).
  absl::Status PutAgents(const std::vector<AgentRow>& agents);
  absl::StatusOr<std::vector<AgentRow>> LoadAgents();

  // The meta table: one-time migrations note that they are done here.
  // GetMeta: "" when the key is absent.
  absl::StatusOr<std::string> GetMeta(const std::string& key);
  absl::Status PutMeta(const std::string& key, const std::string& value);

  absl::Status PutRun(const RunRow& run);
  absl::StatusOr<RunRow> GetRun(const std::string& run_id);  // NOT_FOUND
  // Newest first; `limit` 0 means all.
  absl::StatusOr<std::vector<RunRow>> ListRuns(int limit, bool unfinished_only);

  absl::Status PutTask(const TaskRow& task);
  // Several tasks in one transaction.
  absl::Status PutTasks(const std::vector<const TaskRow*>& tasks);
  absl::StatusOr<std::vector<TaskRow>> LoadTasks(const std::string& run_id);
  absl::StatusOr<TaskRow> GetTask(const std::string& task_id);  // NOT_FOUND

  // Schedules (schedules.h): the whole row, written on every change.
  absl::Status PutSchedule(const v1::ScheduleInfo& schedule);
  absl::Status DeleteSchedule(const std::string& schedule_id);  // OK when absent
  // Oldest first. DATA_LOSS when a row does not parse.
  absl::StatusOr<std::vector<v1::ScheduleInfo>> LoadSchedules();

  // The passive watch's records (node, epoch, seq), each stored once; in
  // the round's transaction where there is one. Loaded newest first, at
  // most `limit`; `node` empty: every node.
  struct WatchRow {
    std::string node, epoch;
    int64_t seq = 0;
    int64_t received_ns = 0;
    v1::Record record;
  };
  absl::Status PutWatchRecords(const std::string& node, const std::string& epoch,
                               const std::vector<std::pair<int64_t, const v1::Record*>>& rows,
                               int64_t received_ns);
  absl::StatusOr<std::vector<WatchRow>> LoadWatchRecords(const std::string& node, int limit);
  // Incidents of the fault loop (coordinator/remediation/incidents.h).
  absl::Status PutIncident(const v1::RemediationIncident& incident);
  absl::StatusOr<std::vector<v1::RemediationIncident>> LoadIncidents();

  // Node history (history.proto, docs/history.md): one summary per (run,
  // node), written when the run's scorecard is done, kept when records are
  // deleted. PutRunSummaries replaces the run's rows of those nodes and
  // marks the run summarized (also when `summaries` is empty), in one
  // transaction.
  // `bands`: the fleet's p10-p90 of each figure in the run (run_bands), so
  // that one node's history reads its own rows and its runs' bands only.
  struct FigureBandRow {
    std::string figure;
    double p10 = 0, p90 = 0;
  };
  absl::Status PutRunSummaries(const std::string& run_id,
                               const std::vector<v1::NodeRunSummary>& summaries,
                               int64_t now_unix_ns, const std::vector<FigureBandRow>& bands = {});
  // The stored bands of a run; empty when none were stored (a run
  // summarised before bands were kept).
  absl::StatusOr<std::vector<FigureBandRow>> LoadRunBands(const std::string& run_id);
  // One run's summaries (every node of it).
  absl::StatusOr<std::vector<v1::NodeRunSummary>> LoadRunSummaries(const std::string& run_id);
  // One node's summaries (every node's when `node` is empty), oldest first;
  // `with_peers`: every node's summaries of the runs that had `node`.
  // DATA_LOSS when a row does not parse. `stop` (may be empty) is asked
  // every 1,024 rows; CANCELLED once it says true (a history query whose
  // callers have gone, coordinator/history_pool.h).
  absl::StatusOr<std::vector<v1::NodeRunSummary>> LoadNodeRunSummaries(
      const std::string& node, bool with_peers = false,
      const std::function<bool()>& stop = {});
  // The runs PutRunSummaries has marked.
  absl::StatusOr<std::set<std::string>> SummarizedRuns();

  // Inserts in one transaction; duplicates of (task, attempt, rank, seq) are
  // ignored. Returns how many were new.
  absl::StatusOr<int> InsertRecords(const std::vector<RecordToStore>& records);
  // Several agents' batches in one transaction (group commit); how many of
  // each group were new. All or nothing.
  absl::StatusOr<std::vector<int>> InsertRecordGroups(
      const std::vector<const std::vector<RecordToStore>*>& groups);
  // Every record of a run in (task, attempt, rank, seq) order; `fn` returning
  // false stops the scan.
  absl::Status ScanRecords(const std::string& run_id,
                           const std::function<bool(const v1::ExportedRecord&)>& fn);
  // The same scan without parsing: each row's fields and the Record's
  // bytes as stored (for the scorecard, which keeps them as bytes).
  absl::Status ScanRecordRows(const std::string& run_id,
                              const std::function<bool(const StoredRecordView&)>& fn);
  // The records stored for one attempt of a task.
  absl::StatusOr<int64_t> CountRecords(const std::string& task_id, int attempt);

  // Group commit: from BeginRound to CommitRound every write above is part
  // of one transaction (the methods' own transactions become savepoints
  // inside it), so a round of the coordinator's loop costs one fsync.
  // Nothing written in a round is durable before CommitRound returns OK;
  // when it fails, nothing of the round is stored. Outside a round each
  // write is its own transaction, as before.
  absl::Status BeginRound();
  absl::Status CommitRound();
  bool in_round() const { return in_round_; }
  // Whether the last CommitRound committed writes (not an empty round).
  bool last_round_committed_writes() const { return last_round_committed_writes_; }

  // WAL checkpoints (copying committed pages from the -wal file into the
  // database) run on a thread of the store's own, through a second
  // connection, every kCheckpointEveryMs, not inside the writer's commits
  // (SQLite's default: the commit that crosses 1,000 WAL pages does it, on
  // the coordinator's core thread). PASSIVE: it never waits for or blocks
  // the writer. Checkpoints that completed; for tests and the figures.
  int64_t checkpoints_done() const;
  static constexpr int kCheckpointEveryMs = 200;

  // Retention (cmax-coordinator --keep-runs-for, store_retention.cc). A run
  // is pruned when it ended (completed, cancelled or failed) before
  // `cutoff_unix_ns` and has its scorecard (RunInfo.report_dir): it is
  // marked in pruned_runs first (GetRun then reports records_dropped, and
  // export refuses it), then its records are deleted a few tasks per
  // transaction, so the writer waits milliseconds, not the whole run; then
  // the freed pages go back to the file system (incremental vacuum). The
  // run, its tasks and its scorecard files stay, except a scheduled run's
  // (RunInfo.schedule_id): with `reports_root` given (DATA_DIR/reports),
  // its scorecard folder REPORTS_ROOT/RUN_ID is deleted too and marked in
  // pruned_reports (GetRun: scorecard_dropped_unix_ns, no report_dir). Only
  // a real directory directly under the root whose name is a valid run id
  // is deleted, links in it removed, never followed; a symbolic link in its
  // place is left alone. Runs submitted by hand keep their scorecards. A
  // pass cut short (a crash, a busy store) is finished by the next one.
  struct PrunePass {
    int runs = 0;             // runs whose records were dropped in this pass
    int64_t records = 0;      // records deleted
    int64_t pages_freed = 0;  // pages returned to the file system
    int scorecards = 0;       // scheduled runs' scorecard folders deleted
  };
  absl::StatusOr<PrunePass> PruneRecords(int64_t cutoff_unix_ns,
                                         const std::string& reports_root = "");
  // Prunes on the checkpointer's thread and connection: every `every_ns`,
  // the records of runs that ended more than `keep_ns` ago. Before
  // StartRetention the store must return freed pages: an older store (made
  // before auto_vacuum=INCREMENTAL was set on new stores) is converted once
  // by VACUUM here, which rewrites the file: it takes time, and free space
  // in the store's directory of about twice the store's live data (SQLite
  // builds the new copy in a temporary file there, see Open, and writes it
  // back through the WAL, which is truncated afterwards). The space is
  // checked first: when it is short the conversion is skipped with a
  // warning naming what it needs and what is free, retention starts all the
  // same (freed pages are reused by SQLite but the file does not shrink),
  // and the next start tries again. A VACUUM that fails returns its error.
  // `reports_root`: as for PruneRecords (empty: every scorecard stays).
  absl::Status StartRetention(int64_t keep_ns, int64_t every_ns,
                              const std::string& reports_root = "");
  // Bytes the one-time conversion needs free: 2 x the live pages.
  absl::StatusOr<int64_t> ConversionBytesNeeded();
  struct RetentionStats {
    int64_t passes = 0, failed_passes = 0;
    int64_t runs_pruned = 0, records_dropped = 0, pages_freed = 0, scorecards_dropped = 0;
    int64_t last_pass_unix_ns = 0;
  };
  RetentionStats retention_stats() const;
  // PRAGMA auto_vacuum: 0 none, 1 full, 2 incremental.
  absl::StatusOr<int> AutoVacuumMode();

  // PRAGMA integrity_check == "ok".
  absl::Status CheckIntegrity();

  // Fault injection (tests and the chaos run only): while set, GetTask and
  // InsertRecords first call `hook` with their name ("get_task",
  // "insert_records") and fail with its status when that is not OK, as a
  // busy or failing database would. Empty: no faults.
  using FaultHook = std::function<absl::Status(const std::string& op)>;
  void SetFaultHookForTesting(FaultHook hook) { fault_hook_ = std::move(hook); }
  // The free bytes StartRetention sees in the store's directory (default:
  // statvfs's f_bavail x f_frsize), for tests of a full disk.
  using FreeSpaceProbe = std::function<absl::StatusOr<int64_t>(const std::string& dir)>;
  void SetFreeSpaceProbeForTesting(FreeSpaceProbe probe) { free_space_ = std::move(probe); }

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  absl::Status StartCheckpointer(const std::string& path);
  absl::Status ConvertToIncremental();  // StartRetention's one-time VACUUM
  void CheckpointLoop();
  absl::Status Exec(const std::string& sql);
  absl::Status Error(const std::string& what, int rc);
  absl::Status PutTaskLocked(const TaskRow& task);
  absl::Status Begin();   // BEGIN IMMEDIATE, or a savepoint in a round
  absl::Status Commit();
  void Rollback();
  absl::Status EnsureRoundTxn();  // in a round: BEGIN IMMEDIATE before its first write
  bool in_round_ = false;
  bool round_txn_ = false;
  bool round_failed_ = false;
  absl::Status round_error_;  // the error that rolled the round's transaction back
  bool last_round_committed_writes_ = false;
  absl::Status Fault(const std::string& op) const {
    return fault_hook_ ? fault_hook_(op) : absl::OkStatus();
  }
  sqlite3* db_;
  std::string dir_;  // the directory of the database file (writer stores)
  FreeSpaceProbe free_space_;
  sqlite3_stmt* insert_record_ = nullptr;  // prepared once (InsertRecordGroups)
  FaultHook fault_hook_;
  // The checkpointer (writer stores only; none for OpenReader).
  sqlite3* checkpoint_db_ = nullptr;
  std::thread checkpoint_thread_;
  mutable std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  bool checkpoint_stop_ = false;    // guarded by checkpoint_mu_
  int64_t checkpoints_done_ = 0;    // guarded by checkpoint_mu_
  // Retention, on the checkpointer's thread (0: off).
  int64_t retention_keep_ns_ = 0;      // guarded by checkpoint_mu_
  int64_t retention_every_ns_ = 0;     // guarded by checkpoint_mu_
  int64_t retention_next_ns_ = 0;      // monotonic; guarded by checkpoint_mu_
  std::string retention_reports_root_; // guarded by checkpoint_mu_
  RetentionStats retention_stats_;     // guarded by checkpoint_mu_
  void RetentionPassLocked(std::unique_lock<std::mutex>& lock);
};

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_STORE_H_
