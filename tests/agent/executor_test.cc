// The executor against real `cmax-bench selftest` children, with a fake
// outbox in place of the coordinator stream.
#include "agent/executor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "common/time_util.h"
#include "test_util.h"

using namespace std::chrono_literals;
using cmax::agent::Executor;
using cmax::agent::ExecutorOptions;
using cmax::agent::TaskKey;
using cmax::agent::TaskStore;
using cmax::agent::testing::AppendFile;
using cmax::agent::testing::PidWithCwd;
using cmax::agent::testing::ProcList;
using cmax::agent::testing::TempDir;
using cmax::agent::testing::WaitFor;
namespace v1 = cmax::v1;

namespace {

// Records what the executor sends, as the coordinator would see it.
class FakeOutbox : public cmax::agent::Outbox {
 public:
  bool Send(uint64_t generation, v1::AgentMessage message) override {
    absl::MutexLock lock(&mu_);
    if (!up_ || generation != generation_) return false;
    messages_.push_back(std::move(message));
    return true;
  }
  bool HasRoom(uint64_t generation) const override {
    absl::MutexLock lock(&mu_);
    return up_ && generation == generation_;
  }
  void SetUp(bool up, uint64_t generation) {
    absl::MutexLock lock(&mu_);
    up_ = up;
    generation_ = generation;
  }
  std::vector<v1::AgentMessage> messages() const {
    absl::MutexLock lock(&mu_);
    return messages_;
  }
  void Clear() {
    absl::MutexLock lock(&mu_);
    messages_.clear();
  }
  // The end status of (task, rank), if one was sent.
  std::optional<v1::TaskStatus> EndStatus(const std::string& task, int rank = 0) const {
    std::optional<v1::TaskStatus> found;
    for (const auto& m : messages()) {
      if (m.has_status() && m.status().task_id() == task && m.status().rank() == rank &&
          m.status().state() != v1::TASK_RUNNING) {
        found = m.status();
      }
    }
    return found;
  }
  std::optional<v1::TaskStatus> Running(const std::string& task) const {
    for (const auto& m : messages()) {
      if (m.has_status() && m.status().task_id() == task &&
          m.status().state() == v1::TASK_RUNNING) {
        return m.status();
      }
    }
    return std::nullopt;
  }
  // seq -> record for (task, rank), every copy counted in `copies`.
  std::map<int64_t, v1::Record> Records(const std::string& task, int rank = 0,
                                        int* copies = nullptr) const {
    std::map<int64_t, v1::Record> out;
    int n = 0;
    for (const auto& m : messages()) {
      for (const auto& r : m.records().records()) {
        if (r.task_id() != task || r.rank() != rank) continue;
        out[r.seq()] = r.record();
        ++n;
      }
    }
    if (copies) *copies = n;
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  bool up_ = true;
  uint64_t generation_ = 1;
  std::vector<v1::AgentMessage> messages_;
};

ExecutorOptions Options(const std::string& work_dir) {
  ExecutorOptions o;
  o.work_dir = work_dir;
  o.bench_dir = CMAX_TEST_BIN_DIR;
  o.node_name = "test-node";
  o.kill_grace_ms = 1000;
  return o;
}

v1::TaskAssignment Selftest(const std::string& id, std::vector<std::string> args,
                            int timeout_s = 30) {
  v1::TaskAssignment a;
  a.set_task_id(id);
  a.set_attempt(0);
  a.set_run_id("run-1");
  a.set_suite("selftest");
  for (auto& arg : args) a.add_args(arg);
  a.set_timeout_seconds(timeout_s);
  return a;
}

// An executor connected to a fake outbox (stream generation 1).
struct Harness {
  explicit Harness(const std::string& work_dir) : executor(Options(work_dir), &outbox) {}
  void Start() {
    executor.Start();
    executor.OnConnected(1);
  }
  v1::TaskStatus WaitEnd(const std::string& task, std::chrono::milliseconds timeout = 20s,
                         int rank = 0) {
    REQUIRE(WaitFor([&] { return outbox.EndStatus(task, rank).has_value(); }, timeout));
    return *outbox.EndStatus(task, rank);
  }
  FakeOutbox outbox;
  Executor executor;
};

}  // namespace

TEST_CASE("a selftest child completes and every record arrives before its status",
          "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  h.executor.Assign(Selftest("ok1", {"--mode=ok", "--records=25"}));
  v1::TaskStatus end = h.WaitEnd("ok1");
  CHECK(end.state() == v1::TASK_COMPLETED);
  CHECK(end.exit_code() == 0);
  CHECK(end.attempt() == 0);
  CHECK(end.started_unix_ns() > 0);
  CHECK(end.ended_unix_ns() >= end.started_unix_ns());
  REQUIRE(h.outbox.Running("ok1").has_value());

  auto records = h.outbox.Records("ok1");
  // 25 measurements plus the closing progress record, seq 0..N-1.
  CHECK(end.record_count() == 26);
  REQUIRE(records.size() == 26);
  CHECK(records.begin()->first == 0);
  CHECK(records.rbegin()->first == 25);
  int measurements = 0;
  for (const auto& [seq, r] : records) {
    if (r.has_measurement()) {
      CHECK(r.measurement().value() == seq);  // selftest_sequence counts up
      ++measurements;
    }
  }
  CHECK(measurements == 25);
  // The end status comes after the last record batch.
  auto msgs = h.outbox.messages();
  size_t last_batch = 0, status_at = 0;
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (msgs[i].has_records()) last_batch = i;
    if (msgs[i].has_status() && msgs[i].status().state() == v1::TASK_COMPLETED)
      status_at = i;
  }
  CHECK(status_at > last_batch);

  // Task directory layout.
  TaskStore store(dir.path());
  TaskKey key{"ok1", 0, 0};
  CHECK(store.Exists(key));
  auto stored = store.ReadStatus(key);
  REQUIRE(stored.ok());
  CHECK(stored->state() == v1::TASK_COMPLETED);
  auto assignment = store.ReadAssignment(key);
  REQUIRE(assignment.ok());
  CHECK(assignment->suite() == "selftest");

  // Acknowledging everything removes the directory.
  v1::Ack ack;
  ack.set_task_id("ok1");
  ack.set_next_seq(26);
  h.executor.HandleAck(ack);
  v1::StatusAck sack;
  sack.set_task_id("ok1");
  h.executor.HandleStatusAck(sack);
  CHECK(WaitFor([&] { return !store.Exists(key); }, 5s));
  CHECK(WaitFor([&] { return h.executor.HeldTasks().empty(); }, 2s));
  // A duplicate assignment after that does not run it again.
  h.executor.Assign(Selftest("ok1", {"--mode=ok", "--records=25"}));
  std::this_thread::sleep_for(300ms);
  CHECK(h.executor.spawned_count() == 1);
}

TEST_CASE("a status ack before the records are acked keeps the directory",
          "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  h.executor.Assign(Selftest("keep", {"--records=3"}));
  v1::TaskStatus end = h.WaitEnd("keep");
  v1::StatusAck sack;
  sack.set_task_id("keep");
  h.executor.HandleStatusAck(sack);
  v1::Ack ack;
  ack.set_task_id("keep");
  ack.set_next_seq(end.record_count() - 1);
  h.executor.HandleAck(ack);
  std::this_thread::sleep_for(300ms);
  TaskStore store(dir.path());
  CHECK(store.Exists(TaskKey{"keep", 0, 0}));
  ack.set_next_seq(end.record_count());
  h.executor.HandleAck(ack);
  CHECK(WaitFor([&] { return !store.Exists(TaskKey{"keep", 0, 0}); }, 5s));
}

TEST_CASE("a crashing child fails with its signal and stderr tail", "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  h.executor.Assign(Selftest("crash1", {"--mode=crash", "--records=4"}));
  v1::TaskStatus end = h.WaitEnd("crash1");
  CHECK(end.state() == v1::TASK_FAILED);
  CHECK_THAT(end.message(),
             Catch::StartsWith("crashed: ") && Catch::Contains("signal 6"));
  CHECK(end.signal() == 6);
  CHECK(end.exit_code() == -1);
  CHECK_THAT(end.stderr_tail(), Catch::Contains("about to crash"));
  CHECK(end.record_count() == 5);
  CHECK(h.outbox.Records("crash1").size() == 5);
}

TEST_CASE("exit 2 is a failure to run, with the reason", "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  h.executor.Assign(Selftest("err1", {"--mode=error"}));
  v1::TaskStatus end = h.WaitEnd("err1");
  CHECK(end.state() == v1::TASK_FAILED);
  CHECK(end.exit_code() == 2);
  CHECK_THAT(end.message(), Catch::StartsWith("could not run") &&
                                Catch::Contains("asked to fail to run"));
}

TEST_CASE("exit 1 (found failures) is completed", "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  h.executor.Assign(Selftest("fail1", {"--mode=fail", "--records=2"}));
  v1::TaskStatus end = h.WaitEnd("fail1");
  CHECK(end.state() == v1::TASK_COMPLETED);
  CHECK(end.exit_code() == 1);
  bool has_finding = false;
  for (const auto& [seq, r] : h.outbox.Records("fail1")) has_finding |= r.has_finding();
  CHECK(has_finding);
}

TEST_CASE("a child past its timeout is killed and timed out", "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  auto start = std::chrono::steady_clock::now();
  h.executor.Assign(Selftest("slow1", {"--mode=sleep", "--seconds=30"}, /*timeout_s=*/1));
  v1::TaskStatus end = h.WaitEnd("slow1", 15s);
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(end.state() == v1::TASK_TIMED_OUT);
  CHECK(end.message() == "killed after 1 s timeout");
  CHECK(took < 8s);
  CHECK(took >= 1s);
  CHECK(end.record_count() >= 1);  // the "sleeping" progress record
}

TEST_CASE("a cancelled child is stopped and cancelled", "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  h.executor.Assign(Selftest("long1", {"--mode=sleep", "--seconds=30"}));
  REQUIRE(WaitFor([&] { return h.outbox.Running("long1").has_value(); }, 10s));
  v1::CancelTask c;
  c.set_task_id("long1");
  c.set_reason("operator asked");
  h.executor.Cancel(c);
  v1::TaskStatus end = h.WaitEnd("long1", 10s);
  CHECK(end.state() == v1::TASK_CANCELLED);
  CHECK_THAT(end.message(), Catch::Contains("operator asked"));
}

TEST_CASE("rejected assignments spawn nothing", "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  auto bad_suite = Selftest("rej1", {});
  bad_suite.set_suite("bash");
  auto bad_arg = Selftest("rej2", {"--mode=ok;rm"});
  auto bad_env = Selftest("rej3", {"--mode=ok"});
  (*bad_env.mutable_env())["LD_PRELOAD"] = "/tmp/evil.so";
  auto bad_id = Selftest("../etc", {"--mode=ok"});
  auto bad_flag = Selftest("rej5", {"--exec=/bin/sh"});
  auto bad_launcher = Selftest("rej6", {"--mode=ok"});
  bad_launcher.set_launcher("mpirun");
  for (const auto& a : {bad_suite, bad_arg, bad_env, bad_id, bad_flag, bad_launcher}) {
    h.executor.Assign(a);
  }
  for (const char* id : {"rej1", "rej3", "../etc", "rej6"}) {
    v1::TaskStatus end = h.WaitEnd(id, 5s);
    CHECK(end.state() == v1::TASK_FAILED);
    CHECK(end.exit_code() == -1);
    CHECK_THAT(end.message(), Catch::StartsWith("rejected: "));
  }
  // Arguments the suite's declaration refuses: the suite could not run
  // (exit 2, like a suite exiting 2), with the validator's reason.
  for (const char* id : {"rej2", "rej5"}) {
    v1::TaskStatus end = h.WaitEnd(id, 5s);
    CHECK(end.state() == v1::TASK_FAILED);
    CHECK(end.exit_code() == 2);
    CHECK_THAT(end.message(), Catch::StartsWith("could not run: "));
  }
  CHECK_THAT(h.outbox.EndStatus("rej5")->message(),
             Catch::Contains("does not accept --exec"));
  CHECK_THAT(h.outbox.EndStatus("rej2")->message(), Catch::Contains("mode"));
  CHECK_THAT(h.outbox.EndStatus("rej1")->message(), Catch::Contains("bash"));
  CHECK_THAT(h.outbox.EndStatus("rej3")->message(), Catch::Contains("LD_PRELOAD"));
  CHECK(h.executor.spawned_count() == 0);
  CHECK(h.outbox.Running("rej1") == std::nullopt);
  // No task directory was made for any of them.
  struct stat st;
  CHECK(stat((dir.path() + "/tasks/rej1.a0.r0").c_str(), &st) != 0);
  CHECK(stat((dir.path() + "/tasks/rej2.a0.r0").c_str(), &st) != 0);
}

TEST_CASE("a suite binary missing on the node could not run (exit 2), naming the binary",
          "[agent][executor]") {
  TempDir dir;
  TempDir empty_bench;  // a node without cmax-bench (e.g. only part of a bundle copied)
  FakeOutbox outbox;
  auto opts = Options(dir.path());
  opts.bench_dir = empty_bench.path();
  Executor ex(opts, &outbox);
  ex.Start();
  ex.OnConnected(1);
  ex.Assign(Selftest("nobin1", {"--mode=ok"}));
  REQUIRE(WaitFor([&] { return outbox.EndStatus("nobin1").has_value(); }, 5s));
  v1::TaskStatus end = *outbox.EndStatus("nobin1");
  CHECK(end.state() == v1::TASK_FAILED);
  CHECK(end.exit_code() == 2);
  CHECK(end.signal() == 0);
  CHECK_THAT(end.message(), Catch::StartsWith("could not run: ") &&
                                Catch::Contains(empty_bench.path() + "/cmax-bench"));
  // The cause first, in words the same for every suite of that binary, so
  // the scorecard can say it once for all of them.
  CHECK(end.message() == "could not run: cmax-bench is missing: " + empty_bench.path() +
                             "/cmax-bench is not an executable file");
  CHECK(ex.spawned_count() == 0);
  CHECK(outbox.Running("nobin1") == std::nullopt);
}

TEST_CASE("an unwritable work dir fails the task and the executor keeps serving",
          "[agent][executor]") {
  TempDir dir;
  AppendFile(dir.path() + "/file", "not a directory");
  FakeOutbox outbox;
  Executor bad(Options(dir.path() + "/file/work"), &outbox);
  bad.Start();
  bad.OnConnected(1);
  bad.Assign(Selftest("wd1", {"--mode=ok"}));
  REQUIRE(WaitFor([&] { return outbox.EndStatus("wd1").has_value(); }, 5s));
  auto end = *outbox.EndStatus("wd1");
  CHECK(end.state() == v1::TASK_FAILED);
  CHECK_THAT(end.message(), Catch::StartsWith("work dir " + dir.path() + "/file/work") &&
                                Catch::Contains("Not a directory"));
  CHECK(bad.spawned_count() == 0);
  // Still serving: a second assignment gets an answer too.
  bad.Assign(Selftest("wd2", {"--mode=ok"}));
  CHECK(WaitFor([&] { return outbox.EndStatus("wd2").has_value(); }, 5s));
}

TEST_CASE("a repeated assignment does not start the task twice", "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  auto a = Selftest("dup1", {"--mode=sleep", "--seconds=1"});
  h.executor.Assign(a);
  h.executor.Assign(a);
  v1::TaskStatus end = h.WaitEnd("dup1");
  CHECK(end.state() == v1::TASK_COMPLETED);
  // Once finished, the same assignment gets its status again, not a new run.
  h.outbox.Clear();
  h.executor.Assign(a);
  REQUIRE(WaitFor([&] { return h.outbox.EndStatus("dup1").has_value(); }, 5s));
  CHECK(h.executor.spawned_count() == 1);
}

TEST_CASE("a group task starts one child per rank, each with its own spool",
          "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  auto a = Selftest("gang1", {"--records=3"});
  a.set_group("gang1");
  a.set_world_size(4);
  a.set_local_world_size(2);
  auto* r0 = a.add_ranks();
  r0->set_rank(2);
  r0->set_local_rank(0);
  auto* r1 = a.add_ranks();
  r1->set_rank(3);
  r1->set_local_rank(1);
  h.executor.Assign(a);
  auto e2 = h.WaitEnd("gang1", 20s, 2);
  auto e3 = h.WaitEnd("gang1", 20s, 3);
  CHECK(e2.state() == v1::TASK_COMPLETED);
  CHECK(e3.state() == v1::TASK_COMPLETED);
  CHECK(h.outbox.Records("gang1", 2).size() == 4);
  CHECK(h.outbox.Records("gang1", 3).size() == 4);
  TaskStore store(dir.path());
  CHECK(store.Exists(TaskKey{"gang1", 0, 2}));
  CHECK(store.Exists(TaskKey{"gang1", 0, 3}));
  CHECK(h.executor.spawned_count() == 2);
}

TEST_CASE("a start time in the agent's shifted clock delays the spawn",
          "[agent][executor]") {
  TempDir dir;
  FakeOutbox outbox;
  auto opts = Options(dir.path());
  opts.clock_offset_ns = int64_t{3600} * 1000000000;  // agent clock one hour ahead
  Executor ex(opts, &outbox);
  ex.Start();
  ex.OnConnected(1);
  const int64_t agent_now = cmax::NowUnixNs() + opts.clock_offset_ns;
  auto a = Selftest("bar1", {"--records=1"});
  a.set_start_at_agent_ns(agent_now + 800 * 1000000LL);
  auto t0 = std::chrono::steady_clock::now();
  ex.Assign(a);
  REQUIRE(WaitFor([&] { return outbox.Running("bar1").has_value(); }, 10s));
  auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(waited >= 700ms);
  CHECK(waited < 5s);
  CHECK(outbox.Running("bar1")->started_unix_ns() >= a.start_at_agent_ns());
}

TEST_CASE("a task with a start time starts no earlier and its spool opens with the start",
          "[agent][executor]") {
  TempDir dir;
  FakeOutbox outbox;
  auto opts = Options(dir.path());
  opts.clock_offset_ns = -int64_t{7200} * 1000000000;  // agent clock two hours behind
  Executor ex(opts, &outbox);
  ex.Start();
  ex.OnConnected(1);
  const int64_t agent_now = cmax::NowUnixNs() + opts.clock_offset_ns;
  auto a = Selftest("st1", {"--records=3"});
  a.set_start_at_agent_ns(agent_now + 500 * 1000000LL);
  ex.Assign(a);
  REQUIRE(WaitFor([&] { return outbox.EndStatus("st1").has_value(); }, 20s));
  v1::TaskStatus end = *outbox.EndStatus("st1");
  CHECK(end.state() == v1::TASK_COMPLETED);
  // 3 measurements, the closing progress record and the start record.
  CHECK(end.record_count() == 5);
  CHECK(ex.spawned_count() == 1);
  auto records = outbox.Records("st1");
  REQUIRE(records.size() == 5);
  CHECK(records.rbegin()->first == 4);
  const v1::Record& first = records.at(0);
  REQUIRE(first.has_sample());
  const v1::Sample& s = first.sample();
  CHECK(s.suite() == "selftest");
  CHECK(s.metric() == "cmax_task_start");
  CHECK(s.unit() == "s");
  CHECK(s.labels().at("clock") == "node");
  CHECK(s.labels().at("scheduled_unix_ns") == std::to_string(a.start_at_agent_ns()));
  int64_t started = 0;
  REQUIRE(absl::SimpleAtoi(s.labels().at("started_unix_ns"), &started));
  CHECK(started >= a.start_at_agent_ns());           // no earlier than told
  CHECK(started < a.start_at_agent_ns() + 2000000000);  // and not much later
  CHECK(first.time_unix_ns() == started);
  CHECK(s.value() == Approx((started - a.start_at_agent_ns()) / 1e9).margin(1e-6));
  CHECK(s.value() >= 0);
  // The suite's own records follow, numbered from 1.
  CHECK(records.at(1).has_measurement());
  CHECK(records.at(1).measurement().value() == 0);
  // The spool on disk holds the same first line.
  std::string spool = cmax::agent::testing::ReadFile(
      TaskStore(dir.path()).SpoolPath(TaskKey{"st1", 0, 0}));
  CHECK_THAT(spool.substr(0, spool.find('\n')), Catch::Contains("cmax_task_start"));
  // A task without a start time has no such record (the first test counts 26).
}

TEST_CASE("after a reconnect records are resent from the acked seq",
          "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  h.executor.Assign(Selftest("re1", {"--records=9"}));
  v1::TaskStatus end = h.WaitEnd("re1");
  REQUIRE(end.record_count() == 10);
  v1::Ack ack;
  ack.set_task_id("re1");
  ack.set_next_seq(6);
  h.executor.HandleAck(ack);
  std::this_thread::sleep_for(200ms);
  h.outbox.Clear();
  h.outbox.SetUp(true, 2);
  h.executor.OnConnected(2);
  REQUIRE(WaitFor([&] { return h.outbox.EndStatus("re1").has_value(); }, 5s));
  int copies = 0;
  auto resent = h.outbox.Records("re1", 0, &copies);
  REQUIRE(resent.size() == 4);
  CHECK(copies == 4);
  CHECK(resent.begin()->first == 6);
  CHECK(resent.rbegin()->first == 9);
}

TEST_CASE("while disconnected nothing is lost", "[agent][executor]") {
  TempDir dir;
  Harness h(dir.path());
  h.outbox.SetUp(false, 1);
  h.Start();
  h.executor.Assign(Selftest("off1", {"--records=5"}));
  REQUIRE(WaitFor([&] { return h.executor.spawned_count() == 1; }, 5s));
  std::this_thread::sleep_for(1s);  // the child finishes while we are offline
  CHECK(h.outbox.messages().empty());
  h.outbox.SetUp(true, 2);
  h.executor.OnConnected(2);
  v1::TaskStatus end = h.WaitEnd("off1");
  CHECK(end.state() == v1::TASK_COMPLETED);
  CHECK(h.outbox.Records("off1").size() == 6);
}

TEST_CASE("after an agent restart held tasks are reported and resent from seq 0",
          "[agent][executor]") {
  TempDir dir;
  TaskStore store(dir.path());
  TaskKey orphan{"old1", 2, 0};
  REQUIRE(store.Create(orphan, Selftest("old1", {})).ok());
  AppendFile(store.SpoolPath(orphan),
             "{\"log\":{\"level\":\"info\",\"message\":\"one\"}}\n"
             "garbage\n"
             "{\"log\":{\"level\":\"info\",\"message\":\"three\"}}\n");
  Harness h(dir.path());
  REQUIRE(h.executor.LoadStoredTasks().ok());
  auto held = h.executor.HeldTasks();
  REQUIRE(held.size() == 1);
  CHECK(held[0].task_id() == "old1");
  CHECK(held[0].attempt() == 2);
  CHECK_FALSE(held[0].running());
  h.Start();
  v1::TaskStatus end = h.WaitEnd("old1", 5s);
  CHECK(end.state() == v1::TASK_FAILED);
  CHECK(end.message() == "agent restarted; the task process died with it");
  CHECK(end.record_count() == 3);
  auto records = h.outbox.Records("old1");
  REQUIRE(records.size() == 3);
  CHECK(records[0].log().message() == "one");
  CHECK_THAT(records[1].log().message(), Catch::StartsWith("malformed record line 1: "));
  CHECK(records[2].log().message() == "three");
  CHECK(h.executor.spawned_count() == 0);
}

TEST_CASE("stopping the executor stops its children", "[agent][executor]") {
  TempDir dir;
  auto h = std::make_unique<Harness>(dir.path());
  h->Start();
  h->executor.Assign(Selftest("stop1", {"--mode=sleep", "--seconds=30"}));
  REQUIRE(WaitFor([&] { return h->outbox.Running("stop1").has_value(); }, 10s));
  auto start = std::chrono::steady_clock::now();
  h->executor.Stop();
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  // A new executor on the same work dir marks the task as died with the agent.
  h.reset();
  Harness again(dir.path());
  REQUIRE(again.executor.LoadStoredTasks().ok());
  again.Start();
  v1::TaskStatus end = again.WaitEnd("stop1", 5s);
  CHECK(end.message() == "agent restarted; the task process died with it");
}

TEST_CASE("records go out in batches of at most 500 and within the unacked window",
          "[agent][executor]") {
  TempDir dir;
  FakeOutbox outbox;
  auto opts = Options(dir.path());
  opts.max_unacked_records = 1200;
  Executor ex(opts, &outbox);
  ex.Start();
  ex.OnConnected(1);
  ex.Assign(Selftest("many", {"--records=3000"}));
  // Without acks the executor stops at the window.
  REQUIRE(WaitFor([&] { return outbox.Records("many").size() == 1200; }, 20s));
  std::this_thread::sleep_for(500ms);
  CHECK(outbox.Records("many").size() == 1200);
  CHECK_FALSE(outbox.EndStatus("many").has_value());
  for (const auto& m : outbox.messages()) {
    if (m.has_records()) CHECK(m.records().records_size() <= 500);
  }
  // Acks open the window until everything is delivered.
  REQUIRE(WaitFor(
      [&] {
        v1::Ack ack;
        ack.set_task_id("many");
        ack.set_next_seq(static_cast<int64_t>(outbox.Records("many").size()));
        ex.HandleAck(ack);
        return outbox.EndStatus("many").has_value();
      },
      30s));
  auto records = outbox.Records("many");
  CHECK(records.size() == 3001);
  CHECK(outbox.EndStatus("many")->record_count() == 3001);
  CHECK(records.rbegin()->first == 3000);
}

TEST_CASE("a rank's child gets its argv, environment and directory",
          "[agent][executor]") {
  TempDir dir;
  FakeOutbox outbox;
  auto opts = Options(dir.path());
  opts.root = "/some/fixture/root";  // selftest does not take --root
  Executor ex(opts, &outbox);
  ex.Start();
  ex.OnConnected(1);
  auto a = Selftest("envt", {"--mode=sleep", "--seconds=3"});
  a.set_attempt(2);
  a.set_group("envt");
  a.set_world_size(8);
  a.set_local_world_size(4);
  auto* r = a.add_ranks();
  r->set_rank(5);
  r->set_local_rank(1);
  (*a.mutable_env())["NCCL_DEBUG"] = "INFO";
  ex.Assign(a);
  TaskStore store(dir.path());
  const std::string task_dir = store.DirFor(TaskKey{"envt", 2, 5});
  const std::string binary = std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench";
  int pid = 0;
  std::vector<std::string> argv;
  // Between fork and exec the child still shows the test's own cmdline:
  // wait for the exec.
  REQUIRE(WaitFor(
      [&] {
        pid = PidWithCwd(task_dir);
        if (pid == 0) return false;
        argv = ProcList(pid, "cmdline");
        return !argv.empty() && argv[0] == binary;
      },
      10s));
  std::vector<std::string> env = ProcList(pid, "environ");
  std::vector<std::string> want_argv = {binary, "selftest", "--mode=sleep", "--seconds=3",
                                        "--jsonl"};
  CHECK(argv == want_argv);
  auto has = [&](const std::string& kv) {
    return std::find(env.begin(), env.end(), kv) != env.end();
  };
  CHECK(has("CMAX_TASK_ID=envt"));
  CHECK(has("CMAX_NODE_NAME=test-node"));
  CHECK(has("CMAX_TASK_DIR=" + task_dir));
  CHECK(has("CMAX_RANK=5"));
  CHECK(has("CMAX_WORLD_SIZE=8"));
  CHECK(has("CMAX_LOCAL_RANK=1"));
  CHECK(has("CMAX_LOCAL_WORLD_SIZE=4"));
  CHECK(has("CMAX_GROUP=envt"));
  CHECK(has("NCCL_DEBUG=INFO"));
  const char* path = getenv("PATH");
  if (path) CHECK(has(std::string("PATH=") + path));  // inherited
  ex.Stop();
}

TEST_CASE("a full executor queue blocks the caller and loses no assignment",
          "[agent][executor][security]") {
  TempDir dir;
  FakeOutbox outbox;
  auto opts = Options(dir.path());
  opts.max_inbox = 2;
  Executor ex(opts, &outbox);
  ex.OnConnected(1);  // the inbox now holds one event; the executor is not started
  // The connection's reader posts 6 assignments into a queue of 2: before
  // the executor runs, the third post must wait, not drop.
  std::atomic<int> posted{0};
  std::thread reader([&] {
    for (int i = 0; i < 6; ++i) {
      ex.Assign(Selftest("bp" + std::to_string(i), {"--records=1"}));
      ++posted;
    }
  });
  std::this_thread::sleep_for(300ms);
  CHECK(posted.load() == 1);  // one fits next to the connected event; the next waits
  ex.Start();
  reader.join();
  CHECK(posted.load() == 6);
  for (int i = 0; i < 6; ++i) {
    const std::string id = "bp" + std::to_string(i);
    INFO(id);
    REQUIRE(WaitFor([&] { return outbox.EndStatus(id).has_value(); }, 20s));
    CHECK(outbox.EndStatus(id)->state() == v1::TASK_COMPLETED);
  }
  CHECK(ex.spawned_count() == 6);
  ex.Stop();
}

TEST_CASE("what a suite leaves running is killed when it exits, and the status says so",
          "[agent][executor][security]") {
  TempDir dir;
  Harness h(dir.path());
  h.Start();
  // The suite exits at once; its child would write 5 records 2 s later.
  h.executor.Assign(Selftest("orph", {"--mode=orphan", "--seconds=2", "--records=5"}));
  v1::TaskStatus end = h.WaitEnd("orph");
  CHECK(end.state() == v1::TASK_COMPLETED);
  CHECK_THAT(end.message(), Catch::Contains("killed 1 leftover process"));
  TaskStore store(dir.path());
  const std::string task_dir = store.DirFor(TaskKey{"orph", 0, 0});
  CHECK(PidWithCwd(task_dir) == 0);  // nothing of the suite runs any more
  std::this_thread::sleep_for(2500ms);
  // Nothing was written after the count: the spool holds what was counted.
  CHECK(cmax::agent::testing::ReadFile(store.SpoolPath(TaskKey{"orph", 0, 0})).find(
            "selftest_orphan_sequence") == std::string::npos);
  CHECK(end.record_count() == 1);
  CHECK(h.outbox.Records("orph").size() == 1);
}

TEST_CASE("a group assignment resent after an agent restart does not rerun a finished rank",
          "[agent][executor][security]") {
  TempDir dir;
  auto a = Selftest("grp", {"--mode=sleep", "--seconds=30"});
  a.set_group("grp");
  a.set_world_size(2);
  a.set_local_world_size(2);
  for (int r = 0; r < 2; ++r) {
    auto* rank = a.add_ranks();
    rank->set_rank(r);
    rank->set_local_rank(r);
  }
  {
    Harness h(dir.path());
    h.Start();
    // Rank 0 finishes fast, rank 1 runs on (two assignments here only so
    // that the ranks can behave differently).
    v1::TaskAssignment first = a;
    first.clear_args();
    first.add_args("--records=2");
    first.clear_ranks();
    *first.add_ranks() = a.ranks(0);
    h.executor.Assign(first);
    v1::TaskStatus end0 = h.WaitEnd("grp", 20s, 0);
    REQUIRE(end0.state() == v1::TASK_COMPLETED);
    // The coordinator stores and acknowledges rank 0: the agent forgets it.
    v1::Ack ack;
    ack.set_task_id("grp");
    ack.set_rank(0);
    ack.set_next_seq(end0.record_count());
    h.executor.HandleAck(ack);
    v1::StatusAck sack;
    sack.set_task_id("grp");
    sack.set_rank(0);
    h.executor.HandleStatusAck(sack);
    TaskStore store(dir.path());
    REQUIRE(WaitFor([&] { return !store.Exists(TaskKey{"grp", 0, 0}); }, 10s));
    v1::TaskAssignment second = a;
    second.clear_ranks();
    *second.add_ranks() = a.ranks(1);
    h.executor.Assign(second);
    REQUIRE(WaitFor([&] { return h.outbox.Running("grp").has_value() &&
                                 h.executor.spawned_count() == 2; },
                    10s));
    h.executor.Stop();  // the agent goes down with rank 1 running
  }
  // The restarted agent gets the whole group assignment again.
  Harness h(dir.path());
  REQUIRE(h.executor.LoadStoredTasks().ok());
  h.Start();
  h.executor.Assign(a);
  v1::TaskStatus end1 = h.WaitEnd("grp", 10s, 1);
  CHECK(end1.state() == v1::TASK_FAILED);  // died with the old agent
  std::this_thread::sleep_for(500ms);
  CHECK(h.executor.spawned_count() == 0);  // rank 0 did not run a second time
  CHECK_FALSE(h.outbox.EndStatus("grp", 0).has_value());
  CHECK(h.outbox.Records("grp", 0).empty());
}

TEST_CASE("plan paths outside the agent's limits are rejected before anything is spawned",
          "[agent][executor][security]") {
  TempDir dir;
  FakeOutbox outbox;
  auto opts = Options(dir.path());
  opts.allow_read = {"/dev", dir.path() + "/allowed"};
  opts.storage_roots = {dir.path() + "/storage"};
  std::filesystem::create_directories(dir.path() + "/storage");
  Executor ex(opts, &outbox);
  ex.Start();
  ex.OnConnected(1);
  auto task = [](const std::string& id, const std::string& suite, const std::string& arg) {
    v1::TaskAssignment a;
    a.set_task_id(id);
    a.set_run_id("run-1");
    a.set_suite(suite);
    a.add_args(arg);
    return a;
  };
  ex.Assign(task("zero", "health", "--thresholds=/dev/zero"));
  ex.Assign(task("passwd", "audit", "--advisories=/etc/passwd"));
  ex.Assign(task("etc", "storage", "--path=/etc"));
  ex.Assign(task("below", "storage", "--path=" + dir.path() + "/storage/new/dir"));
  for (const auto& [id, why] : std::vector<std::pair<std::string, std::string>>{
           {"zero", "not a regular file"},
           {"passwd", "outside the directories this agent lets plans name"},
           {"etc", "outside the storage roots"}}) {
    INFO(id);
    REQUIRE(WaitFor([&, id = id] { return outbox.EndStatus(id).has_value(); }, 10s));
    auto end = *outbox.EndStatus(id);
    CHECK(end.state() == v1::TASK_FAILED);
    CHECK(end.exit_code() == 2);  // could not run here: the plan's doing, not a crash
    CHECK_THAT(end.message(), Catch::StartsWith("could not run: "));
    CHECK_THAT(end.message(), Catch::Contains(why));
  }
  // A path under a root that does not exist yet passes the agent's check
  // (the suite creates it); the storage suite then runs (or says it cannot).
  REQUIRE(WaitFor([&] { return outbox.Running("below").has_value() ||
                               outbox.EndStatus("below").has_value(); },
                  10s));
  if (auto end = outbox.EndStatus("below")) {
    CHECK_THAT(end->message(), !Catch::Contains("outside the storage roots"));
  }
  CHECK(ex.spawned_count() == 1);
  ex.Stop();
}

TEST_CASE("each kill the agent makes is noted in the kill log with its time and the suite's pid",
          "[agent][executor]") {
  TempDir dir;
  FakeOutbox outbox;
  auto opts = Options(dir.path());
  // A directory that does not exist yet: the first kill makes it.
  const std::string kills = dir.path() + "/run/kills";
  opts.kills_file = kills;
  // An agent clock an hour ahead: the log must still be in the real clock.
  opts.clock_offset_ns = int64_t{3600} * 1000000000;
  Executor ex(opts, &outbox);
  ex.Start();
  ex.OnConnected(1);
  auto wait_end = [&](const std::string& task) {
    REQUIRE(WaitFor([&] { return outbox.EndStatus(task).has_value(); }, 20s));
    return *outbox.EndStatus(task);
  };
  // A suite that ends by itself is not noted.
  ex.Assign(Selftest("ends", {"--mode=ok", "--records=2"}));
  CHECK(wait_end("ends").state() == v1::TASK_COMPLETED);
  CHECK_FALSE(std::filesystem::exists(kills));

  // A cancelled one is, with the real clock (not the agent's) and its pid.
  TaskStore store(dir.path());
  const std::string task_dir = store.DirFor(TaskKey{"victim", 0, 0});
  const std::string binary = std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench";
  ex.Assign(Selftest("victim", {"--mode=sleep", "--seconds=30"}));
  int pid = 0;
  REQUIRE(WaitFor(
      [&] {
        pid = PidWithCwd(task_dir);
        if (pid == 0) return false;
        std::vector<std::string> argv = ProcList(pid, "cmdline");
        return !argv.empty() && argv[0] == binary;
      },
      10s));
  const int64_t before = cmax::NowUnixNs();
  v1::CancelTask c;
  c.set_task_id("victim");
  c.set_reason("kill log test");
  ex.Cancel(c);
  CHECK(wait_end("victim").state() == v1::TASK_CANCELLED);
  const int64_t after = cmax::NowUnixNs();
  ex.Stop();
  const std::string log = cmax::agent::testing::ReadFile(kills);
  INFO("kill log: " << log);
  std::vector<std::string> lines;
  for (size_t start = 0, nl; (nl = log.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(log.substr(start, nl - start));
  }
  REQUIRE(lines.size() == 1);
  const size_t space = lines[0].find(' ');
  REQUIRE(space != std::string::npos);
  int64_t noted_ns = 0;
  int noted_pid = 0;
  REQUIRE(absl::SimpleAtoi(lines[0].substr(0, space), &noted_ns));
  REQUIRE(absl::SimpleAtoi(lines[0].substr(space + 1), &noted_pid));
  CHECK(noted_pid == pid);
  CHECK(noted_ns >= before);
  CHECK(noted_ns <= after);
}
