// The SQLite store: round trips, records stored once, late flags, integrity.
#include "coordinator/store.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "tests/scratch_dir.h"

namespace cmax::coordinator {
namespace {

v1::SpooledRecord Rec(const std::string& task, int attempt, int rank, int64_t seq, double v) {
  v1::SpooledRecord r;
  r.set_task_id(task);
  r.set_attempt(attempt);
  r.set_rank(rank);
  r.set_seq(seq);
  r.mutable_record()->mutable_measurement()->set_value(v);
  return r;
}

TEST_CASE("runs, tasks and agents survive a reopen", "[store]") {
  cmax::testing::ScratchDir scratch;  // removed after the store closes
  const std::string& dir = scratch.path;
  {
    auto store = Store::Open(dir + "/cmax.db");
    REQUIRE(store.ok());
    RunRow run;
    run.info.set_run_id("r1");
    run.info.set_state("running");
    run.info.set_created_unix_ns(5);
    run.plan.set_name("p");
    run.nodes = {"a", "b"};
    REQUIRE((*store)->PutRun(run).ok());
    TaskRow t;
    t.info.set_task_id("r1.0.a");
    t.info.set_run_id("r1");
    t.info.set_state(v1::TASK_RUNNING);
    t.info.set_attempt(2);
    t.assignment.set_suite("selftest");
    t.nodes = {"a"};
    t.retries = 3;
    REQUIRE((*store)->PutTasks({&t}).ok());
    AgentRow a;
    a.node = "a";
    a.addresses = {"10.0.0.1", "10.0.0.2"};
    a.inventory.set_gpu_count(8);
    REQUIRE((*store)->PutAgent(a).ok());
  }
  auto store = Store::Open(dir + "/cmax.db");
  REQUIRE(store.ok());
  auto run = (*store)->GetRun("r1");
  REQUIRE(run.ok());
  CHECK(run->plan.name() == "p");
  CHECK(run->nodes == std::vector<std::string>{"a", "b"});
  auto unfinished = (*store)->ListRuns(0, true);
  REQUIRE(unfinished.ok());
  CHECK(unfinished->size() == 1);
  auto tasks = (*store)->LoadTasks("r1");
  REQUIRE(tasks.ok());
  REQUIRE(tasks->size() == 1);
  CHECK(tasks->front().info.attempt() == 2);
  CHECK(tasks->front().retries == 3);
  CHECK(tasks->front().assignment.suite() == "selftest");
  auto agents = (*store)->LoadAgents();
  REQUIRE(agents.ok());
  REQUIRE(agents->size() == 1);
  CHECK(agents->front().addresses.size() == 2);
  CHECK(agents->front().inventory.gpu_count() == 8);
  CHECK(absl::IsNotFound((*store)->GetRun("r2").status()));
  CHECK(absl::IsNotFound((*store)->GetTask("r1.9.x").status()));
  CHECK((*store)->CheckIntegrity().ok());
}

TEST_CASE("node history summaries survive a reopen and load per node oldest first",
          "[store]") {
  cmax::testing::ScratchDir scratch;
  const std::string db = scratch.path + "/cmax.db";
  auto summary = [](const std::string& run, const std::string& node, int64_t t,
                    const std::string& verdict) {
    v1::NodeRunSummary s;
    s.set_run_id(run);
    s.set_node(node);
    s.set_finished_unix_ns(t);
    s.set_verdict(verdict);
    return s;
  };
  {
    auto store = Store::Open(db);
    REQUIRE(store.ok());
    REQUIRE((*store)
                ->PutRunSummaries(
                    "r2",
                    {summary("r2", "a", 20, "accept"), summary("r2", "b", 20, "reject")},
                    1)
                .ok());
    REQUIRE((*store)->PutRunSummaries("r1", {summary("r1", "a", 10, "reject")}, 1).ok());
    REQUIRE((*store)->PutRunSummaries("r0", {}, 1).ok());  // a run without nodes
    // Written again (a backfill racing a finish): replaced, not doubled.
    REQUIRE((*store)->PutRunSummaries("r1", {summary("r1", "a", 10, "reject")}, 2).ok());
  }
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  auto a = (*store)->LoadNodeRunSummaries("a");
  REQUIRE(a.ok());
  REQUIRE(a->size() == 2);
  CHECK((*a)[0].run_id() == "r1");
  CHECK((*a)[1].verdict() == "accept");
  auto all = (*store)->LoadNodeRunSummaries("");
  REQUIRE(all.ok());
  CHECK(all->size() == 3);
  CHECK((*store)->LoadNodeRunSummaries("nobody")->empty());
  // With its peers: b's runs (r2) and every node of them.
  auto b = (*store)->LoadNodeRunSummaries("b", /*with_peers=*/true);
  REQUIRE(b.ok());
  REQUIRE(b->size() == 2);
  CHECK((*b)[0].node() == "a");
  CHECK((*b)[1].node() == "b");
  auto done = (*store)->SummarizedRuns();
  REQUIRE(done.ok());
  CHECK(*done == std::set<std::string>{"r0", "r1", "r2"});
}

TEST_CASE("a record is stored once per (task, attempt, rank, seq)", "[store]") {
  cmax::testing::ScratchDir scratch;
  auto store = Store::Open(scratch.path + "/cmax.db");
  REQUIRE(store.ok());
  std::vector<v1::SpooledRecord> recs = {Rec("t", 1, 0, 0, 1), Rec("t", 1, 0, 1, 2),
                                         Rec("t", 2, 0, 0, 3), Rec("t", 1, 1, 0, 4)};
  std::vector<RecordToStore> rows;
  for (auto& r : recs) rows.push_back({&r, "r1", "a", "selftest", false});
  auto added = (*store)->InsertRecords(rows);
  REQUIRE(added.ok());
  CHECK(*added == 4);
  // Resent after a reconnect, with one new one: only the new one counts, and
  // the first copy (not late) is kept.
  v1::SpooledRecord again = Rec("t", 1, 0, 1, 99), fresh = Rec("t", 1, 0, 2, 5);
  auto more = (*store)->InsertRecords(
      {{&again, "r1", "a", "selftest", true}, {&fresh, "r1", "a", "selftest", true}});
  REQUIRE(more.ok());
  CHECK(*more == 1);
  // Counted per attempt: the judged attempt's records alone.
  auto n = (*store)->CountRecords("t", 1);
  REQUIRE(n.ok());
  CHECK(*n == 4);
  auto second = (*store)->CountRecords("t", 2);
  REQUIRE(second.ok());
  CHECK(*second == 1);
  std::vector<v1::ExportedRecord> out;
  REQUIRE((*store)
              ->ScanRecords("r1",
                            [&](const v1::ExportedRecord& r) {
                              out.push_back(r);
                              return true;
                            })
              .ok());
  REQUIRE(out.size() == 5);
  // (task, attempt, rank, seq) order.
  CHECK(out[1].seq() == 1);
  CHECK(out[1].record().measurement().value() == 2);
  CHECK_FALSE(out[1].late());
  CHECK(out[2].seq() == 2);
  CHECK(out[2].late());
  CHECK(out[3].rank() == 1);
  CHECK(out[4].attempt() == 2);
  CHECK(out[4].node() == "a");
}

TEST_CASE("a file that is not a database is refused", "[store]") {
  cmax::testing::ScratchDir scratch;
  std::string path = scratch.path + "/cmax.db";
  std::ofstream(path) << std::string(8192, 'x');
  auto store = Store::Open(path);
  CHECK_FALSE(store.ok());
}

}  // namespace
}  // namespace cmax::coordinator

namespace cmax::coordinator {
namespace {

int64_t CountWith(Store* store, const std::string& run_id) {
  int64_t n = 0;
  REQUIRE(store->ScanRecords(run_id, [&](const v1::ExportedRecord&) {
                 ++n;
                 return true;
               }).ok());
  return n;
}

TEST_CASE("a round is one transaction: a reader sees its writes only after CommitRound",
          "[store]") {
  cmax::testing::ScratchDir scratch;  // removed after the store closes
  const std::string& dir = scratch.path;
  auto store = Store::Open(dir + "/cmax.db");
  REQUIRE(store.ok());
  auto reader = Store::OpenReader(dir + "/cmax.db");
  REQUIRE(reader.ok());
  TaskRow t;
  t.info.set_task_id("r1.0.a");
  t.info.set_run_id("r1");
  t.nodes = {"a"};

  REQUIRE((*store)->BeginRound().ok());
  CHECK((*store)->in_round());
  REQUIRE((*store)->PutTasks({&t}).ok());
  std::vector<v1::SpooledRecord> a = {Rec("r1.0.a", 1, 0, 0, 1), Rec("r1.0.a", 1, 0, 1, 2)};
  std::vector<v1::SpooledRecord> b = {Rec("r1.0.a", 1, 0, 1, 2), Rec("r1.0.a", 1, 0, 2, 3)};
  std::vector<RecordToStore> ga, gb;
  for (const auto& r : a) ga.push_back({&r, "r1", "a", "selftest", false});
  for (const auto& r : b) gb.push_back({&r, "r1", "a", "selftest", false});
  auto added = (*store)->InsertRecordGroups({&ga, &gb});
  REQUIRE(added.ok());
  // seq 1 is in both groups: new in the first, a duplicate in the second.
  CHECK(*added == std::vector<int>{2, 1});
  // The writer sees its round; another connection does not, yet.
  CHECK(CountWith(store->get(), "r1") == 3);
  CHECK(CountWith(reader->get(), "r1") == 0);
  CHECK(absl::IsNotFound((*reader)->GetTask("r1.0.a").status()));
  REQUIRE((*store)->CommitRound().ok());
  CHECK_FALSE((*store)->in_round());
  CHECK(CountWith(reader->get(), "r1") == 3);
  CHECK((*reader)->GetTask("r1.0.a").ok());
  // A round that writes nothing commits nothing and succeeds.
  REQUIRE((*store)->BeginRound().ok());
  REQUIRE((*store)->CommitRound().ok());
}

TEST_CASE("an insert refused in a round leaves the round's other writes to commit",
          "[store]") {
  cmax::testing::ScratchDir scratch;  // removed after the store closes
  const std::string& dir = scratch.path;
  auto store = Store::Open(dir + "/cmax.db");
  REQUIRE(store.ok());
  int calls = 0;
  (*store)->SetFaultHookForTesting([&](const std::string& op) {
    return op == "insert_records" && calls++ == 1 ? absl::UnavailableError("busy")
                                                  : absl::OkStatus();
  });
  std::vector<v1::SpooledRecord> a = {Rec("t", 1, 0, 0, 1)};
  std::vector<v1::SpooledRecord> b = {Rec("t", 1, 0, 1, 1)};
  std::vector<RecordToStore> ga = {{&a[0], "r1", "a", "selftest", false}};
  std::vector<RecordToStore> gb = {{&b[0], "r1", "a", "selftest", false}};
  REQUIRE((*store)->BeginRound().ok());
  REQUIRE((*store)->InsertRecordGroups({&ga}).ok());
  CHECK_FALSE((*store)->InsertRecordGroups({&gb}).ok());
  REQUIRE((*store)->CommitRound().ok());
  auto reader = Store::OpenReader(dir + "/cmax.db");
  REQUIRE(reader.ok());
  CHECK(CountWith(reader->get(), "r1") == 1);
}

}  // namespace
}  // namespace cmax::coordinator

namespace cmax::coordinator {
namespace {

TEST_CASE("store: the rows scan gives each record's fields and stored bytes", "[store]") {
  cmax::testing::ScratchDir scratch;
  auto store = Store::Open(scratch.path + "/cmax.db");
  REQUIRE(store.ok());
  std::vector<v1::SpooledRecord> recs = {Rec("t", 1, 0, 0, 1), Rec("t", 1, 2, 7, 2),
                                         Rec("u", 3, 0, 0, 3)};
  (*recs[1].mutable_record()->mutable_measurement()->mutable_labels())["gpu"] = "3";
  REQUIRE((*store)->InsertRecords({{&recs[0], "r1", "a", "gemm", false},
                                   {&recs[1], "r1", "a", "gemm", true},
                                   {&recs[2], "r1", "b", "health", false}})
              .ok());
  std::vector<v1::ExportedRecord> parsed;
  REQUIRE((*store)->ScanRecords("r1", [&](const v1::ExportedRecord& r) {
                     parsed.push_back(r);
                     return true;
                   }).ok());
  std::vector<v1::ExportedRecord> rows;
  REQUIRE((*store)->ScanRecordRows("r1", [&](const StoredRecordView& r) {
                     v1::ExportedRecord e;
                     e.set_task_id(std::string(r.task_id));
                     e.set_attempt(r.attempt);
                     e.set_rank(r.rank);
                     e.set_seq(r.seq);
                     e.set_node(std::string(r.node));
                     e.set_suite(std::string(r.suite));
                     e.set_late(r.late);
                     REQUIRE(e.mutable_record()->ParseFromArray(
                         r.record.data(), static_cast<int>(r.record.size())));
                     rows.push_back(e);
                     return true;
                   }).ok());
  REQUIRE(rows.size() == 3);
  REQUIRE(parsed.size() == 3);
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO(parsed[i].ShortDebugString() << " vs " << rows[i].ShortDebugString());
    CHECK(parsed[i].SerializeAsString() == rows[i].SerializeAsString());
  }
  CHECK(rows[1].late());
  CHECK(rows[1].rank() == 2);
  CHECK(rows[1].record().measurement().labels().at("gpu") == "3");
  CHECK(rows[2].node() == "b");
  int seen = 0;  // false from fn stops the scan
  REQUIRE((*store)->ScanRecordRows("r1", [&](const StoredRecordView&) { return ++seen < 2; })
              .ok());
  CHECK(seen == 2);
}

TEST_CASE("store: WAL checkpoints run on the store's own thread", "[store]") {
  cmax::testing::ScratchDir scratch;  // removed after the store closes
  const std::string& dir = scratch.path;
  auto store = Store::Open(dir + "/cmax.db");
  REQUIRE(store.ok());
  auto file_size = [&](const std::string& name) {
    std::ifstream f(dir + "/" + name, std::ios::binary | std::ios::ate);
    return f ? static_cast<int64_t>(f.tellg()) : int64_t{-1};
  };
  // The writer no longer checkpoints on commit: what a commit writes goes
  // to the -wal file, and only the checkpointer copies it into cmax.db.
  const int64_t db_before = file_size("cmax.db");
  std::vector<v1::SpooledRecord> recs;
  for (int i = 0; i < 4000; ++i) {
    recs.push_back(Rec("t", 1, 0, i, i));
    recs.back().mutable_record()->mutable_measurement()->set_metric(std::string(200, 'm'));
  }
  std::vector<RecordToStore> rows;
  for (auto& r : recs) rows.push_back({&r, "r1", "a", "selftest", false});
  const int64_t checkpoints_before = (*store)->checkpoints_done();
  REQUIRE((*store)->InsertRecords(rows).ok());
  // Within 10 s (50 periods) the records reach the database file.
  int64_t db_after = db_before;
  for (int i = 0; i < 200 && db_after < db_before + 800 * 1000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    db_after = file_size("cmax.db");
  }
  INFO("cmax.db " << db_before << " -> " << db_after << " bytes, -wal "
                  << file_size("cmax.db-wal") << " bytes");
  CHECK(db_after >= db_before + 800 * 1000);  // 4,000 records of > 200 bytes
  // The checkpointer counts a checkpoint when it returns, after the pages it
  // copied are in cmax.db: the file can grow a moment before the count does.
  for (int i = 0; i < 200 && (*store)->checkpoints_done() <= checkpoints_before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK((*store)->checkpoints_done() > checkpoints_before);
  // Everything is still there for a reader.
  auto n = (*store)->CountRecords("t", 1);
  REQUIRE(n.ok());
  CHECK(*n == 4000);
}

}  // namespace
}  // namespace cmax::coordinator
