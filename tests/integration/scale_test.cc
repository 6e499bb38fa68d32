// The coordinator with 500 simulated agents (benchmarks/scale): a real
// cmax-coordinator, and cmax-scale-agents speaking the agent protocol over
// real gRPC with faults (slow GPU, flapping port, SDC, dropped streams that
// resend). Checked from what a user would look at: the store (every record
// once, none missing), the scorecard file (the same as the existing path
// builds from the stored data) and the agents' states (none lost).
#include <signal.h>
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/scale/measure.h"
#include "benchmarks/scale/same_data.h"
#include "benchmarks/scale/sim_node.h"
#include "common/plan_parser.h"
#include "coordinator/store.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "reports/history.h"
#include "reports/record_set.h"
#include "reports/scorecard.h"
#include "tests/integration/cluster.h"

using cmax::testing::Cluster;
using cmax::testing::ClusterOptions;
using namespace std::chrono_literals;
using cmax::scale::SameDataOn;

namespace {

constexpr int kAgents = 500;
constexpr int kRepeats = 4;
constexpr int kTasks = 4 * kRepeats * kAgents;
constexpr char kPrefix[] = "sc";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Figure(const google::protobuf::Struct& f, const std::string& key) {
  auto it = f.fields().find(key);
  return it == f.fields().end() ? "(missing)" : it->second.string_value();
}

}  // namespace

TEST_CASE("scale: 500 simulated agents, every record stored once, the scorecard as the "
          "existing path builds it, no agent lost",
          "[integration][scale]") {
  ClusterOptions o;
  o.agents = 0;
  o.netns = false;  // loopback: one process hosts every simulated agent
  o.no_token = true;
  o.heartbeat_timeout_s = 15;
  Cluster c(kPrefix, o);
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());

  // The faults the generator is given, and so what each node must have sent.
  cmax::scale::SimFaults faults;
  faults.slow_gpu = 0.02;
  faults.flap_port = 0.02;
  faults.sdc = 0.02;
  faults.disconnect = 0.02;
  faults.seed = 7;
  // benchmarks/scale/scale.yaml's four entries four times over: 16 tasks
  // and about 760 records a node, 380,000 in all (a few thousand a node
  // would take minutes on CI's 2 cores; benchmarks/scale/run.sh goes there).
  std::string yaml = "name: scale-test\ndescription: simulated\nsuites:\n";
  for (int r = 0; r < kRepeats; ++r) {
    absl::StrAppend(&yaml, "  - suite: health\n    name: health-", r, "\n",
                    "  - suite: gemm\n    name: gemm-", r, "\n",
                    "    params: {backend: cuda, dtype: bf16}\n",
                    "  - suite: collective\n    name: nccl-", r, "\n    scope: node\n",
                    "    params: {backend: nccl, op: all_reduce}\n",
                    "  - suite: consistency\n    name: consistency-", r, "\n",
                    "    params: {backend: cuda}\n");
  }
  const std::string plan = c.WritePlan("scale-test.yaml", yaml);
  const std::string figures_path = c.dir() + "/figures.json";
  std::vector<std::string> argv = {
      Cluster::BinDir() + "/cmax-scale-agents", "--target", c.address(),
      "--agents", std::to_string(kAgents), "--prefix", kPrefix,
      "--plan", plan,
      "--coordinator-pid", std::to_string(c.coordinator_pid()),
      "--idle-seconds", "2", "--timeout", "100", "--json-out", figures_path,
      "--slow-gpu", "0.02", "--flap-port", "0.02", "--sdc", "0.02", "--disconnect", "0.02",
      "--seed", "7"};
  auto run = cmax::RunCommand(argv, 110s, 4 << 20);
  REQUIRE(run.ok());
  INFO("cmax-scale-agents:\n" << run->out << run->err);
  REQUIRE(run->exit.code == 0);
  std::printf("%s", run->out.c_str());  // the figures, memory during the scorecard among them

  google::protobuf::Struct fig;
  REQUIRE(google::protobuf::util::JsonStringToMessage(Slurp(figures_path), &fig).ok());
  const std::string run_id = Figure(fig, "run_id");
  CHECK(Figure(fig, "connect_all_s") != "not reached");
  CHECK(Figure(fig, "tasks_ended_acked") == absl::StrCat(kTasks, " of ", kTasks));
  CHECK(Figure(fig, "scorecard_s") != "not reached");
  CHECK(Figure(fig, "run_state") == "completed");
  // None lost: no stream the coordinator ended by itself, none listed lost.
  CHECK(Figure(fig, "streams_closed_by_coordinator") == "0");
  CHECK(Figure(fig, "coordinator_lists_lost_or_disconnected") == absl::StrCat("0 of ", kAgents));
  int dropped = 0;
  REQUIRE(absl::SimpleAtoi(Figure(fig, "streams_dropped_on_purpose"), &dropped));
  CHECK(dropped > 0);  // the resend path was exercised
  std::printf("coordinator memory while the scorecard was built: peak RSS %s MB (VmHWM %s MB)\n",
              Figure(fig, "coordinator_peak_rss_scorecard_mb").c_str(),
              Figure(fig, "coordinator_vmhwm_mb").c_str());

  const std::string report = Slurp(c.data_dir() + "/reports/" + run_id + "/scorecard.json");
  REQUIRE(!report.empty());
  c.StopCoordinator(SIGTERM);

  // Every record once: per task, seq 0..n-1 with n what the node wrote.
  const std::string db_path = c.data_dir() + "/cmax.db";
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db,
                             "SELECT node, suite, COUNT(*), MIN(seq), MAX(seq) FROM records "
                             "WHERE run_id = ? GROUP BY task_id, attempt, rank",
                             -1, &st, nullptr) == SQLITE_OK);
  sqlite3_bind_text(st, 1, run_id.c_str(), -1, SQLITE_TRANSIENT);
  int groups = 0;
  int64_t total = 0, expected_total = 0;
  int wrong = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const std::string node = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    const std::string suite = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    const int64_t n = sqlite3_column_int64(st, 2);
    int index = -1;
    REQUIRE(absl::SimpleAtoi(node.substr(std::string(kPrefix).size()), &index));
    const int64_t want =
        cmax::scale::SimRecordCount(cmax::scale::MakeSimNode(index, kPrefix, faults), suite);
    if (n != want || sqlite3_column_int64(st, 3) != 0 || sqlite3_column_int64(st, 4) != want - 1) {
      if (++wrong <= 5) {
        UNSCOPED_INFO(node << " " << suite << ": " << n << " records stored, seq "
                           << sqlite3_column_int64(st, 3) << ".." << sqlite3_column_int64(st, 4)
                           << "; it sent " << want);
      }
    }
    ++groups;
    total += n;
    expected_total += want;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  CHECK(wrong == 0);
  CHECK(groups == kTasks);
  CHECK(Figure(fig, "records_acked") == std::to_string(expected_total));
  CHECK(total == expected_total);

  // The scorecard the coordinator wrote (built off its core thread, from a
  // read-only connection, moving records) against the one the existing path
  // builds from the same stored data.
  auto store = cmax::coordinator::Store::Open(db_path);
  REQUIRE(store.ok());
  auto stored_run = (*store)->GetRun(run_id);
  REQUIRE(stored_run.ok());
  cmax::reports::RunData data;
  data.run = stored_run->info;
  // What the run looked like when it ended, before the scorecard was added.
  data.run.clear_tier();
  data.run.clear_nodes_failed();
  data.run.clear_report_dir();
  data.plan = stored_run->plan;
  data.nodes = stored_run->nodes;
  auto tasks = (*store)->LoadTasks(run_id);
  REQUIRE(tasks.ok());
  // The scheduler's order (Scheduler::TasksOf): by id, then by plan entry.
  std::stable_sort(tasks->begin(), tasks->end(), [](const auto& a, const auto& b) {
    return a.info.suite_index() < b.info.suite_index();
  });
  for (const auto& t : *tasks) data.tasks.push_back(t.info);
  REQUIRE((*store)->ScanRecords(run_id, [&](const cmax::v1::ExportedRecord& r) {
                    data.records.push_back(r);
                    return true;
                  }).ok());
  auto agents = (*store)->LoadAgents();
  REQUIRE(agents.ok());
  for (const auto& a : *agents) data.inventories[a.node] = a.inventory;
  cmax::v1::Scorecard rebuilt = cmax::reports::BuildScorecard(data);  // the const (copying) path
  // The coordinator adds the cluster's history, from the summaries it
  // stored (this run's included), as Reliability evidence
  // (coordinator/core_history.cc): the same here.
  auto summaries = (*store)->LoadNodeRunSummaries("");
  REQUIRE(summaries.ok());
  REQUIRE(summaries->size() == static_cast<size_t>(kAgents));
  cmax::reports::AddHistoryToScorecard(cmax::reports::ComputeReliability(*summaries), &rebuilt);
  cmax::v1::Scorecard written;
  REQUIRE(google::protobuf::util::JsonStringToMessage(report, &written).ok());
  CHECK(cmax::scale::ScorecardDifferences(written, rebuilt) == "");
  CHECK(written.simulated());
  CHECK(written.nodes_size() == kAgents);
  // The faults show in the verdicts: the SDC nodes fail.
  int fail = 0;
  for (const auto& n : written.nodes()) fail += n.verdict() == "fail";
  int sdc = 0;
  for (int i = 0; i < kAgents; ++i) sdc += cmax::scale::MakeSimNode(i, kPrefix, faults).sdc;
  CHECK(sdc > 0);
  CHECK(fail >= sdc);
}

TEST_CASE("scale: every simulated record and inventory says simulated, faults show in the data",
          "[scale]") {
  cmax::scale::SimFaults f;
  f.slow_gpu = f.flap_port = f.sdc = 1;  // every node has them
  const cmax::scale::SimNode n = cmax::scale::MakeSimNode(3, "sim", f);
  CHECK(n.name == "sim00003");
  CHECK(cmax::scale::SimInventory(n).facts().at("simulated") == "true");
  CHECK(cmax::scale::SimInventory(n).gpu_count() == 8);
  int64_t total = 0;
  bool slow = false, flap = false, sdc = false;
  for (const std::string suite : {"health", "gemm", "collective", "consistency", "storage"}) {
    const int64_t count = cmax::scale::SimRecordCount(n, suite);
    CHECK(count > 0);
    total += count;
    for (int64_t i = 0; i < count; ++i) {
      const cmax::v1::Record r = cmax::scale::SimRecordAt(n, suite, i, 1);
      INFO(suite << " record " << i << ": " << r.ShortDebugString());
      if (r.has_measurement()) CHECK(r.measurement().simulated());
      if (r.has_finding()) CHECK(r.finding().simulated());
      if (r.has_log()) CHECK(r.log().message().rfind("simulated: ", 0) == 0);
      CHECK((r.has_measurement() || r.has_finding() || r.has_log()));
      if (r.has_measurement() && r.measurement().metric() == "gemm_tflops" &&
          r.measurement().labels().at("gpu") == "3") {
        slow = slow || r.measurement().value() < 0.75 * 720;
      }
      flap = flap || (r.has_finding() && r.finding().subject() == "port:mlx5_2/1");
      sdc = sdc || (r.has_finding() && r.finding().check_id() == "consistency.nondeterministic");
    }
  }
  CHECK(slow);
  CHECK(flap);
  CHECK(sdc);
  CHECK(total > 180);
  // Without faults none of them appear.
  const cmax::scale::SimNode clean = cmax::scale::MakeSimNode(3, "sim", {});
  CHECK(cmax::scale::SimRecordCount(clean, "health") + 1 == cmax::scale::SimRecordCount(n, "health"));
  CHECK(cmax::scale::SimRecordCount(clean, "consistency") + 1 ==
        cmax::scale::SimRecordCount(n, "consistency"));
}

TEST_CASE("scale: a 1-node and a 1,000-node scorecard agree for the same per-node data",
          "[scale]") {
  auto plan = cmax::LoadPlanFile(Cluster::SourceDir() + "/benchmarks/scale/scale.yaml");
  REQUIRE(plan.ok());
  const cmax::v1::Scorecard one =
      cmax::reports::BuildScorecard(SameDataOn(1, *plan, false, /*faulty=*/true));
  const cmax::v1::Scorecard many =
      cmax::reports::BuildScorecard(SameDataOn(1000, *plan, false, /*faulty=*/true));
  REQUIRE(one.nodes_size() == 1);
  REQUIRE(many.nodes_size() == 1000);
  CHECK(one.tier() == many.tier());
  REQUIRE(one.categories_size() == many.categories_size());
  // The grades agree, except where only fleet-wide consistency rules (one
  // node has nothing to compare with: inventory or version drift across
  // nodes) evaluate a category: not measured on one node, graded on many.
  for (int c = 0; c < one.categories_size(); ++c) {
    const auto& a = one.categories(c);
    const auto& b = many.categories(c);
    INFO(a.name() << ": " << a.grade() << " vs " << b.grade() << "; " << b.ShortDebugString().substr(0, 800));
    if (a.grade() == b.grade()) continue;
    CHECK(a.grade() == "not measured");
    CHECK(b.rules_size() > 0);
    for (const auto& r : b.rules()) CHECK(r.node().empty());
  }
  // Every node of the big run gets the one node's rules, verdict and
  // reasons (the comparison cmax-scale-agree makes at 10,000 nodes: the
  // node's name and an SDC suspect's peer count, which is the fleet's GPU
  // count, aside). Every node has the slow GPU, flapping port and SDC, so
  // node rules fire on each.
  const cmax::scale::Agreement agree = cmax::scale::CompareOneToMany(one, many);
  INFO(agree.first_difference);
  CHECK(agree.ok());
  // 8 node rules on the one node (4 GEMM outliers, GEMM against peak, the
  // flapping port, 2 for the SDC); the big card shows each category's first
  // 500 and counts the rest, which the reasons (compared) still carry.
  CHECK(agree.node_rules_compared >= 1500);
  CHECK(agree.node_rules_compared + agree.node_rules_not_shown == 8 * 1000);
  CHECK(agree.node_rules_differing == 0);
  CHECK(agree.verdicts_differing == 0);
  CHECK(one.nodes(0).verdict() == "fail");

  // The coordinator's path for a big run (records held as wire bytes in a
  // RecordSet, reports/record_set.h) gives this same card, field for field.
  cmax::reports::RunData compact = SameDataOn(1000, *plan, false, /*faulty=*/true);
  auto set = std::make_shared<cmax::reports::RecordSet>();
  for (const auto& r : compact.records) set->Add(r);
  std::printf(
      "record set of the 1,000-node data: %zu records, %.1f MB (%.0f bytes a record)\n",
      set->size(), set->bytes() / 1048576.0,
      static_cast<double>(set->bytes()) / static_cast<double>(set->size()));
  compact.records.clear();
  compact.record_set = std::move(set);
  cmax::v1::Scorecard from_set = cmax::reports::BuildScorecard(std::move(compact));
  CHECK(cmax::scale::ScorecardDifferences(many, from_set) == "");
}
