// cmaxctl's run summary and exit codes (coordinator/ctl/progress.h): the
// precedence of the codes, could-not-run counted apart from failures, and a
// run where nothing was measured (5) told apart from one not rated (4); and
// agents' text shown, not obeyed, by the terminal (progress lines, history).
#include "coordinator/ctl/progress.h"

#include <stdio.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/ctl/history.h"
#include "google/protobuf/util/json_util.h"

namespace cmax::ctl {
namespace {

v1::TaskInfo Task(v1::TaskState state, int exit_code = 0) {
  v1::TaskInfo t;
  t.set_state(state);
  t.set_exit_code(exit_code);
  return t;
}

v1::TaskInfo CouldNotRun(const std::string& node, const std::string& suite,
                         const std::string& message) {
  v1::TaskInfo t = Task(v1::TASK_FAILED, 2);
  t.set_task_id("r1.0." + node);
  t.set_node(node);
  t.set_suite(suite);
  t.set_message(message);
  return t;
}

// What `f` wrote, from its start.
std::string Contents(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[512];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
  return out;
}

v1::RunInfo Run(const std::string& state, const std::string& tier, int nodes_failed = 0) {
  v1::RunInfo r;
  r.set_run_id("r1");
  r.set_state(state);
  r.set_tier(tier);
  r.set_nodes_failed(nodes_failed);
  return r;
}

TEST_CASE("tasks are counted by outcome, could not run apart from failures", "[ctl]") {
  TaskCounts c = CountTasks({Task(v1::TASK_COMPLETED), Task(v1::TASK_COMPLETED, 1),
                             Task(v1::TASK_FAILED, 2), Task(v1::TASK_FAILED, 2),
                             Task(v1::TASK_FAILED, 139), Task(v1::TASK_FAILED, -1),
                             Task(v1::TASK_TIMED_OUT, -1), Task(v1::TASK_LOST, -1),
                             Task(v1::TASK_CANCELLED, -1), Task(v1::TASK_RUNNING)});
  CHECK(c.total == 10);
  CHECK(c.ended == 9);
  CHECK(c.completed == 2);
  CHECK(c.could_not_run == 2);
  CHECK(c.failed == 4);
  CHECK(c.cancelled == 1);
}

TEST_CASE("the final line names the tier and counts could-not-run apart", "[ctl]") {
  std::vector<v1::TaskInfo> tasks(13, Task(v1::TASK_COMPLETED));
  tasks.insert(tasks.end(), 23, Task(v1::TASK_FAILED, 2));
  CHECK(SummaryLine(Run("completed", "not rated"), CountTasks(tasks)) ==
        "run r1 completed: not rated; 36/36 tasks ended: 13 completed, 23 could not run, "
        "0 failed; 0 nodes failed");
  tasks.push_back(Task(v1::TASK_LOST, -1));
  tasks.push_back(Task(v1::TASK_CANCELLED, -1));
  CHECK(SummaryLine(Run("completed", "Gold", 1), CountTasks(tasks)) ==
        "run r1 completed: tier Gold; 38/38 tasks ended: 13 completed, 23 could not run, "
        "1 failed, 1 cancelled; 1 node failed");
}

TEST_CASE("the submitted line and the final line say 1 node and 2 nodes", "[ctl]") {
  CHECK(SubmittedLine("r1", "quick", 2, 1) == "run r1: plan 'quick', 2 tasks on 1 node");
  CHECK(SubmittedLine("r1", "quick", 1, 2) == "run r1: plan 'quick', 1 task on 2 nodes");
  // Two tasks that could not run: 0 failed, as the coordinator logs it.
  std::vector<v1::TaskInfo> tasks(2, Task(v1::TASK_FAILED, 2));
  CHECK(SummaryLine(Run("completed", "not rated"), CountTasks(tasks)) ==
        "run r1 completed: not rated; 2/2 tasks ended: 0 completed, 2 could not run, 0 failed; "
        "0 nodes failed");
}

TEST_CASE("exit codes: 3 unfinished, then 1 failed, then 4 not rated, else 0", "[ctl]") {
  const TaskCounts none = CountTasks({Task(v1::TASK_COMPLETED)});
  const TaskCounts cannot = CountTasks({Task(v1::TASK_COMPLETED), Task(v1::TASK_FAILED, 2)});
  const TaskCounts crashed = CountTasks({Task(v1::TASK_COMPLETED), Task(v1::TASK_FAILED, 139)});
  const TaskCounts hung = CountTasks({Task(v1::TASK_TIMED_OUT, -1)});
  const TaskCounts lost = CountTasks({Task(v1::TASK_LOST, -1)});

  CHECK(RunExitCode(Run("completed", "Gold"), none, true) == kExitOk);
  // Could not run is not a failure: the tier speaks for what it left out.
  CHECK(RunExitCode(Run("completed", "Silver"), cannot, true) == kExitOk);
  CHECK(RunExitCode(Run("completed", "Gold"), crashed, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "Gold"), hung, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "Gold"), lost, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "Gold", 1), none, true) == kExitFailed);
  // A failed task or node comes before not rated: it is a fact to act on
  // whatever the coverage.
  CHECK(RunExitCode(Run("completed", "not rated"), none, true) == kExitNotRated);
  CHECK(RunExitCode(Run("completed", "not rated"), cannot, true) == kExitNotRated);
  CHECK(RunExitCode(Run("completed", "not rated", 2), none, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "not rated"), crashed, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", ""), none, true) == kExitNotRated);  // no scorecard
  // Could not finish comes before everything else.
  CHECK(RunExitCode(Run("cancelled", "not rated"), crashed, true) == kExitUnfinished);
  CHECK(RunExitCode(Run("completed", "Gold"), none, false) == kExitUnfinished);
  CHECK(RunExitCode(Run("running", ""), none, true) == kExitUnfinished);
  CHECK(kExitUsage == 2);
  CHECK(kExitNotRated == 4);
  CHECK(kExitNothingMeasured == 5);
  CHECK(kExitCredentials == 6);  // documented in the README and --help
}

TEST_CASE("exit codes: every task could not run is 5, nothing measured, not 4", "[ctl]") {
  const TaskCounts all_cannot =
      CountTasks({Task(v1::TASK_FAILED, 2), Task(v1::TASK_FAILED, 2), Task(v1::TASK_FAILED, 2)});
  const TaskCounts one_cannot = CountTasks({Task(v1::TASK_FAILED, 2)});
  const TaskCounts cannot_or_cancelled =
      CountTasks({Task(v1::TASK_FAILED, 2), Task(v1::TASK_CANCELLED, -1)});
  const TaskCounts one_completed =
      CountTasks({Task(v1::TASK_COMPLETED), Task(v1::TASK_FAILED, 2), Task(v1::TASK_FAILED, 2)});
  const TaskCounts found_failures =  // ran and found failures: it measured
      CountTasks({Task(v1::TASK_COMPLETED, 1), Task(v1::TASK_FAILED, 2)});
  const TaskCounts a_failure =
      CountTasks({Task(v1::TASK_FAILED, 2), Task(v1::TASK_FAILED, 2), Task(v1::TASK_FAILED, 1)});
  const TaskCounts a_timeout = CountTasks({Task(v1::TASK_FAILED, 2), Task(v1::TASK_TIMED_OUT, -1)});

  CHECK(NothingMeasured(all_cannot));
  CHECK(NothingMeasured(cannot_or_cancelled));
  CHECK_FALSE(NothingMeasured(one_completed));
  CHECK_FALSE(NothingMeasured(a_failure));
  CHECK_FALSE(NothingMeasured(CountTasks({})));  // no tasks: nothing to say

  // Every task could not run: 5, whatever tier the scorecard gave.
  CHECK(RunExitCode(Run("completed", "not rated"), all_cannot, true) == kExitNothingMeasured);
  CHECK(RunExitCode(Run("completed", ""), one_cannot, true) == kExitNothingMeasured);
  CHECK(RunExitCode(Run("completed", "Gold"), all_cannot, true) == kExitNothingMeasured);
  CHECK(RunExitCode(Run("completed", "not rated"), cannot_or_cancelled, true) ==
        kExitNothingMeasured);
  // One task completed and the rest could not run: as before, 4 or 0.
  CHECK(RunExitCode(Run("completed", "not rated"), one_completed, true) == kExitNotRated);
  CHECK(RunExitCode(Run("completed", "Silver"), one_completed, true) == kExitOk);
  CHECK(RunExitCode(Run("completed", "not rated"), found_failures, true) == kExitNotRated);
  // A failure comes before 5, and 3 before that.
  CHECK(RunExitCode(Run("completed", "not rated"), a_failure, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "not rated"), a_timeout, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "not rated", 1), all_cannot, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "not rated"), all_cannot, false) == kExitUnfinished);
  CHECK(RunExitCode(Run("cancelled", "not rated"), all_cannot, true) == kExitUnfinished);
}

TEST_CASE("nothing measured: the loud line names the count and the first reason", "[ctl]") {
  const std::vector<v1::TaskInfo> tasks = {
      CouldNotRun("n1", "gemm",
                  "could not run: could not start /usr/local/bin/cmax-bench: No such file or "
                  "directory\nmore"),
      CouldNotRun("n2", "memory", "could not run: something else")};
  CHECK(NothingMeasuredLine(tasks) ==
        "cmaxctl: NOTHING WAS MEASURED: all 2 tasks could not run; first reason: could not "
        "start /usr/local/bin/cmax-bench: No such file or directory (node n1, suite gemm)");
  CHECK(NothingMeasuredLine({CouldNotRun("n3", "rdma", "")}) ==
        "cmaxctl: NOTHING WAS MEASURED: the only task could not run; first reason: (no "
        "message) (node n3, suite rdma)");
  std::vector<v1::TaskInfo> with_cancelled = {Task(v1::TASK_CANCELLED, -1), tasks[1]};
  CHECK(NothingMeasuredLine(with_cancelled) ==
        "cmaxctl: NOTHING WAS MEASURED: all 2 tasks could not run or were cancelled (1 "
        "cancelled); first reason: something else (node n2, suite memory)");
}

TEST_CASE("Finish prints the loud line on its error stream only when nothing was measured",
          "[ctl]") {
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  REQUIRE(out != nullptr);
  REQUIRE(err != nullptr);
  {
    RunProgress p(out, /*tty=*/false, err);
    v1::GetRunResponse final;
    *final.mutable_run() = Run("completed", "not rated");
    *final.add_tasks() = CouldNotRun("n1", "gemm", "could not run: no GPU");
    *final.add_tasks() = CouldNotRun("n2", "gemm", "could not run: no GPU");
    CHECK(p.Finish(true, &final) == kExitNothingMeasured);
    CHECK(Contents(out).find("2/2 tasks ended: 0 completed, 2 could not run, 0 failed") !=
          std::string::npos);
    CHECK(Contents(err) ==
          "cmaxctl: NOTHING WAS MEASURED: all 2 tasks could not run; first reason: no GPU "
          "(node n1, suite gemm)\n");
  }
  std::fclose(out);
  std::fclose(err);
  out = std::tmpfile();
  err = std::tmpfile();
  {
    RunProgress p(out, /*tty=*/false, err);
    v1::GetRunResponse final;
    *final.mutable_run() = Run("completed", "not rated");
    *final.add_tasks() = Task(v1::TASK_COMPLETED);
    *final.add_tasks() = CouldNotRun("n2", "gemm", "could not run: no GPU");
    CHECK(p.Finish(true, &final) == kExitNotRated);
    CHECK(Contents(err).empty());
  }
  std::fclose(out);
  std::fclose(err);
}

}  // namespace
}  // namespace cmax::ctl

namespace cmax::ctl {
namespace {

TEST_CASE("an agent's text cannot drive the terminal: controls are shown, not sent",
          "[ctl][security]") {
  // A window title, an erased line and a carriage return over a FAIL, an
  // 8-bit CSI (C1), a bell: each made visible.
  const std::string hostile =
      "\x1b]0;all good\x07\x1b[2K\rPASS \xc2\x9b" "31m\x7f\x01";
  const std::string shown = ForTerminal(hostile);
  INFO(shown);
  for (char c : shown) {
    const auto u = static_cast<unsigned char>(c);
    CHECK((u >= 0x20 || c == '\n' || c == '\t'));
    CHECK(u != 0x7f);
  }
  CHECK(shown.find("\xc2\x9b") == std::string::npos);
  CHECK(shown == "\\x1b]0;all good\\x07\\x1b[2K\\x0dPASS \\u009b31m\\x7f\\x01");
  // Text, newlines, tabs and other UTF-8 (an em dash, a GPU model) stay.
  CHECK(ForTerminal("FAIL n1 gemm \xe2\x80\x94 NVIDIA H100\n\tstderr: x") ==
        "FAIL n1 gemm \xe2\x80\x94 NVIDIA H100\n\tstderr: x");
}

TEST_CASE("a failed task's message reaches the progress lines with its controls shown",
          "[ctl][security]") {
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  REQUIRE(out != nullptr);
  REQUIRE(err != nullptr);
  RunProgress p(out, /*tty=*/false, err);
  v1::RunEvent ev;
  v1::TaskInfo* t = ev.mutable_task();
  t->set_task_id("r1.0.n1");
  t->set_node("n1");
  t->set_suite("gemm");
  t->set_state(v1::TASK_FAILED);
  t->set_exit_code(1);
  t->set_message("\x1b[2K\rgemm passed");
  p.OnEvent(ev);
  const std::string printed = Contents(out);
  INFO(printed);
  CHECK(printed.find('\x1b') == std::string::npos);
  CHECK(printed.find('\r') == std::string::npos);
  CHECK(printed.find("FAIL n1 gemm") != std::string::npos);
  CHECK(printed.find("\\x1b[2K\\x0dgemm passed") != std::string::npos);
  std::fclose(out);
  std::fclose(err);
}

// No raw C0 control but newline and tab, no DEL, no C1 (UTF-8 U+0080..U+009F).
void CheckNoControls(const std::string& shown) {
  INFO(shown);
  for (size_t i = 0; i < shown.size(); ++i) {
    const auto u = static_cast<unsigned char>(shown[i]);
    CHECK((u >= 0x20 || shown[i] == '\n' || shown[i] == '\t'));
    CHECK(u != 0x7f);
    if (u == 0xc2 && i + 1 < shown.size()) {
      const auto next = static_cast<unsigned char>(shown[i + 1]);
      CHECK(!(next >= 0x80 && next <= 0x9f));
    }
  }
}

TEST_CASE("cmaxctl history shows agents' controls, node and fleet, text and JSON",
          "[ctl][security]") {
  // A finding title that would erase the line and recolour the verdict, a
  // window title in a reason id, an 8-bit CSI in a node name, a DEL.
  const std::string title = "\x1b[2K\rall good \x1b[32mPASS";
  const std::string rule = "finding.\x1b]0;owned\x07";
  const std::string node = "node-b\xc2\x9b" "31m";
  v1::GetHistoryResponse resp;
  v1::NodeHistory* h = resp.mutable_node();
  h->set_node(node);
  h->set_state("rejected");
  v1::NodeRunSummary* run = h->add_runs();
  run->set_run_id("r1");
  run->set_node(node);
  run->set_verdict("fail");
  run->set_plan("quick\x7f");
  run->set_finished_unix_ns(1700000000000000000);
  v1::HistoryReason* reason = run->add_reasons();
  reason->set_id(rule);
  reason->set_outcome("fail");
  reason->set_text(title);
  v1::ReasonSeen* seen = h->add_reasons();
  seen->set_id(rule);
  seen->set_text(title);
  seen->set_runs(1);
  v1::Incident* incident = h->add_incidents();
  incident->set_node(node);
  incident->set_opened_run("r1");
  *incident->add_reasons() = *reason;
  v1::ReliabilitySummary* fleet = resp.mutable_fleet();
  fleet->set_summary(absl::StrCat("history: ", title));
  *fleet->add_top_reasons() = *seen;
  *fleet->add_open() = *incident;

  const std::string node_text = HistoryOutput(resp, /*node=*/true, /*json=*/false);
  CheckNoControls(node_text);
  CHECK(node_text.find("\\x1b[2K\\x0dall good \\x1b[32mPASS") != std::string::npos);
  CHECK(node_text.find("\\x1b]0;owned\\x07") != std::string::npos);
  CHECK(node_text.find("node-b\\u009b31m") != std::string::npos);

  const std::string fleet_text = HistoryOutput(resp, /*node=*/false, /*json=*/false);
  CheckNoControls(fleet_text);
  CHECK(fleet_text.find("\\x1b[2K\\x0dall good") != std::string::npos);

  // --json: still the same JSON (it parses back to the same strings), with
  // nothing raw a terminal would act on.
  const std::string json = HistoryOutput(resp, /*node=*/true, /*json=*/true);
  CheckNoControls(json);
  v1::GetHistoryResponse back;
  REQUIRE(google::protobuf::util::JsonStringToMessage(json, &back).ok());
  CHECK(back.node().node() == node);
  CHECK(back.node().runs(0).reasons(0).text() == title);
  CHECK(back.node().runs(0).plan() == "quick\x7f");
  CHECK(back.fleet().summary() == absl::StrCat("history: ", title));
}

TEST_CASE("ForTerminalJson keeps JSON whitespace and escapes what would reach the terminal",
          "[ctl][security]") {
  CHECK(ForTerminalJson("{\n\t\"a\": \"x\x1b[2Ky\xc2\x9b\x7f\"\n}") ==
        "{\n\t\"a\": \"x\\u001b[2Ky\\u009b\\u007f\"\n}");
  CHECK(ForTerminalJson("{\"gpu\": \"NVIDIA H100 \xe2\x80\x94 80GB\"}") ==
        "{\"gpu\": \"NVIDIA H100 \xe2\x80\x94 80GB\"}");
}

TEST_CASE("a task first seen running is said, one first seen pending is not", "[ctl]") {
  FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  RunProgress p(out, /*tty=*/false, out);
  auto say = [&](const std::string& node, v1::TaskState state) {
    v1::RunEvent ev;
    v1::TaskInfo* t = ev.mutable_task();
    t->set_task_id("r1.0." + node);
    t->set_node(node);
    t->set_suite("burnin");
    t->set_state(state);
    p.OnEvent(ev);
  };
  say("n1", v1::TASK_PENDING);
  say("n2", v1::TASK_RUNNING);  // subscribed after n2 started
  say("n1", v1::TASK_RUNNING);
  say("n2", v1::TASK_RUNNING);  // the same state again says nothing
  const std::string printed = Contents(out);
  INFO(printed);
  CHECK(printed == "burnin on n2: running\nburnin on n1: running\n");
  std::fclose(out);
}

}  // namespace
}  // namespace cmax::ctl
