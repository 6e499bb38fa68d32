// The core's record path when the store fails a task lookup: nothing is
// acknowledged, the stream is closed, and the resent records arrive once;
// and export, read off the core thread.
#include "coordinator/core.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <thread>

#include "coordinator/history_queries.h"
#include "reports/history.h"
#include "reports/scorecard.h"
#include "tests/coordinator/fake_session.h"
#include "tests/scratch_dir.h"

namespace cmax::coordinator {
namespace {

// A finished run with one task on node "n1": after a restart it is in the
// store only, so records for it take the store lookup.
void SeedFinishedTask(const std::string& dir) {
  auto store = Store::Open(dir + "/cmax.db");
  REQUIRE(store.ok());
  RunRow run;
  run.info.set_run_id("r1");
  run.info.set_state("completed");
  run.nodes = {"n1"};
  REQUIRE((*store)->PutRun(run).ok());
  TaskRow t;
  t.info.set_task_id("r1.0.n1");
  t.info.set_run_id("r1");
  t.info.set_suite("selftest");
  t.info.set_state(v1::TASK_COMPLETED);
  t.assignment.set_suite("selftest");
  t.nodes = {"n1"};
  REQUIRE((*store)->PutTasks({&t}).ok());
}

v1::AgentMessage Batch(const std::string& task, int64_t first, int64_t n) {
  v1::AgentMessage m;
  for (int64_t seq = first; seq < first + n; ++seq) {
    auto* r = m.mutable_records()->add_records();
    r->set_task_id(task);
    r->set_seq(seq);
    r->mutable_record()->mutable_log()->set_message("late line");
  }
  return m;
}

std::vector<v1::Ack> Acks(const FakeSession& s) {
  std::vector<v1::Ack> out;
  for (const auto& m : s.sent) {
    if (m.has_ack()) out.push_back(m.ack());
  }
  return out;
}

// Stores `n` log records of task r1.0.n1 (seq 0..n-1), as ingest would.
void SeedRecords(const std::string& dir, int n) {
  auto store = Store::Open(dir + "/cmax.db");
  REQUIRE(store.ok());
  std::vector<v1::SpooledRecord> spooled(n);
  std::vector<RecordToStore> rows;
  for (int i = 0; i < n; ++i) {
    spooled[i].set_task_id("r1.0.n1");
    spooled[i].set_seq(i);
    spooled[i].mutable_record()->mutable_log()->set_message("line " + std::to_string(i));
    rows.push_back({&spooled[i], "r1", "n1", "selftest", false});
  }
  auto added = (*store)->InsertRecords(rows);
  REQUIRE(added.ok());
  REQUIRE(*added == n);
}

struct ExportResult {
  std::thread::id thread;
  absl::StatusOr<std::vector<v1::ExportedRecord>> records;
};

v1::AgentMessage Hello(const std::string& node) {
  v1::AgentMessage m;
  *m.mutable_hello() = HelloFrom(node);
  return m;
}

}  // namespace

TEST_CASE("a failed task lookup acknowledges nothing and the resent records arrive once",
          "[core][store]") {
  cmax::testing::ScratchDir scratch;  // removed after the core closes its store
  const std::string& dir = scratch.path;
  SeedFinishedTask(dir);
  auto fail = std::make_shared<bool>(true);
  CoreOptions o;
  o.data_dir = dir;
  o.store_fault_for_testing = [fail](const std::string& op) {
    if (*fail && op == "get_task") return absl::UnavailableError("database is locked");
    return absl::OkStatus();
  };
  auto core = CoordinatorCore::Create(o);
  REQUIRE(core.ok());

  // The core thread is not started: the test calls the handlers itself, as
  // that thread would, one at a time.
  auto first = std::make_shared<FakeSession>("s1");
  (*core)->HandleAgentMessage(first, Hello("n1"));
  (*core)->HandleAgentMessage(first, Batch("r1.0.n1", 0, 5));
  CHECK(Acks(*first).empty());
  CHECK_THAT(first->closed, Catch::Contains("could not look up task r1.0.n1"));
  CHECK_THAT(first->closed, Catch::Contains("database is locked"));
  // Nothing later on that stream is acknowledged either.
  (*core)->HandleAgentMessage(first, Batch("r1.0.n1", 5, 1));
  CHECK(Acks(*first).empty());
  (*core)->HandleStreamEnded(first);

  // The database recovers; the agent reconnects and resends from seq 0.
  *fail = false;
  auto second = std::make_shared<FakeSession>("s2");
  (*core)->HandleAgentMessage(second, Hello("n1"));
  (*core)->HandleAgentMessage(second, Batch("r1.0.n1", 0, 6));
  auto acks = Acks(*second);
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].next_seq() == 6);
  CHECK(second->closed.empty());
  core->reset();

  auto store = Store::Open(dir + "/cmax.db");
  REQUIRE(store.ok());
  auto n = (*store)->CountRecords("r1.0.n1", /*attempt=*/0);  // as Batch sends them
  REQUIRE(n.ok());
  CHECK(*n == 6);
}

TEST_CASE("records of a task the store does not know are acknowledged and dropped",
          "[core][store]") {
  cmax::testing::ScratchDir scratch;  // removed after the core closes its store
  const std::string& dir = scratch.path;
  SeedFinishedTask(dir);
  CoreOptions o;
  o.data_dir = dir;
  auto core = CoordinatorCore::Create(o);
  REQUIRE(core.ok());
  auto s = std::make_shared<FakeSession>("s1");
  (*core)->HandleAgentMessage(s, Hello("n1"));
  (*core)->HandleAgentMessage(s, Batch("r9.0.gone", 0, 3));
  auto acks = Acks(*s);
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].next_seq() == 3);  // the agent may delete them: there is no such task
  CHECK(s->closed.empty());
}

TEST_CASE("export reads the run's records on the export thread, not the core thread",
          "[core][export]") {
  cmax::testing::ScratchDir scratch;  // removed after the core closes its store
  const std::string& dir = scratch.path;
  SeedFinishedTask(dir);
  SeedRecords(dir, 3);
  CoreOptions o;
  o.data_dir = dir;
  auto core = CoordinatorCore::Create(o);
  REQUIRE(core.ok());
  (*core)->Start();
  CoordinatorCore* c = core->get();

  std::promise<std::thread::id> core_thread;
  c->Post([&core_thread] { core_thread.set_value(std::this_thread::get_id()); });
  auto core_id = core_thread.get_future();
  REQUIRE(core_id.wait_for(std::chrono::seconds(10)) == std::future_status::ready);

  auto done = std::make_shared<std::promise<ExportResult>>();
  c->Post([c, done] {
    c->HandleExport("r1", [done](absl::StatusOr<std::vector<v1::ExportedRecord>> records) {
      done->set_value({std::this_thread::get_id(), std::move(records)});
    });
  });
  auto result = done->get_future();
  REQUIRE(result.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  ExportResult r = result.get();
  CHECK(r.thread != core_id.get());
  CHECK(r.thread != std::this_thread::get_id());
  REQUIRE(r.records.ok());
  REQUIRE(r.records->size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK((*r.records)[i].task_id() == "r1.0.n1");
    CHECK((*r.records)[i].seq() == i);
    CHECK((*r.records)[i].node() == "n1");
    CHECK((*r.records)[i].record().log().message() == "line " + std::to_string(i));
  }
  (*core)->Stop();
}

TEST_CASE("export of an unknown run answers NOT_FOUND and of a known one its records",
          "[core][export]") {
  cmax::testing::ScratchDir scratch;  // removed after the core closes its store
  const std::string& dir = scratch.path;
  SeedFinishedTask(dir);
  SeedRecords(dir, 2);
  CoreOptions o;
  o.data_dir = dir;
  auto core = CoordinatorCore::Create(o);
  REQUIRE(core.ok());
  // Not started: the handler answers in place.
  int calls = 0;
  (*core)->HandleExport("r9", [&](absl::StatusOr<std::vector<v1::ExportedRecord>> records) {
    ++calls;
    CHECK(absl::IsNotFound(records.status()));
  });
  CHECK(calls == 1);
  (*core)->HandleExport("r1", [&](absl::StatusOr<std::vector<v1::ExportedRecord>> records) {
    ++calls;
    REQUIRE(records.ok());
    CHECK(records->size() == 2);
  });
  CHECK(calls == 2);
}

// The coordinator's log lines count the way cmaxctl does: a run whose two
// tasks could not run ended with "0 failed", not "2 of 2 tasks failed".
TEST_CASE("the run log lines say could not run apart and 1 node", "[core]") {
  CHECK(RunSubmittedLine("r1", "quick", 2, 1) == "run r1 submitted: plan 'quick', 2 tasks on 1 node");
  CHECK(RunSubmittedLine("r1", "full", 1, 3) == "run r1 submitted: plan 'full', 1 task on 3 nodes");
  std::vector<v1::TaskInfo> tasks(2);
  for (auto& t : tasks) {
    t.set_state(v1::TASK_FAILED);
    t.set_exit_code(2);
  }
  CHECK(RunEndedLine("r1", "completed", "not rated", CountTasks(tasks), 0) ==
        "run r1 completed: tier not rated; 2 tasks: 0 completed, 2 could not run, 0 failed; "
        "0 nodes failed");
  tasks[1].set_exit_code(139);
  CHECK(RunEndedLine("r1", "completed", "Gold", CountTasks(tasks), 1) ==
        "run r1 completed: tier Gold; 2 tasks: 0 completed, 1 could not run, 1 failed; "
        "1 node failed");
}

}  // namespace cmax::coordinator

namespace cmax::coordinator {

TEST_CASE(
    "runs that ended before history was kept are summarised at startup from their "
    "scorecard.json",
    "[core][history]") {
  cmax::testing::ScratchDir scratch;  // removed after the core closes its store
  const std::string& dir = scratch.path;
  // Two finished runs as an older coordinator left them: the run rows and
  // their scorecard.json, no node history.
  {
    auto store = Store::Open(dir + "/cmax.db");
    REQUIRE(store.ok());
    const std::pair<const char*, const char*> runs[] = {{"r1", "fail"}, {"r2", "pass"}};
    int64_t t = 1000000000000;
    for (const auto& [id, verdict] : runs) {
      RunRow run;
      run.info.set_run_id(id);
      run.info.set_state("completed");
      run.info.set_created_unix_ns(t);
      run.info.set_finished_unix_ns(t + 3600ll * 1000000000);
      run.nodes = {"n1"};
      REQUIRE((*store)->PutRun(run).ok());
      v1::Scorecard card;
      card.set_run_id(id);
      auto* n = card.add_nodes();
      n->set_node("n1");
      n->set_verdict(verdict);
      n->add_reasons("Reliability fail: expected 8 GPUs, found 7");
      const std::string reports = dir + "/reports/" + id;
      REQUIRE(std::filesystem::create_directories(reports));
      std::ofstream(reports + "/scorecard.json") << reports::RenderJson(card);
      t += 2 * 3600ll * 1000000000;
    }
    // A third without a scorecard (never written): skipped, not an error.
    RunRow bare;
    bare.info.set_run_id("r3");
    bare.info.set_state("failed");
    bare.info.set_created_unix_ns(t);
    bare.info.set_finished_unix_ns(t + 1);
    REQUIRE((*store)->PutRun(bare).ok());
  }
  CoreOptions o;
  o.data_dir = dir;
  {
    auto core = CoordinatorCore::Create(o);
    REQUIRE(core.ok());
    v1::GetHistoryRequest req;
    req.set_node("n1");
    auto h = (*core)->HandleGetHistory(req);
    REQUIRE(h.ok());
    REQUIRE(h->node().runs_size() == 2);
    CHECK(h->node().runs(0).verdict() == "reject");
    CHECK(h->node().runs(1).verdict() == "accept");
    REQUIRE(h->node().incidents_size() == 1);
    // Closed at r2's end, 2 h after r1's.
    CHECK(h->node().incidents(0).repair_hours() == Approx(2.0));
    req.clear_node();
    auto fleet = (*core)->HandleGetHistory(req);
    REQUIRE(fleet.ok());
    CHECK(fleet->fleet().closed_incidents() == 1);
    req.set_node("n9");
    CHECK(absl::IsNotFound((*core)->HandleGetHistory(req).status()));
    req.set_node("../x");
    CHECK(absl::IsInvalidArgument((*core)->HandleGetHistory(req).status()));
  }
  // The summarised runs are marked (a later start skips them); r3, without
  // a scorecard, is not.
  auto store = Store::Open(dir + "/cmax.db");
  REQUIRE(store.ok());
  auto marked = (*store)->SummarizedRuns();
  REQUIRE(marked.ok());
  CHECK(*marked == std::set<std::string>{"r1", "r2"});
}

}  // namespace cmax::coordinator

namespace cmax::coordinator {

// One node's card: `failed` is the check the orchestration suite failed
// (empty: the suite ran and passed; "-": it did not run; hostcheck always ran).
v1::Scorecard OrchestrationCard(const std::string& run, const std::string& failed) {
  v1::Scorecard card;
  card.set_run_id(run);
  card.add_categories()->set_name("Compute");
  auto* orchestration = card.add_categories();
  orchestration->set_name("Orchestration");
  auto* n = card.add_nodes();
  n->set_node("local-0");
  n->set_verdict(failed.empty() || failed == "-" ? "pass" : "fail");
  auto* grid = card.add_node_grid();
  grid->set_node("local-0");
  grid->add_outcomes("pass");
  grid->add_outcomes(failed == "-" ? "not_measured" : failed.empty() ? "pass" : "fail");
  auto finding = [&](const std::string& suite, const std::string& check) {
    auto* f = card.add_findings();
    f->set_suite(suite);
    f->set_check_id(check);
    (*f->mutable_labels())["node"] = "local-0";
  };
  finding("hostcheck", "hostcheck.gpu_count");
  if (failed == "-") return card;
  finding("orchestration", failed.empty() ? "orchestration.slurm.gres" : failed);
  if (!failed.empty()) {
    auto* rule = orchestration->add_rules();
    rule->set_rule_id(failed);
    rule->set_category("Orchestration");
    rule->set_outcome("fail");
    rule->set_node("local-0");
    rule->set_message("neither Slurm nor Kubernetes is set up on this node");
  }
  return card;
}

TEST_CASE(
    "startup summarises again the runs whose summaries do not say what they measured, "
    "and their incidents follow",
    "[core][history]") {
  cmax::testing::ScratchDir scratch;
  const std::string& dir = scratch.path;
  constexpr int64_t kHour = 3600ll * 1000000000;
  const int64_t t0 = 1795996800ll * 1000000000;  // 2026-11-30T00:00:00Z
  // As the previous coordinator left them: a full run rejected local-0 for
  // orchestration.scheduler, a quick run that never ran the orchestration
  // suite accepted it ("time to repair 0.10 h"), the next full run failed it
  // again ("failed again within 7 days of a repair"), a fourth (its
  // scorecard since dropped by retention) accepted it again.
  const struct {
    const char* id;
    const char* failed;
    int64_t finished;
    bool scorecard_kept;
  } runs[] = {{"full-1", "orchestration.scheduler", t0, true},
              {"quick-1", "-", t0 + kHour / 10, true},
              {"full-2", "orchestration.scheduler", t0 + 24 * kHour, true},
              {"quick-2", "-", t0 + 25 * kHour, false}};
  {
    auto store = Store::Open(dir + "/cmax.db");
    REQUIRE(store.ok());
    for (const auto& r : runs) {
      RunRow run;
      run.info.set_run_id(r.id);
      run.info.set_state("completed");
      run.info.set_created_unix_ns(r.finished - kHour / 20);
      run.info.set_finished_unix_ns(r.finished);
      run.nodes = {"local-0"};
      REQUIRE((*store)->PutRun(run).ok());
      const v1::Scorecard card = OrchestrationCard(r.id, r.failed);
      const std::string reports = dir + "/reports/" + r.id;
      std::vector<v1::NodeRunSummary> old = reports::SummarizeRun(card, r.finished, reports);
      for (auto& s : old) {  // what version 0 did not keep
        s.clear_version();
        s.clear_measured_suites();
        s.clear_measured_categories();
        for (auto& reason : *s.mutable_reasons()) reason.clear_suite();
      }
      REQUIRE(PutRunHistory(**store, r.id, old, r.finished).ok());
      if (!r.scorecard_kept) continue;
      REQUIRE(std::filesystem::create_directories(reports));
      std::ofstream(reports + "/scorecard.json") << reports::RenderJson(card);
    }
    // Before the migration, on the old rows: nothing closes (version 0
    // says nothing of what it measured).
    auto before = QueryNodeHistory(**store, "local-0");
    REQUIRE(before.ok());
    REQUIRE(before->incidents_size() == 1);
    CHECK(before->incidents(0).closed_run().empty());
  }
  CoreOptions o;
  o.data_dir = dir;
  {
    auto core = CoordinatorCore::Create(o);
    REQUIRE(core.ok());
    v1::GetHistoryRequest req;
    req.set_node("local-0");
    auto h = (*core)->HandleGetHistory(req);
    REQUIRE(h.ok());
    REQUIRE(h->node().runs_size() == 4);
    const std::string text = reports::RenderNodeHistoryText(h->node());
    CHECK(text.find("node local-0: accepted, 4 runs, 1 incidents") != std::string::npos);
    CHECK(text.find("incident opened 2026-11-30T00:00:00Z (run full-1), OPEN (waiting for a "
                    "run that measures again and passes: orchestration.scheduler (suite "
                    "orchestration))") != std::string::npos);
    CHECK(text.find("time to repair") == std::string::npos);
    CHECK(text.find("failed again within 7 days") == std::string::npos);
    REQUIRE(h->node().incidents_size() == 1);
    CHECK(h->node().incidents(0).rejecting_runs() == 2);
    req.clear_node();
    auto fleet = (*core)->HandleGetHistory(req);
    REQUIRE(fleet.ok());
    CHECK(fleet->fleet().summary().find("1 incidents, 1 open; time to repair not measured "
                                        "(no incident closed); 0 failed again within 7 "
                                        "days of a repair") != std::string::npos);
    // /metrics follows the same rule.
    (*core)->Start();
    auto metrics = (*core)->RenderMetrics(absl::Seconds(10));
    (*core)->Stop();
    REQUIRE(metrics.ok());
    CHECK(metrics->find("cmax_incidents_open 1\n") != std::string::npos);
    CHECK(metrics->find("cmax_incidents_closed_total 0\n") != std::string::npos);
  }
  // The runs with a scorecard were summarised again (version 1); quick-2's
  // rows are as they were. A second start finds nothing more to do.
  auto store = Store::Open(dir + "/cmax.db");
  REQUIRE(store.ok());
  auto rows = (*store)->LoadNodeRunSummaries("local-0");
  REQUIRE(rows.ok());
  std::map<std::string, int> version;
  for (const auto& s : *rows) version[s.run_id()] = s.version();
  CHECK(version == std::map<std::string, int>{{"full-1", reports::kSummaryVersion},
                                              {"quick-1", reports::kSummaryVersion},
                                              {"full-2", reports::kSummaryVersion},
                                              {"quick-2", 0}});
}

}  // namespace cmax::coordinator

namespace cmax::coordinator {

TEST_CASE(
    "the artifacts of rejected nodes are kept in the report folder under safe names",
    "[core][history]") {
  cmax::testing::ScratchDir scratch;
  auto artifact = [](const std::string& node, const std::string& name,
                     const std::string& content) {
    v1::Record r;
    r.mutable_artifact()->set_name(name);
    r.mutable_artifact()->set_content(content);
    const std::string wire = r.SerializeAsString();
    // The tag byte the scorecard scan looks for (core_report.cc).
    CHECK(static_cast<uint8_t>(wire[0]) == 0x32);
    return StoredArtifact{node, "r1.0." + node, 7, wire};
  };
  v1::Record log;
  log.mutable_log()->set_message("not an artifact");
  const std::vector<StoredArtifact> all = {
      artifact("bad", "nvidia-bug-report.log.gz", "report bytes"),
      artifact("bad", "../../escape", "x"),
      artifact("good", "bug.log", "not kept: node accepted"),
      {"bad", "r1.0.bad", 8, log.SerializeAsString()},
      {"bad", "r1.0.bad", 9, "\x32\xff garbage"},
  };
  const auto written = WriteRejectedArtifacts(scratch.path, all, {"bad"});
  REQUIRE(written.size() == 2);
  CHECK(written[0] ==
        scratch.path + "/artifacts/bad/r1.0.bad-7-nvidia-bug-report.log.gz");
  std::ifstream in(written[0]);
  std::string content((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
  CHECK(content == "report bytes");
  // "../../escape" stays inside the folder (and starts with no dot).
  CHECK(written[1] == scratch.path + "/artifacts/bad/r1.0.bad-7-_.._.._escape");
  CHECK(std::filesystem::exists(written[1]));
  CHECK_FALSE(std::filesystem::exists(scratch.path + "/artifacts/good"));
}

}  // namespace cmax::coordinator
