// A record speaks for the ranks its node holds: the rank layout per node
// (rank_claims.h), and ingest refusing records from one node that claim
// another node's rank, by wire rank or by `rank` label (issue 45 item 2).
#include "coordinator/rank_claims.h"

#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <utility>

#include "coordinator/core.h"
#include "tests/coordinator/fake_session.h"
#include "tests/scratch_dir.h"

namespace cmax::coordinator {
namespace {

TaskRow GangTask(const std::string& launcher = "") {
  TaskRow t;
  t.info.set_task_id("r1.0.gang");
  t.info.set_run_id("r1");
  t.info.set_suite("workload");
  t.info.set_node("node-a,node-b");
  t.info.set_state(v1::TASK_COMPLETED);
  t.assignment.set_suite("workload");
  t.assignment.set_group("r1.0.gang");
  t.assignment.set_world_size(2);
  t.assignment.set_launcher(launcher);
  t.nodes = {"node-a", "node-b"};
  return t;
}

v1::SpooledRecord LossSample(int wire_rank, const std::string& label_rank) {
  v1::SpooledRecord r;
  r.set_task_id("r1.0.gang");
  r.set_rank(wire_rank);
  auto* s = r.mutable_record()->mutable_sample();
  s->set_suite("workload");
  s->set_metric("loss");
  s->set_value(9.5);
  if (!label_rank.empty()) (*s->mutable_labels())["rank"] = label_rank;
  return r;
}

}  // namespace

TEST_CASE("a node holds the ranks the scheduler laid out for it, and only those",
          "[core][rank_claims]") {
  const TaskRow t = GangTask();
  const std::vector<int> sizes = {2, 1};  // node-a: ranks 0-1, node-b: rank 2
  const NodeRanks a = RanksOf(t, sizes, "node-a");
  const NodeRanks b = RanksOf(t, sizes, "node-b");
  CHECK(a.first == 0);
  CHECK(a.count == 2);
  CHECK(b.first == 2);
  CHECK(b.count == 1);
  CHECK(RanksOf(t, sizes, "node-c").count == 0);
  CHECK(RankClaimError(a, LossSample(1, "1")).empty());
  CHECK(RankClaimError(b, LossSample(2, "2")).empty());
  CHECK(RankClaimError(a, LossSample(0, "")).empty());  // no label: the wire rank alone
  // node-a speaking for node-b's rank, on the wire or in a label.
  CHECK_THAT(RankClaimError(a, LossSample(2, "2")),
             Catch::Contains("claims rank 2") && Catch::Contains("holds ranks 0-1"));
  CHECK_THAT(RankClaimError(a, LossSample(0, "2")),
             Catch::Contains("claims rank 2 (label)"));
  CHECK_THAT(RankClaimError(a, LossSample(0, "two")), Catch::Contains("not a number"));

  // After a coordinator restart the layout is taken as uniform.
  CHECK(LocalSizesOf(t, nullptr) == std::vector<int>{1, 1});
  CHECK(LocalSizesOf(t, &sizes) == sizes);

  // Node scope: the node's only rank is 0.
  TaskRow node_task = GangTask();
  node_task.assignment.clear_group();
  node_task.nodes = {"node-a"};
  const NodeRanks only = RanksOf(node_task, {1}, "node-a");
  CHECK(RankClaimError(only, LossSample(0, "0")).empty());
  CHECK_FALSE(RankClaimError(only, LossSample(1, "1")).empty());
  CHECK_FALSE(RankClaimError(only, LossSample(0, "1")).empty());

  // mpirun: the first node reports every rank through one spool (wire rank
  // 0, labels of every rank); the others send nothing of their own.
  const TaskRow m = GangTask("mpirun");
  const NodeRanks launcher = RanksOf(m, {1, 1}, "node-a");
  CHECK(RankClaimError(launcher, LossSample(0, "1")).empty());
  CHECK_FALSE(RankClaimError(launcher, LossSample(0, "2")).empty());
  CHECK_FALSE(RankClaimError(launcher, LossSample(1, "1")).empty());
  CHECK_FALSE(RankClaimError(RanksOf(m, {1, 1}, "node-b"), LossSample(0, "1")).empty());
}

TEST_CASE(
    "ingest acknowledges but does not store records from node-a that claim node-b's rank",
    "[core][rank_claims]") {
  cmax::testing::ScratchDir scratch;  // removed after the core closes its store
  const std::string& dir = scratch.path;
  {
    auto store = Store::Open(dir + "/cmax.db");
    REQUIRE(store.ok());
    RunRow run;
    run.info.set_run_id("r1");
    run.info.set_state("completed");
    run.nodes = {"node-a", "node-b"};
    REQUIRE((*store)->PutRun(run).ok());
    TaskRow t = GangTask();
    REQUIRE((*store)->PutTasks({&t}).ok());
  }
  CoreOptions o;
  o.data_dir = dir;
  auto core = CoordinatorCore::Create(o);
  REQUIRE(core.ok());
  auto a = std::make_shared<FakeSession>("a");
  v1::AgentMessage hello;
  *hello.mutable_hello() = HelloFrom("node-a");
  (*core)->HandleAgentMessage(a, hello);

  v1::AgentMessage batch;
  auto add = [&](int wire, const std::string& label, int64_t seq) {
    v1::SpooledRecord r = LossSample(wire, label);
    r.set_seq(seq);
    (*r.mutable_record()->mutable_sample()->mutable_labels())["step"] =
        std::to_string(seq);
    *batch.mutable_records()->add_records() = std::move(r);
  };
  add(0, "0", 0);  // node-a's own rank 0: stored
  add(0, "1", 1);  // rank 0's spool labelled rank 1 (node-b's): refused
  add(1, "1", 0);  // node-b's rank on the wire: refused
  add(0, "0", 2);  // stored
  (*core)->HandleAgentMessage(a, batch);

  // Every record is acknowledged, so the agent drops them all.
  std::map<int, int64_t> acked;  // rank -> next seq
  for (const auto& m : a->sent) {
    if (m.has_ack()) acked[m.ack().rank()] = m.ack().next_seq();
  }
  CHECK(acked == std::map<int, int64_t>{{0, 3}, {1, 1}});
  CHECK(a->closed.empty());
  core->reset();

  auto store = Store::Open(dir + "/cmax.db");
  REQUIRE(store.ok());
  std::set<std::pair<int, int64_t>> stored;  // (rank, seq)
  REQUIRE((*store)
              ->ScanRecords("r1",
                            [&](const v1::ExportedRecord& rec) {
                              CHECK(rec.node() == "node-a");
                              CHECK(rec.record().sample().labels().at("rank") == "0");
                              stored.insert({rec.rank(), rec.seq()});
                              return true;
                            })
              .ok());
  CHECK(stored == std::set<std::pair<int, int64_t>>{{0, 0}, {0, 2}});
}

}  // namespace cmax::coordinator
