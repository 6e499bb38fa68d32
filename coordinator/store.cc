#include "coordinator/store.h"

#include <mutex>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace cmax::coordinator {
namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS agents(
  node TEXT PRIMARY KEY, inventory BLOB, addresses TEXT, last_seen_ns INTEGER);
CREATE TABLE IF NOT EXISTS runs(
  run_id TEXT PRIMARY KEY, created_ns INTEGER NOT NULL, state TEXT NOT NULL,
  info BLOB NOT NULL, plan BLOB NOT NULL, nodes TEXT NOT NULL, cancel_requested INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tasks(
  task_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, info BLOB NOT NULL, assignment BLOB NOT NULL,
  nodes TEXT NOT NULL, retries INTEGER NOT NULL, exclusive INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS tasks_by_run ON tasks(run_id);
CREATE TABLE IF NOT EXISTS records(
  task_id TEXT NOT NULL, attempt INTEGER NOT NULL, rank INTEGER NOT NULL, seq INTEGER NOT NULL,
  run_id TEXT NOT NULL, node TEXT NOT NULL, suite TEXT NOT NULL, late INTEGER NOT NULL,
  record BLOB NOT NULL,
  PRIMARY KEY(task_id, attempt, rank, seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_by_run ON records(run_id);
CREATE TABLE IF NOT EXISTS schedules(
  schedule_id TEXT PRIMARY KEY, created_ns INTEGER NOT NULL, info BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS pruned_runs(
  run_id TEXT PRIMARY KEY, pruned_ns INTEGER NOT NULL, records INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pruned_reports(run_id TEXT PRIMARY KEY, dropped_ns INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS node_runs(
  run_id TEXT NOT NULL, node TEXT NOT NULL, finished_ns INTEGER NOT NULL, summary BLOB NOT NULL,
  PRIMARY KEY(run_id, node)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS node_runs_by_node ON node_runs(node, finished_ns);
CREATE TABLE IF NOT EXISTS summarized_runs(run_id TEXT PRIMARY KEY, summarized_ns INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS run_bands(
  run_id TEXT NOT NULL, figure TEXT NOT NULL, p10 REAL NOT NULL, p90 REAL NOT NULL,
  PRIMARY KEY(run_id, figure)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS watch_records(
  node TEXT NOT NULL, epoch TEXT NOT NULL, seq INTEGER NOT NULL, received_ns INTEGER NOT NULL,
  record BLOB NOT NULL, PRIMARY KEY(node, epoch, seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS watch_records_by_time ON watch_records(node, received_ns);
CREATE TABLE IF NOT EXISTS incidents(
  incident_id TEXT PRIMARY KEY, node TEXT NOT NULL, detected_ns INTEGER NOT NULL,
  state INTEGER NOT NULL, info BLOB NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES('schema', 'cmax.v1');
)sql";

// The connection's message, and the code's text where it adds something
// ("database or disk is full" is often both).
std::string SqliteMessage(sqlite3* db, int rc) {
  std::string msg = sqlite3_errmsg(db);
  if (const std::string code = sqlite3_errstr(rc); code != msg) {
    absl::StrAppend(&msg, " (", code, ")");
  }
  return msg;
}

// RAII prepared statement.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Stmt() { sqlite3_finalize(stmt_); }
  int rc() const { return rc_; }
  sqlite3_stmt* get() { return stmt_; }
  void Text(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void Blob(int i, const std::string& s) {
    sqlite3_bind_blob(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void Int(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  std::string ColText(int i) {
    const unsigned char* p = sqlite3_column_text(stmt_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, i)) : "";
  }
  std::string ColBlob(int i) {
    const void* p = sqlite3_column_blob(stmt_, i);
    return p ? std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, i)) : "";
  }
  int64_t ColInt(int i) { return sqlite3_column_int64(stmt_, i); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

// SQLite puts a temporary file in sqlite3_temp_directory when that is set,
// else in the first usable of $SQLITE_TMPDIR, $TMPDIR, /var/tmp, /usr/tmp,
// /tmp (os_unix.c, unixTempFileDir; read each time a temporary file is
// opened). The strings pointed at stay alive for the process's life.
void PointTempFilesAt(const std::string& dir) {
  static std::mutex mu;
  static auto* dirs = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  sqlite3_temp_directory = const_cast<char*>(dirs->insert(dir).first->c_str());
}

std::vector<std::string> SplitList(const std::string& s) {
  if (s.empty()) return {};
  return absl::StrSplit(s, ',');
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::InternalError(absl::StrCat("open database ", path, ": ", msg));
  }
  std::unique_ptr<Store> store(new Store(db));
  const size_t slash = path.rfind('/');
  store->dir_ = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  PointTempFilesAt(store->dir_);
  sqlite3_busy_timeout(db, 5000);
  // A new store returns the pages retention frees (PruneRecords) to the
  // file system: auto_vacuum must be chosen before the first table exists.
  bool empty = false;
  {
    Stmt pages(db, "PRAGMA page_count");  // finalized before the next statement
    empty = pages.rc() == SQLITE_OK && sqlite3_step(pages.get()) == SQLITE_ROW &&
            pages.ColInt(0) == 0;
  }
  if (empty) CMAX_RETURN_IF_ERROR(store->Exec("PRAGMA auto_vacuum=INCREMENTAL"));
  CMAX_RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL"));
  // FULL: a commit is durable before the coordinator acknowledges records.
  CMAX_RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  CMAX_RETURN_IF_ERROR(store->Exec("PRAGMA foreign_keys=ON"));
  Stmt check(db, "PRAGMA quick_check");
  if (check.rc() != SQLITE_OK || sqlite3_step(check.get()) != SQLITE_ROW ||
      check.ColText(0) != "ok") {
    return absl::DataLossError(absl::StrCat("database ", path, " failed its quick_check: ",
                                            check.rc() == SQLITE_OK ? check.ColText(0)
                                                                    : sqlite3_errmsg(db)));
  }
  CMAX_RETURN_IF_ERROR(store->Exec(kSchema));
  // 64 MiB of page cache (SQLite's default is 2 MiB): the records table and
  // its index outgrow 2 MiB within seconds at scale, and every insert then
  // re-reads inner B-tree pages from the file (perf on a 2,000-agent run:
  // pread was 5 % of the core thread).
  CMAX_RETURN_IF_ERROR(store->Exec("PRAGMA cache_size=-65536"));
  CMAX_RETURN_IF_ERROR(store->StartCheckpointer(path));
  return store;
}

absl::Status Store::StartCheckpointer(const std::string& path) {
  int rc = sqlite3_open_v2(path.c_str(), &checkpoint_db_, SQLITE_OPEN_READWRITE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = checkpoint_db_ ? sqlite3_errmsg(checkpoint_db_) : sqlite3_errstr(rc);
    sqlite3_close(checkpoint_db_);
    checkpoint_db_ = nullptr;
    return absl::InternalError(absl::StrCat("open database ", path, " for checkpoints: ", msg));
  }
  // The checkpointer syncs the WAL before it copies and the database after
  // (synchronous=FULL), as the writer's own checkpoints did.
  char* err = nullptr;
  rc = sqlite3_exec(checkpoint_db_, "PRAGMA synchronous=FULL", nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return Error("checkpointer: PRAGMA synchronous", rc);
  // Only now the writer stops checkpointing itself.
  CMAX_RETURN_IF_ERROR(Exec("PRAGMA wal_autocheckpoint=0"));
  checkpoint_thread_ = std::thread([this] { CheckpointLoop(); });
  return absl::OkStatus();
}

void Store::CheckpointLoop() {
  int64_t warned_ns = 0;
  std::unique_lock<std::mutex> lock(checkpoint_mu_);
  for (;;) {
    checkpoint_cv_.wait_for(lock, std::chrono::milliseconds(kCheckpointEveryMs),
                            [this] { return checkpoint_stop_; });
    if (checkpoint_stop_) return;
    RetentionPassLocked(lock);
    lock.unlock();
    int log_frames = 0, done_frames = 0;
    const int rc = sqlite3_wal_checkpoint_v2(checkpoint_db_, nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                             &log_frames, &done_frames);
    lock.lock();
    if (rc == SQLITE_OK) {
      ++checkpoints_done_;
    } else if (rc != SQLITE_BUSY && MonotonicNs() - warned_ns > 60ll * 1000000000) {
      // BUSY: another checkpoint or a recovery holds the lock; the next
      // try comes in kCheckpointEveryMs. Anything else: the WAL grows until
      // it works again (nothing is lost: the WAL holds every commit).
      warned_ns = MonotonicNs();
      GetLogger("coordinator")->warn("store: WAL checkpoint failed: {}; will retry",
                                     SqliteMessage(checkpoint_db_, rc));
    }
  }
}

int64_t Store::checkpoints_done() const {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  return checkpoints_done_;
}

absl::StatusOr<std::unique_ptr<Store>> Store::OpenReader(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::InternalError(absl::StrCat("open database ", path, " read-only: ", msg));
  }
  std::unique_ptr<Store> store(new Store(db));
  sqlite3_busy_timeout(db, 5000);
  return store;
}

Store::~Store() {
  if (checkpoint_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(checkpoint_mu_);
      checkpoint_stop_ = true;
    }
    checkpoint_cv_.notify_all();
    checkpoint_thread_.join();
  }
  sqlite3_close(checkpoint_db_);
  sqlite3_finalize(insert_record_);
  // The last connection to close checkpoints the WAL into the database.
  sqlite3_close(db_);
}

absl::Status Store::Error(const std::string& what, int rc) {
  std::string msg = absl::StrCat(what, ": ", SqliteMessage(db_, rc));
  absl::Status s = (rc & 0xff) == SQLITE_FULL || (rc & 0xff) == SQLITE_IOERR
                       ? absl::ResourceExhaustedError(
                             absl::StrCat(msg, "; is the coordinator's data directory full?"))
                       : absl::InternalError(msg);
  // The error that ended the round's transaction (SQLite rolls it back on a
  // full disk) is the one CommitRound reports.
  if (in_round_ && round_txn_ && round_error_.ok() && sqlite3_get_autocommit(db_)) round_error_ = s;
  return s;
}

absl::Status Store::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : "";
    sqlite3_free(err);
    // The statement's message is the connection's (Error adds that) unless
    // it says more.
    std::string what = absl::StrCat("sql '", sql.substr(0, 60), "'");
    if (!msg.empty() && msg != sqlite3_errmsg(db_)) absl::StrAppend(&what, ": ", msg);
    return Error(what, rc);
  }
  return absl::OkStatus();
}

absl::Status Store::BeginRound() {
  if (in_round_) return absl::OkStatus();
  // The transaction itself starts with the round's first write (a round of
  // pongs writes nothing and costs no lock and no commit).
  in_round_ = true;
  round_txn_ = false;
  round_failed_ = false;
  round_error_ = absl::OkStatus();
  return absl::OkStatus();
}

absl::Status Store::EnsureRoundTxn() {
  if (!in_round_ || round_txn_) return absl::OkStatus();
  absl::Status s = Exec("BEGIN IMMEDIATE");
  if (!s.ok()) {
    round_failed_ = true;
    return s;
  }
  round_txn_ = true;
  return absl::OkStatus();
}

absl::Status Store::CommitRound() {
  if (!in_round_) return absl::OkStatus();
  in_round_ = false;
  last_round_committed_writes_ = false;
  if (!round_txn_ && !round_failed_) return absl::OkStatus();  // nothing written
  round_txn_ = false;
  // SQLite rolls a whole transaction back on some errors (SQLITE_FULL,
  // IOERR, BUSY, NOMEM): then there is nothing to commit, and what the
  // round wrote before the error is gone.
  if (round_failed_ || sqlite3_get_autocommit(db_)) {
    if (!sqlite3_get_autocommit(db_)) (void)Exec("ROLLBACK");
    // Said with the error that ended it (a full disk reads as one).
    const std::string why = "the store's transaction for this round was rolled back after an error";
    if (round_error_.ok()) return absl::InternalError(why);
    return absl::Status(round_error_.code(), absl::StrCat(why, ": ", round_error_.message()));
  }
  if (auto s = Exec("COMMIT"); !s.ok()) {
    (void)Exec("ROLLBACK");
    return s;
  }
  last_round_committed_writes_ = true;
  return absl::OkStatus();
}

absl::Status Store::Begin() {
  if (!in_round_) return Exec("BEGIN IMMEDIATE");
  CMAX_RETURN_IF_ERROR(EnsureRoundTxn());
  if (sqlite3_get_autocommit(db_)) round_failed_ = true;  // the round's transaction is gone
  absl::Status s = Exec("SAVEPOINT w");
  if (!s.ok()) round_failed_ = true;
  return s;
}

absl::Status Store::Commit() {
  if (!in_round_) return Exec("COMMIT");
  absl::Status s = Exec("RELEASE w");
  if (!s.ok()) round_failed_ = true;
  return s;
}

void Store::Rollback() {
  if (!in_round_) {
    (void)Exec("ROLLBACK");
    return;
  }
  if (!Exec("ROLLBACK TO w").ok() || !Exec("RELEASE w").ok()) round_failed_ = true;
}

absl::Status Store::PutAgent(const AgentRow& a) {
  CMAX_RETURN_IF_ERROR(EnsureRoundTxn());
  Stmt s(db_, "INSERT OR REPLACE INTO agents(node, inventory, addresses, last_seen_ns) "
              "VALUES(?,?,?,?)");
  s.Text(1, a.node);
  s.Blob(2, a.inventory.SerializeAsString());
  s.Text(3, absl::StrJoin(a.addresses, ","));
  s.Int(4, a.last_seen_ns);
  int rc = sqlite3_step(s.get());
  return rc == SQLITE_DONE ? absl::OkStatus() : Error("put agent", rc);
}

absl::Status Store::PutAgents(const std::vector<AgentRow>& agents) {
  if (agents.empty()) return absl::OkStatus();
  CMAX_RETURN_IF_ERROR(Begin());
  for (const AgentRow& a : agents) {
    if (auto s = PutAgent(a); !s.ok()) {
      Rollback();
      return s;
    }
  }
  if (auto s = Commit(); !s.ok()) {
    Rollback();
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<AgentRow>> Store::LoadAgents() {
  Stmt s(db_, "SELECT node, inventory, addresses, last_seen_ns FROM agents ORDER BY node");
  std::vector<AgentRow> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    AgentRow a;
    a.node = s.ColText(0);
    a.inventory.ParseFromString(s.ColBlob(1));
    a.addresses = SplitList(s.ColText(2));
    a.last_seen_ns = s.ColInt(3);
    out.push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) return Error("load agents", rc);
  return out;
}

absl::StatusOr<std::string> Store::GetMeta(const std::string& key) {
  Stmt s(db_, "SELECT value FROM meta WHERE key = ?");
  s.Text(1, key);
  int rc = sqlite3_step(s.get());
  if (rc == SQLITE_DONE) return std::string();
  if (rc != SQLITE_ROW) return Error("get meta", rc);
  return std::string(s.ColText(0));
}

absl::Status Store::PutMeta(const std::string& key, const std::string& value) {
  CMAX_RETURN_IF_ERROR(EnsureRoundTxn());
  Stmt s(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?,?)");
  s.Text(1, key);
  s.Text(2, value);
  int rc = sqlite3_step(s.get());
  return rc == SQLITE_DONE ? absl::OkStatus() : Error("put meta", rc);
}

absl::Status Store::PutRun(const RunRow& r) {
  CMAX_RETURN_IF_ERROR(EnsureRoundTxn());
  Stmt s(db_, "INSERT OR REPLACE INTO runs(run_id, created_ns, state, info, plan, nodes, "
              "cancel_requested) VALUES(?,?,?,?,?,?,?)");
  s.Text(1, r.info.run_id());
  s.Int(2, r.info.created_unix_ns());
  s.Text(3, r.info.state());
  s.Blob(4, r.info.SerializeAsString());
  s.Blob(5, r.plan.SerializeAsString());
  s.Text(6, absl::StrJoin(r.nodes, ","));
  s.Int(7, r.cancel_requested ? 1 : 0);
  int rc = sqlite3_step(s.get());
  return rc == SQLITE_DONE ? absl::OkStatus() : Error("put run", rc);
}

namespace {
RunRow ReadRun(Stmt& s) {
  RunRow r;
  r.info.ParseFromString(s.ColBlob(0));
  r.plan.ParseFromString(s.ColBlob(1));
  r.nodes = SplitList(s.ColText(2));
  r.cancel_requested = s.ColInt(3) != 0;
  r.info.set_records_dropped_unix_ns(s.ColInt(4));
  // A scheduled run's scorecard folder that retention deleted: no folder.
  if (const int64_t dropped = s.ColInt(5); dropped > 0) {
    r.info.set_scorecard_dropped_unix_ns(dropped);
    r.info.clear_report_dir();
  }
  return r;
}

constexpr char kSelectRun[] =
    "SELECT runs.info, runs.plan, runs.nodes, runs.cancel_requested, "
    "COALESCE(pruned_runs.pruned_ns, 0), COALESCE(pruned_reports.dropped_ns, 0) FROM runs "
    "LEFT JOIN pruned_runs USING(run_id) LEFT JOIN pruned_reports USING(run_id)";
}  // namespace

absl::StatusOr<RunRow> Store::GetRun(const std::string& run_id) {
  Stmt s(db_, absl::StrCat(kSelectRun, " WHERE run_id = ?").c_str());
  s.Text(1, run_id);
  int rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) return ReadRun(s);
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("no run '", run_id, "'"));
  return Error("get run", rc);
}

absl::StatusOr<std::vector<RunRow>> Store::ListRuns(int limit, bool unfinished_only) {
  std::string sql = kSelectRun;
  if (unfinished_only) sql += " WHERE runs.state IN ('pending', 'running')";
  sql += " ORDER BY runs.created_ns DESC";
  if (limit > 0) absl::StrAppend(&sql, " LIMIT ", limit);
  Stmt s(db_, sql.c_str());
  std::vector<RunRow> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out.push_back(ReadRun(s));
  if (rc != SQLITE_DONE) return Error("list runs", rc);
  return out;
}

absl::Status Store::PutTaskLocked(const TaskRow& t) {
  Stmt s(db_, "INSERT OR REPLACE INTO tasks(task_id, run_id, info, assignment, nodes, retries, "
              "exclusive) VALUES(?,?,?,?,?,?,?)");
  s.Text(1, t.info.task_id());
  s.Text(2, t.info.run_id());
  s.Blob(3, t.info.SerializeAsString());
  s.Blob(4, t.assignment.SerializeAsString());
  s.Text(5, absl::StrJoin(t.nodes, ","));
  s.Int(6, t.retries);
  s.Int(7, t.exclusive ? 1 : 0);
  int rc = sqlite3_step(s.get());
  return rc == SQLITE_DONE ? absl::OkStatus() : Error("put task", rc);
}

absl::Status Store::PutTask(const TaskRow& t) { return PutTaskLocked(t); }

absl::Status Store::PutTasks(const std::vector<const TaskRow*>& tasks) {
  CMAX_RETURN_IF_ERROR(Begin());
  for (const TaskRow* t : tasks) {
    if (auto s = PutTaskLocked(*t); !s.ok()) {
      Rollback();
      return s;
    }
  }
  if (auto s = Commit(); !s.ok()) {
    Rollback();
    return s;
  }
  return absl::OkStatus();
}

namespace {
TaskRow ReadTask(Stmt& s) {
  TaskRow t;
  t.info.ParseFromString(s.ColBlob(0));
  t.assignment.ParseFromString(s.ColBlob(1));
  t.nodes = SplitList(s.ColText(2));
  t.retries = static_cast<int>(s.ColInt(3));
  t.exclusive = s.ColInt(4) != 0;
  return t;
}
}  // namespace

absl::StatusOr<TaskRow> Store::GetTask(const std::string& task_id) {
  CMAX_RETURN_IF_ERROR(Fault("get_task"));
  Stmt s(db_, "SELECT info, assignment, nodes, retries, exclusive FROM tasks WHERE task_id = ?");
  s.Text(1, task_id);
  int rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) return ReadTask(s);
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("no task '", task_id, "'"));
  return Error("get task", rc);
}

absl::StatusOr<std::vector<TaskRow>> Store::LoadTasks(const std::string& run_id) {
  Stmt s(db_, "SELECT info, assignment, nodes, retries, exclusive FROM tasks WHERE run_id = ?");
  s.Text(1, run_id);
  std::vector<TaskRow> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out.push_back(ReadTask(s));
  if (rc != SQLITE_DONE) return Error("load tasks", rc);
  std::sort(out.begin(), out.end(), [](const TaskRow& a, const TaskRow& b) {
    return a.info.task_id() < b.info.task_id();
  });
  return out;
}

absl::Status Store::PutSchedule(const v1::ScheduleInfo& schedule) {
  CMAX_RETURN_IF_ERROR(EnsureRoundTxn());
  Stmt s(db_, "INSERT OR REPLACE INTO schedules(schedule_id, created_ns, info) VALUES(?,?,?)");
  s.Text(1, schedule.schedule_id());
  s.Int(2, schedule.created_unix_ns());
  s.Blob(3, schedule.SerializeAsString());
  int rc = sqlite3_step(s.get());
  return rc == SQLITE_DONE ? absl::OkStatus() : Error("put schedule", rc);
}

absl::Status Store::DeleteSchedule(const std::string& schedule_id) {
  CMAX_RETURN_IF_ERROR(EnsureRoundTxn());
  Stmt s(db_, "DELETE FROM schedules WHERE schedule_id = ?");
  s.Text(1, schedule_id);
  int rc = sqlite3_step(s.get());
  return rc == SQLITE_DONE ? absl::OkStatus() : Error("delete schedule", rc);
}

absl::StatusOr<std::vector<v1::ScheduleInfo>> Store::LoadSchedules() {
  Stmt s(db_, "SELECT info FROM schedules ORDER BY created_ns, schedule_id");
  std::vector<v1::ScheduleInfo> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    v1::ScheduleInfo info;
    if (!info.ParseFromString(s.ColBlob(0))) {
      return absl::DataLossError("load schedules: a stored schedule does not parse");
    }
    out.push_back(std::move(info));
  }
  if (rc != SQLITE_DONE) return Error("load schedules", rc);
  return out;
}

absl::Status Store::PutWatchRecords(const std::string& node, const std::string& epoch,
                                    const std::vector<std::pair<int64_t, const v1::Record*>>& rows,
                                    int64_t received_ns) {
  CMAX_RETURN_IF_ERROR(EnsureRoundTxn());
  Stmt s(db_, "INSERT OR IGNORE INTO watch_records(node, epoch, seq, received_ns, record) "
              "VALUES(?,?,?,?,?)");
  for (const auto& [seq, record] : rows) {
    sqlite3_reset(s.get());
    s.Text(1, node);
    s.Text(2, epoch);
    s.Int(3, seq);
    s.Int(4, received_ns);
    s.Blob(5, record->SerializeAsString());
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) return Error("put watch record", rc);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Store::WatchRow>> Store::LoadWatchRecords(const std::string& node,
                                                                     int limit) {
  Stmt s(db_, "SELECT node, epoch, seq, received_ns, record FROM watch_records "
              "WHERE ? = '' OR node = ? ORDER BY received_ns DESC, seq DESC LIMIT ?");
  s.Text(1, node);
  s.Text(2, node);
  s.Int(3, limit);
  std::vector<WatchRow> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    WatchRow row{s.ColText(0), s.ColText(1), s.ColInt(2), s.ColInt(3), {}};
    if (!row.record.ParseFromString(s.ColBlob(4))) {
      return absl::DataLossError("load watch records: a stored record does not parse");
    }
    out.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return Error("load watch records", rc);
  return out;
}

absl::Status Store::PutIncident(const v1::RemediationIncident& incident) {
  CMAX_RETURN_IF_ERROR(EnsureRoundTxn());
  Stmt s(db_, "INSERT OR REPLACE INTO incidents(incident_id, node, detected_ns, state, info) "
              "VALUES(?,?,?,?,?)");
  s.Text(1, incident.incident_id());
  s.Text(2, incident.node());
  s.Int(3, incident.detected_unix_ns());
  s.Int(4, incident.state());
  s.Blob(5, incident.SerializeAsString());
  int rc = sqlite3_step(s.get());
  return rc == SQLITE_DONE ? absl::OkStatus() : Error("put incident", rc);
}

absl::StatusOr<std::vector<v1::RemediationIncident>> Store::LoadIncidents() {
  Stmt s(db_, "SELECT info FROM incidents ORDER BY detected_ns, incident_id");
  std::vector<v1::RemediationIncident> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    v1::RemediationIncident inc;
    if (!inc.ParseFromString(s.ColBlob(0))) {
      return absl::DataLossError("load incidents: a stored incident does not parse");
    }
    out.push_back(std::move(inc));
  }
  if (rc != SQLITE_DONE) return Error("load incidents", rc);
  return out;
}

absl::Status Store::PutRunSummaries(const std::string& run_id,
                                    const std::vector<v1::NodeRunSummary>& summaries,
                                    int64_t now_unix_ns,
                                    const std::vector<FigureBandRow>& bands) {
  CMAX_RETURN_IF_ERROR(Begin());
  {
    Stmt b(db_, "INSERT OR REPLACE INTO run_bands(run_id, figure, p10, p90) VALUES(?,?,?,?)");
    for (const auto& band : bands) {
      sqlite3_reset(b.get());
      b.Text(1, run_id);
      b.Text(2, band.figure);
      sqlite3_bind_double(b.get(), 3, band.p10);
      sqlite3_bind_double(b.get(), 4, band.p90);
      if (int rc = sqlite3_step(b.get()); rc != SQLITE_DONE) {
        Rollback();
        return Error("put run band", rc);
      }
    }
    Stmt s(db_,
           "INSERT OR REPLACE INTO node_runs(run_id, node, finished_ns, summary) "
           "VALUES(?,?,?,?)");
    for (const auto& summary : summaries) {
      sqlite3_reset(s.get());
      s.Text(1, run_id);
      s.Text(2, summary.node());
      s.Int(3, summary.finished_unix_ns());
      s.Blob(4, summary.SerializeAsString());
      if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) {
        Rollback();
        return Error("put node run summary", rc);
      }
    }
    Stmt m(db_,
           "INSERT OR REPLACE INTO summarized_runs(run_id, summarized_ns) VALUES(?,?)");
    m.Text(1, run_id);
    m.Int(2, now_unix_ns);
    if (int rc = sqlite3_step(m.get()); rc != SQLITE_DONE) {
      Rollback();
      return Error("mark run summarized", rc);
    }
  }
  return Commit();
}

absl::StatusOr<std::vector<v1::NodeRunSummary>> Store::LoadNodeRunSummaries(
    const std::string& node, bool with_peers, const std::function<bool()>& stop) {
  Stmt s(db_, node.empty()
                  ? "SELECT summary FROM node_runs ORDER BY finished_ns, run_id, node"
              : with_peers ? "SELECT summary FROM node_runs WHERE run_id IN "
                             "(SELECT run_id FROM node_runs WHERE node = ?) "
                             "ORDER BY finished_ns, run_id, node"
                           : "SELECT summary FROM node_runs WHERE node = ? "
                             "ORDER BY finished_ns, run_id");
  if (!node.empty()) s.Text(1, node);
  std::vector<v1::NodeRunSummary> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    v1::NodeRunSummary summary;
    if (!summary.ParseFromString(s.ColBlob(0))) {
      return absl::DataLossError("load node history: a stored summary does not parse");
    }
    out.push_back(std::move(summary));
    if ((out.size() & 1023) == 0 && stop && stop()) {
      return absl::CancelledError("load node history: stopped (nobody waits for it)");
    }
  }
  if (rc != SQLITE_DONE) return Error("load node history", rc);
  return out;
}

absl::StatusOr<std::vector<Store::FigureBandRow>> Store::LoadRunBands(const std::string& run_id) {
  Stmt s(db_, "SELECT figure, p10, p90 FROM run_bands WHERE run_id = ?");
  s.Text(1, run_id);
  std::vector<FigureBandRow> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    out.push_back({s.ColText(0), sqlite3_column_double(s.get(), 1),
                   sqlite3_column_double(s.get(), 2)});
  }
  if (rc != SQLITE_DONE) return Error("load run bands", rc);
  return out;
}

absl::StatusOr<std::vector<v1::NodeRunSummary>> Store::LoadRunSummaries(
    const std::string& run_id) {
  Stmt s(db_, "SELECT summary FROM node_runs WHERE run_id = ?");
  s.Text(1, run_id);
  std::vector<v1::NodeRunSummary> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    v1::NodeRunSummary summary;
    if (!summary.ParseFromString(s.ColBlob(0))) {
      return absl::DataLossError("load run history: a stored summary does not parse");
    }
    out.push_back(std::move(summary));
  }
  if (rc != SQLITE_DONE) return Error("load run history", rc);
  return out;
}

absl::StatusOr<std::set<std::string>> Store::SummarizedRuns() {
  Stmt s(db_, "SELECT run_id FROM summarized_runs");
  std::set<std::string> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out.insert(s.ColText(0));
  if (rc != SQLITE_DONE) return Error("load summarized runs", rc);
  return out;
}

absl::StatusOr<int> Store::InsertRecords(const std::vector<RecordToStore>& records) {
  if (records.empty()) return 0;
  CMAX_ASSIGN_OR_RETURN(std::vector<int> added, InsertRecordGroups({&records}));
  return added.front();
}

absl::StatusOr<std::vector<int>> Store::InsertRecordGroups(
    const std::vector<const std::vector<RecordToStore>*>& groups) {
  std::vector<int> added(groups.size(), 0);
  size_t total = 0;
  for (const auto* g : groups) total += g->size();
  if (total == 0) return added;
  CMAX_RETURN_IF_ERROR(Fault("insert_records"));
  if (insert_record_ == nullptr) {
    int rc = sqlite3_prepare_v2(
        db_,
        "INSERT OR IGNORE INTO records(task_id, attempt, rank, seq, run_id, node, suite, late, "
        "record) VALUES(?,?,?,?,?,?,?,?,?)",
        -1, &insert_record_, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(insert_record_);
      insert_record_ = nullptr;
      return Error("prepare insert record", rc);
    }
  }
  CMAX_RETURN_IF_ERROR(Begin());
  sqlite3_stmt* s = insert_record_;
  // SQLITE_STATIC: every bound value outlives the sqlite3_step it is bound
  // for (the records, their rows and `blob` are not touched before the
  // next reset).
  auto text = [s](int i, const std::string& v) {
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  };
  std::string blob;
  // Reset and unbound on every way out: no pointer into this call's data
  // stays bound, and a failed step leaves no statement half-run.
  struct Unbind {
    sqlite3_stmt* s;
    ~Unbind() {
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
    }
  } unbind{s};
  for (size_t g = 0; g < groups.size(); ++g) {
    for (const auto& r : *groups[g]) {
      sqlite3_reset(s);
      text(1, r.record->task_id());
      sqlite3_bind_int64(s, 2, r.record->attempt());
      sqlite3_bind_int64(s, 3, r.record->rank());
      sqlite3_bind_int64(s, 4, r.record->seq());
      text(5, r.run_id);
      text(6, r.node);
      text(7, r.suite);
      sqlite3_bind_int64(s, 8, r.late ? 1 : 0);
      blob.clear();
      r.record->record().SerializeToString(&blob);
      sqlite3_bind_blob(s, 9, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
      int rc = sqlite3_step(s);
      if (rc != SQLITE_DONE) {
        absl::Status st = Error("insert record", rc);
        sqlite3_reset(s);
        Rollback();
        return st;
      }
      added[g] += sqlite3_changes(db_);
    }
  }
  if (auto st = Commit(); !st.ok()) {
    Rollback();
    return st;
  }
  return added;
}

absl::Status Store::ScanRecords(const std::string& run_id,
                                const std::function<bool(const v1::ExportedRecord&)>& fn) {
  Stmt s(db_, "SELECT task_id, attempt, rank, seq, node, suite, late, record FROM records "
              "WHERE run_id = ? ORDER BY task_id, attempt, rank, seq");
  s.Text(1, run_id);
  int rc;
  v1::ExportedRecord r;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    r.Clear();
    r.set_task_id(s.ColText(0));
    r.set_attempt(static_cast<int>(s.ColInt(1)));
    r.set_rank(static_cast<int>(s.ColInt(2)));
    r.set_seq(s.ColInt(3));
    r.set_node(s.ColText(4));
    r.set_suite(s.ColText(5));
    r.set_late(s.ColInt(6) != 0);
    r.mutable_record()->ParseFromString(s.ColBlob(7));
    if (!fn(r)) return absl::OkStatus();
  }
  if (rc != SQLITE_DONE) return Error("scan records", rc);
  return absl::OkStatus();
}

absl::Status Store::ScanRecordRows(const std::string& run_id,
                                   const std::function<bool(const StoredRecordView&)>& fn) {
  Stmt s(db_, "SELECT task_id, attempt, rank, seq, node, suite, late, record FROM records "
              "WHERE run_id = ? ORDER BY task_id, attempt, rank, seq");
  s.Text(1, run_id);
  auto view = [&s](int i) {
    // sqlite3_column_blob before sqlite3_column_bytes (SQLite's rule for a
    // pointer that stays valid).
    const void* p = sqlite3_column_blob(s.get(), i);
    return std::string_view(p ? static_cast<const char*>(p) : "",
                            static_cast<size_t>(sqlite3_column_bytes(s.get(), i)));
  };
  int rc;
  StoredRecordView r;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    r.task_id = view(0);
    r.attempt = static_cast<int>(s.ColInt(1));
    r.rank = static_cast<int>(s.ColInt(2));
    r.seq = s.ColInt(3);
    r.node = view(4);
    r.suite = view(5);
    r.late = s.ColInt(6) != 0;
    r.record = view(7);
    if (!fn(r)) return absl::OkStatus();
  }
  if (rc != SQLITE_DONE) return Error("scan records", rc);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Store::CountRecords(const std::string& task_id, int attempt) {
  Stmt s(db_, "SELECT COUNT(*) FROM records WHERE task_id = ? AND attempt = ?");
  s.Text(1, task_id);
  s.Int(2, attempt);
  int rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) return Error("count records", rc);
  return s.ColInt(0);
}

absl::Status Store::CheckIntegrity() {
  Stmt s(db_, "PRAGMA integrity_check");
  int rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) return Error("integrity_check", rc);
  std::string result = s.ColText(0);
  if (result != "ok") return absl::DataLossError(absl::StrCat("integrity_check: ", result));
  return absl::OkStatus();
}

}  // namespace cmax::coordinator
