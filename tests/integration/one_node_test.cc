// Issue #33 item 7, "One node is a cluster too", end to end on a cluster of
// one agent (a real coordinator, agent, cmaxctl and cmax-bench):
//  - a plan with a pairs entry, a gang entry that declares min_nodes: 2,
//    connectivity (which needs two nodes itself) and node entries is not
//    refused: the node entries run, the others end "not measured: needs 2
//    nodes, the run has 1" in the scorecard, never a pass or a failure, and
//    cmaxctl exits 4 (not rated), not 2 (refused);
//  - a plan whose only entry needs two nodes ends at once: exit 5, nothing
//    measured, with that reason;
//  - a plan that is wrong (an unknown suite) is still refused with exit 2.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cmax/v1/scorecard.pb.h"
#include "tests/integration/cluster.h"
#include "tests/integration/export_records.h"

using cmax::testing::CategoryOf;
using cmax::testing::Cluster;
using cmax::testing::Export;
using cmax::testing::kExitNothingMeasured;
using cmax::testing::kExitNotRated;
using cmax::testing::ReportCard;
using namespace std::chrono_literals;

namespace {

constexpr char kWhy[] = "needs 2 nodes, the run has 1";

// Every node-scope entry is selftest (graded by nothing: its outcome cannot
// depend on this machine), so the exit code is the honest "not rated".
constexpr char kPlan[] = R"(name: one-node
suites:
  - suite: selftest
    name: first
    params: {records: 5}
  - suite: connectivity
    scope: gang
    timeout: 2m
  - suite: collective
    name: gloo-pairs
    scope: pairs
    timeout: 2m
    params: {backend: gloo, op: all_reduce, min-bytes: 1K, max-bytes: 1K, iters: 2, warmup: 1}
  - suite: collective
    name: gloo-between-nodes
    scope: gang
    min_nodes: 2
    timeout: 2m
    params: {backend: gloo, op: all_reduce, min-bytes: 1K, max-bytes: 1K, iters: 2, warmup: 1}
  - suite: selftest
    name: last
    params: {records: 5}
)";

const cmax::v1::EntryCoverage* EntryOf(const cmax::v1::CategoryGrade& c, const std::string& e) {
  for (const auto& entry : c.entries()) {
    if (entry.entry() == e) return &entry;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("one node: pairs and gang entries that need two nodes are not measured, the rest "
          "runs",
          "[integration][one_node]") {
  Cluster c("one1", {.agents = 1});
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());
  const std::string node = c.node(0);

  SECTION("a plan with pairs, gang and node entries") {
    auto r = c.Ctl({"run", "--plan", c.WritePlan("one", kPlan)}, 180s);
    INFO(r.out << r.err);
    // Not refused (2): it ran, and is not rated with most of it unmeasured.
    CHECK(r.exit.code == kExitNotRated);
    CHECK(absl::StrContains(r.out, "completed: not rated;"));
    CHECK(absl::StrContains(r.out, "2 completed, 3 could not run, 0 failed"));
    const std::string run_id = Cluster::RunIdFrom(r.out);
    REQUIRE(!run_id.empty());

    // The node entries ran (before and after the unstarted ones) and wrote
    // their records; the unstarted entries wrote none.
    std::set<int> entries_with_records;
    for (const auto& rec : Export(c, run_id)) {
      const std::string prefix = run_id + ".";
      REQUIRE(absl::StartsWith(rec.task_id(), prefix));
      entries_with_records.insert(rec.task_id()[prefix.size()] - '0');
    }
    CHECK(entries_with_records == std::set<int>{0, 4});

    const cmax::v1::Scorecard card = ReportCard(c, run_id);
    REQUIRE(card.nodes_size() == 1);
    const auto& verdict = card.nodes(0);
    CHECK(verdict.node() == node);
    CHECK(verdict.verdict() != "fail");  // not measured is never a failure
    CHECK(verdict.verdict() != "pass");  // nor a pass
    int unstarted = 0;
    for (const auto& t : verdict.tasks()) {
      INFO(t.name() << " " << t.state() << " exit " << t.exit_code() << ": " << t.message());
      if (t.name() == "first" || t.name() == "last") {
        CHECK(t.state() == "completed");
        CHECK(t.records() > 0);
        continue;
      }
      ++unstarted;
      CHECK(t.exit_code() == 2);  // could not run
      CHECK(t.attempt() == 0);    // never sent to the agent
      CHECK(t.message() == absl::StrCat("not measured: ", kWhy));
    }
    CHECK(unstarted == 3);

    // Networking says why each entry measured nothing on the node:
    // connectivity too, instead of "completed without results".
    const auto& net = CategoryOf(card, "Networking");
    INFO(net.coverage());
    CHECK_FALSE(net.measured());
    CHECK(net.grade() == "not measured");
    for (const char* entry : {"connectivity", "gloo-pairs", "gloo-between-nodes"}) {
      INFO(entry);
      const auto* e = EntryOf(net, entry);
      REQUIRE(e != nullptr);
      CHECK(e->nodes_asked() == 1);
      CHECK(e->nodes_evaluated() == 0);
      REQUIRE(e->not_evaluated_size() == 1);
      CHECK(e->not_evaluated(0) == absl::StrCat(node, ": not measured: ", kWhy));
    }
    CHECK_FALSE(absl::StrContains(net.coverage(), "completed without results"));
    CHECK_FALSE(absl::StrContains(net.coverage(), "could not run"));
    int reasons = 0;
    for (const auto& reason : verdict.reasons()) {
      reasons += absl::StrContains(reason, kWhy) ? 1 : 0;
    }
    CHECK(reasons == 3);
    CHECK(card.tier() == "not rated");
  }

  SECTION("a plan whose only entry needs two nodes ends at once, nothing measured") {
    auto r = c.Ctl({"run", "--plan", c.WritePlan("pairs", R"(name: pairs-only
suites:
  - suite: collective
    scope: pairs
    params: {backend: gloo, op: all_reduce, min-bytes: 1K, max-bytes: 1K}
)")},
                   60s);
    INFO(r.out << r.err);
    CHECK(r.exit.code == kExitNothingMeasured);
    CHECK(absl::StrContains(r.err, kWhy));
    const std::string run_id = Cluster::RunIdFrom(r.out);
    REQUIRE(!run_id.empty());
    const cmax::v1::Scorecard card = ReportCard(c, run_id);  // built though nothing ran
    CHECK(card.tier() == "not rated");
    const auto* e = EntryOf(CategoryOf(card, "Networking"), "collective");
    REQUIRE(e != nullptr);
    REQUIRE(e->not_evaluated_size() == 1);
    CHECK(e->not_evaluated(0) == absl::StrCat(node, ": not measured: ", kWhy));
  }

  SECTION("a wrong plan is still refused") {
    auto r = c.Ctl({"run", "--plan", c.WritePlan("bad", R"(name: bad
suites:
  - suite: no-such-suite
)")});
    INFO(r.out << r.err);
    CHECK(r.exit.code == 2);
    CHECK(absl::StrContains(r.err, "unknown suite 'no-such-suite'"));
  }
}
