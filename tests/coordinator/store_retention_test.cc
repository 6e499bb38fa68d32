// Retention (cmax-coordinator --keep-runs-for): the records of runs that
// ended before the cutoff are dropped, the space goes back to the file
// system, and everything else stays; export of a pruned run says so.
#include <sqlite3.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "spdlog/sinks/ostream_sink.h"

#include "common/time_util.h"
#include "coordinator/core.h"
#include "coordinator/store.h"
#include "tests/scratch_dir.h"

namespace cmax::coordinator {
namespace {

constexpr int64_t kHourNs = 3600ll * 1000000000;

int64_t FileSize(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  return f ? static_cast<int64_t>(f.tellg()) : int64_t{-1};
}

// A run with `tasks` tasks of `per_task` records of about 300 bytes each.
// finished_ns 0: still running.
void SeedRun(Store& store, const std::string& run_id, int64_t finished_ns, bool scorecard,
             int tasks, int per_task, size_t record_bytes = 300) {
  RunRow run;
  run.info.set_run_id(run_id);
  run.info.set_state(finished_ns > 0 ? "completed" : "running");
  run.info.set_created_unix_ns(finished_ns > 0 ? finished_ns - kHourNs : NowUnixNs());
  run.info.set_finished_unix_ns(finished_ns);
  if (scorecard) run.info.set_report_dir("/var/lib/cmax/reports/" + run_id);
  REQUIRE(store.PutRun(run).ok());
  std::vector<TaskRow> rows(tasks);
  std::vector<const TaskRow*> ptrs;
  std::vector<v1::SpooledRecord> recs;
  recs.reserve(static_cast<size_t>(tasks) * per_task);
  for (int t = 0; t < tasks; ++t) {
    const std::string node = "n" + std::to_string(t);
    rows[t].info.set_task_id(run_id + ".0." + node);
    rows[t].info.set_run_id(run_id);
    rows[t].info.set_state(v1::TASK_COMPLETED);
    rows[t].nodes = {node};
    ptrs.push_back(&rows[t]);
    for (int i = 0; i < per_task; ++i) {
      v1::SpooledRecord r;
      r.set_task_id(rows[t].info.task_id());
      r.set_seq(i);
      r.mutable_record()->mutable_measurement()->set_metric(std::string(record_bytes, 'm'));
      recs.push_back(std::move(r));
    }
  }
  REQUIRE(store.PutTasks(ptrs).ok());
  std::vector<RecordToStore> to_store;
  for (const auto& r : recs) {
    to_store.push_back({&r, run_id, r.task_id().substr(r.task_id().rfind('.') + 1), "gemm", false});
  }
  REQUIRE(store.InsertRecords(to_store).ok());
}

// Makes run `run_id` one started by schedule `schedule_id`, its scorecard
// in `reports`/RUN_ID.
void MarkScheduled(Store& store, const std::string& run_id, const std::string& schedule_id,
                   const std::string& reports) {
  auto run = store.GetRun(run_id);
  REQUIRE(run.ok());
  run->info.set_schedule_id(schedule_id);
  run->info.set_report_dir(reports + "/" + run_id);
  REQUIRE(store.PutRun(*run).ok());
}

// A scorecard folder as the coordinator writes one.
void WriteScorecard(const std::string& reports, const std::string& run_id) {
  const std::string dir = reports + "/" + run_id;
  REQUIRE(mkdir(dir.c_str(), 0750) == 0);
  for (const char* ext : {"json", "md", "html"}) {
    std::ofstream(dir + "/scorecard." + ext) << "{\"run_id\": \"" << run_id << "\"}";
  }
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

int64_t CountRunRecords(Store& store, const std::string& run_id) {
  int64_t n = 0;
  REQUIRE(store
              .ScanRecordRows(run_id,
                              [&](const StoredRecordView&) {
                                ++n;
                                return true;
                              })
              .ok());
  return n;
}

}  // namespace

TEST_CASE("retention drops the records of runs that ended before the cutoff and keeps the rest",
          "[store][retention]") {
  cmax::testing::ScratchDir scratch;
  const std::string db = scratch.path + "/cmax.db";
  const int64_t now = NowUnixNs();
  {
    auto store = Store::Open(db);
    INFO(store.status().ToString());
    REQUIRE(store.ok());
    // A new store returns freed pages (auto_vacuum=INCREMENTAL).
    CHECK(*(*store)->AutoVacuumMode() == 2);
    SeedRun(**store, "old", now - 48 * kHourNs, true, 20, 200);          // pruned
    SeedRun(**store, "old-no-card", now - 48 * kHourNs, false, 2, 50);   // no scorecard: kept
    SeedRun(**store, "recent", now - kHourNs / 2, true, 2, 50);          // after the cutoff
    SeedRun(**store, "running", 0, false, 2, 50);                        // not ended
  }
  const int64_t full = FileSize(db);  // after the close's checkpoint
  {
    auto store = Store::Open(db);
    REQUIRE(store.ok());
    auto pass = (*store)->PruneRecords(now - kHourNs);
    REQUIRE(pass.ok());
    CHECK(pass->runs == 1);
    CHECK(pass->records == 20 * 200);
    CHECK(pass->pages_freed > 0);
    CHECK(CountRunRecords(**store, "old") == 0);
    CHECK(CountRunRecords(**store, "old-no-card") == 100);
    CHECK(CountRunRecords(**store, "recent") == 100);
    CHECK(CountRunRecords(**store, "running") == 100);
    // The run and its tasks stay, marked.
    auto old = (*store)->GetRun("old");
    REQUIRE(old.ok());
    CHECK(old->info.records_dropped_unix_ns() >= now);
    CHECK(old->info.report_dir() == "/var/lib/cmax/reports/old");
    auto tasks = (*store)->LoadTasks("old");
    REQUIRE(tasks.ok());
    CHECK(tasks->size() == 20);
    auto recent = (*store)->GetRun("recent");
    REQUIRE(recent.ok());
    CHECK(recent->info.records_dropped_unix_ns() == 0);
    auto listed = (*store)->ListRuns(0, false);
    REQUIRE(listed.ok());
    int marked = 0;
    for (const auto& r : *listed) marked += r.info.records_dropped_unix_ns() > 0;
    CHECK(marked == 1);
    // A second pass finds nothing to do.
    auto again = (*store)->PruneRecords(now - kHourNs);
    REQUIRE(again.ok());
    CHECK(again->runs == 0);
    CHECK((*store)->CheckIntegrity().ok());
  }
  // 4,000 records of > 300 bytes left the file.
  const int64_t after = FileSize(db);
  INFO("cmax.db " << full << " -> " << after << " bytes");
  CHECK(after < full - 4000 * 300);
}

TEST_CASE("retention converts an older store once so that freed space is returned",
          "[store][retention]") {
  cmax::testing::ScratchDir scratch;
  const std::string db = scratch.path + "/cmax.db";
  {
    // As a coordinator before retention made it: auto_vacuum none.
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "PRAGMA auto_vacuum=NONE; CREATE TABLE meta(key TEXT PRIMARY KEY, "
                              "value TEXT NOT NULL)",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
  }
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  CHECK(*(*store)->AutoVacuumMode() == 0);
  SeedRun(**store, "old", NowUnixNs() - 48 * kHourNs, true, 4, 100);
  REQUIRE((*store)->StartRetention(kHourNs, kHourNs).ok());
  CHECK(*(*store)->AutoVacuumMode() == 2);
  CHECK(CountRunRecords(**store, "old") == 400);  // the VACUUM kept everything
  CHECK((*store)->CheckIntegrity().ok());
}

// An older store: auto_vacuum none, as a coordinator before retention made it.
void MakeOldStore(const std::string& db) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw, "PRAGMA auto_vacuum=NONE; CREATE TABLE meta(key TEXT PRIMARY KEY, "
                            "value TEXT NOT NULL)",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);
}

// What the "coordinator" logger writes while it lives.
struct LogCapture {
  LogCapture() : sink(std::make_shared<spdlog::sinks::ostream_sink_mt>(out)) {
    GetLogger("coordinator")->sinks().push_back(sink);
  }
  ~LogCapture() {
    auto& sinks = GetLogger("coordinator")->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
  }
  std::ostringstream out;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink;
};

TEST_CASE("the one-time VACUUM writes its copy in the data directory, not /tmp, and gives "
          "the WAL back",
          "[store][retention]") {
  cmax::testing::ScratchDir scratch;
  const std::string db = scratch.path + "/cmax.db";
  MakeOldStore(db);
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  // 77 MB of records of a run that ended now (retention keeps them): more
  // than the 64 MiB page cache that VACUUM's copy holds in memory before it
  // spills to its temporary file (vacuum.c gives the copy the store's
  // cache_size, store.cc).
  SeedRun(**store, "recent", NowUnixNs(), true, 8, 320, 30000);
  // Every file created in the data directory while the conversion runs.
  const int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  REQUIRE(ino >= 0);
  REQUIRE(inotify_add_watch(ino, scratch.path.c_str(), IN_CREATE) >= 0);
  REQUIRE((*store)->StartRetention(kHourNs, kHourNs).ok());
  std::vector<std::string> created;
  alignas(inotify_event) char buf[16384];
  for (ssize_t n; (n = read(ino, buf, sizeof(buf))) > 0;) {
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      if (ev->len > 0) created.emplace_back(ev->name);
      p += sizeof(inotify_event) + ev->len;
    }
  }
  close(ino);
  CHECK(*(*store)->AutoVacuumMode() == 2);
  // SQLite names its temporary files etilqs_* (os_unix.c, SQLITE_TEMP_FILE_PREFIX).
  INFO("created in the data directory: " << absl::StrJoin(created, " "));
  CHECK(std::any_of(created.begin(), created.end(),
                    [](const std::string& f) { return f.rfind("etilqs_", 0) == 0; }));
  // The VACUUM wrote the whole store through the WAL; it is truncated after.
  CHECK(FileSize(db + "-wal") < 64 * 1024);
  CHECK(CountRunRecords(**store, "recent") == 8 * 320);
  CHECK(std::string(sqlite3_temp_directory) == scratch.path);
  CHECK((*store)->CheckIntegrity().ok());
}

TEST_CASE("without the free space it needs the conversion is skipped, said, and done at the "
          "next start",
          "[store][retention]") {
  cmax::testing::ScratchDir scratch;
  const std::string db = scratch.path + "/cmax.db";
  MakeOldStore(db);
  int64_t need = 0;
  {
    auto store = Store::Open(db);
    REQUIRE(store.ok());
    SeedRun(**store, "old", NowUnixNs() - 48 * kHourNs, true, 8, 500);
    auto needed = (*store)->ConversionBytesNeeded();
    REQUIRE(needed.ok());
    need = *needed;
    // Two copies of about 1.2 MB of live data.
    CHECK(need > 2 * 4000 * 300);
    std::string dir_seen;
    (*store)->SetFreeSpaceProbeForTesting(
        [&](const std::string& dir) -> absl::StatusOr<int64_t> {
          dir_seen = dir;
          return need - 1;
        });
    LogCapture log;
    // Retention starts all the same; the file keeps its old mode.
    REQUIRE((*store)->StartRetention(kHourNs, kHourNs).ok());
    CHECK(dir_seen == scratch.path);
    CHECK(*(*store)->AutoVacuumMode() == 0);
    const std::string said = log.out.str();
    INFO(said);
    CHECK(said.find(absl::StrCat("needs about ", (need + (1 << 20) - 1) >> 20, " MiB free in ",
                                 scratch.path)) != std::string::npos);
    CHECK(said.find("the next start tries again") != std::string::npos);
    // Retention runs on the unconverted store: its pass drops the old run.
    for (int i = 0; i < 100 && (*store)->retention_stats().runs_pruned == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK((*store)->retention_stats().runs_pruned == 1);
    CHECK(CountRunRecords(**store, "old") == 0);
  }
  // The next start, with the space: converted.
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  REQUIRE((*store)->StartRetention(kHourNs, kHourNs).ok());
  CHECK(*(*store)->AutoVacuumMode() == 2);
  CHECK((*store)->CheckIntegrity().ok());
}

TEST_CASE("the coordinator prunes on the store's thread and export says the records are gone",
          "[core][retention]") {
  cmax::testing::ScratchDir scratch;  // removed after the core closes its store
  const std::string& dir = scratch.path;
  {
    auto store = Store::Open(dir + "/cmax.db");
    REQUIRE(store.ok());
    SeedRun(**store, "r-old", NowUnixNs() - 3 * kHourNs, true, 3, 10);
    SeedRun(**store, "r-new", NowUnixNs(), true, 3, 10);
  }
  CoreOptions o;
  o.data_dir = dir;
  o.keep_runs_for_ns = kHourNs;
  o.retention_every_ns = 50 * 1000000;
  auto core = CoordinatorCore::Create(o);
  REQUIRE(core.ok());
  // The core is not started: its store's own thread prunes all the same.
  absl::StatusOr<v1::GetRunResponse> run = absl::UnknownError("not asked");
  for (int i = 0; i < 200; ++i) {
    run = (*core)->HandleGetRun("r-old");
    REQUIRE(run.ok());
    if (run->run().records_dropped_unix_ns() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(run->run().records_dropped_unix_ns() > 0);
  CHECK(run->tasks_size() == 3);
  int calls = 0;
  (*core)->HandleExport("r-old", [&](absl::StatusOr<std::vector<v1::ExportedRecord>> records) {
    ++calls;
    REQUIRE(absl::IsFailedPrecondition(records.status()));
    CHECK_THAT(std::string(records.status().message()),
               Catch::Contains("records were dropped") && Catch::Contains("--keep-runs-for") &&
                   Catch::Contains("cmaxctl report r-old"));
  });
  (*core)->HandleExport("r-new", [&](absl::StatusOr<std::vector<v1::ExportedRecord>> records) {
    ++calls;
    REQUIRE(records.ok());
    CHECK(records->size() == 30);
  });
  CHECK(calls == 2);
  // The metrics say what retention did, once the pass has ended (the run
  // reads as dropped from the pass's first transaction on).
  (*core)->Start();
  std::string metrics;
  for (int i = 0; i < 200; ++i) {
    auto rendered = (*core)->RenderMetrics(absl::Seconds(10));
    REQUIRE(rendered.ok());
    metrics = *rendered;
    if (metrics.find("cmax_store_retention_passes_total{outcome=\"ok\"} 0") == std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  (*core)->Stop();
  CHECK_THAT(metrics, Catch::Contains("cmax_store_retention_runs_pruned_total 1"));
  CHECK_THAT(metrics, Catch::Contains("cmax_store_retention_records_dropped_total 30"));
}

TEST_CASE("retention drops the scorecard folders of scheduled runs beyond the window, "
          "never a hand-submitted run's, never through a link",
          "[store][retention]") {
  cmax::testing::ScratchDir scratch;
  const std::string reports = scratch.path + "/reports";
  const std::string outside = scratch.path + "/outside";
  REQUIRE(mkdir(reports.c_str(), 0750) == 0);
  REQUIRE(mkdir(outside.c_str(), 0750) == 0);
  std::ofstream(outside + "/keep.txt") << "not the coordinator's";
  const int64_t now = NowUnixNs();
  auto store = Store::Open(scratch.path + "/cmax.db");
  REQUIRE(store.ok());
  Store& st = **store;
  SeedRun(st, "r-sched-old", now - 48 * kHourNs, true, 1, 5);   // dropped
  SeedRun(st, "r-hand-old", now - 48 * kHourNs, true, 1, 5);    // by hand: kept
  SeedRun(st, "r-sched-new", now - kHourNs / 2, true, 1, 5);    // in the window: kept
  SeedRun(st, "r-sched-link", now - 48 * kHourNs, true, 1, 5);  // a link: left alone
  SeedRun(st, "r-sched-running", 0, false, 1, 5);               // not ended
  for (const char* id : {"r-sched-old", "r-sched-new", "r-sched-link", "r-sched-running"}) {
    MarkScheduled(st, id, "s1", reports);
  }
  for (const char* id : {"r-sched-old", "r-hand-old", "r-sched-new", "r-sched-running"}) {
    WriteScorecard(reports, id);
  }
  // Inside the folder to drop: a link out of it, which must not be followed.
  REQUIRE(symlink((outside + "/keep.txt").c_str(),
                  (reports + "/r-sched-old/evidence.txt").c_str()) == 0);
  REQUIRE(symlink(outside.c_str(), (reports + "/r-sched-link").c_str()) == 0);

  auto pass = st.PruneRecords(now - kHourNs, reports);
  INFO(pass.status().ToString());
  REQUIRE(pass.ok());
  CHECK(pass->scorecards == 1);
  CHECK_FALSE(Exists(reports + "/r-sched-old"));
  CHECK(Exists(reports + "/r-hand-old/scorecard.json"));
  CHECK(Exists(reports + "/r-sched-new/scorecard.json"));
  CHECK(Exists(reports + "/r-sched-running/scorecard.json"));
  // Nothing outside the reports root went, neither through the link in the
  // dropped folder nor through the link in place of a folder.
  CHECK(Exists(outside + "/keep.txt"));
  CHECK(Exists(reports + "/r-sched-link"));
  // The run stays and says its scorecard was dropped; the others keep theirs.
  auto old = st.GetRun("r-sched-old");
  REQUIRE(old.ok());
  CHECK(old->info.scorecard_dropped_unix_ns() >= now);
  CHECK(old->info.report_dir().empty());
  CHECK(old->info.schedule_id() == "s1");
  auto hand = st.GetRun("r-hand-old");
  REQUIRE(hand.ok());
  CHECK(hand->info.scorecard_dropped_unix_ns() == 0);
  CHECK(hand->info.report_dir() == "/var/lib/cmax/reports/r-hand-old");
  CHECK(hand->info.records_dropped_unix_ns() > 0);  // its records go as before
  auto link = st.GetRun("r-sched-link");
  REQUIRE(link.ok());
  CHECK(link->info.scorecard_dropped_unix_ns() == 0);
  // A second pass has nothing more to drop.
  auto again = st.PruneRecords(now - kHourNs, reports);
  REQUIRE(again.ok());
  CHECK(again->scorecards == 0);
  CHECK(Exists(reports + "/r-hand-old/scorecard.json"));
}

TEST_CASE("the coordinator drops a scheduled run's scorecard and cmaxctl report says why",
          "[core][retention]") {
  cmax::testing::ScratchDir scratch;
  const std::string& dir = scratch.path;
  const std::string reports = dir + "/reports";
  REQUIRE(mkdir(reports.c_str(), 0750) == 0);
  {
    auto store = Store::Open(dir + "/cmax.db");
    REQUIRE(store.ok());
    SeedRun(**store, "r-sched", NowUnixNs() - 3 * kHourNs, true, 1, 3);
    SeedRun(**store, "r-hand", NowUnixNs() - 3 * kHourNs, true, 1, 3);
    MarkScheduled(**store, "r-sched", "s7", reports);
  }
  WriteScorecard(reports, "r-sched");
  WriteScorecard(reports, "r-hand");
  CoreOptions o;
  o.data_dir = dir;
  o.keep_runs_for_ns = kHourNs;
  o.retention_every_ns = 50 * 1000000;
  auto core = CoordinatorCore::Create(o);
  REQUIRE(core.ok());
  absl::StatusOr<v1::GetRunResponse> run = absl::UnknownError("not asked");
  for (int i = 0; i < 200; ++i) {
    run = (*core)->HandleGetRun("r-sched");
    REQUIRE(run.ok());
    if (run->run().scorecard_dropped_unix_ns() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(run->run().scorecard_dropped_unix_ns() > 0);
  CHECK_FALSE(Exists(reports + "/r-sched"));
  v1::GetReportRequest req;
  req.set_run_id("r-sched");
  req.set_format("json");
  auto report = (*core)->HandleGetReport(req);
  REQUIRE_FALSE(report.ok());
  CHECK_THAT(std::string(report.status().message()),
             Catch::Contains("started by schedule s7") &&
                 Catch::Contains("dropped by retention") && Catch::Contains("--keep-runs-for"));
  req.set_run_id("r-hand");
  auto hand = (*core)->HandleGetReport(req);
  INFO(hand.status().ToString());
  CHECK(hand.ok());
}

}  // namespace cmax::coordinator
