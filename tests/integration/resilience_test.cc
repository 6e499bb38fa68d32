// Never lose a result, prove it: real coordinator, agents and cmaxctl,
// killed, restarted, partitioned, out of disk, and behind mutual TLS.
//
// Every check compares what the suites wrote (the selftest's known record
// counts: `records` measurements plus one progress line) with what
// `cmaxctl export` holds, keyed by (task, attempt, rank, seq).
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cmax/v1/scorecard.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/cluster.h"
#include "tests/integration/export_records.h"

using cmax::testing::Cluster;
using cmax::testing::kExitNotRated;
using cmax::testing::Export;
using cmax::testing::ClusterOptions;
using namespace std::chrono_literals;

namespace {

using Key = std::tuple<std::string, int, int, int64_t>;  // task, attempt, rank, seq

// Per (task, attempt, rank): the seqs stored. Fails the test on a repeat.
std::map<std::tuple<std::string, int, int>, std::set<int64_t>> SeqsOf(
    const std::vector<cmax::v1::ExportedRecord>& records) {
  std::map<std::tuple<std::string, int, int>, std::set<int64_t>> out;
  std::set<Key> seen;
  int repeats = 0;
  for (const auto& r : records) {
    if (!seen.insert({r.task_id(), r.attempt(), r.rank(), r.seq()}).second) ++repeats;
    out[{r.task_id(), r.attempt(), r.rank()}].insert(r.seq());
  }
  CHECK(repeats == 0);
  return out;
}

// 0..n-1, nothing missing.
bool Contiguous(const std::set<int64_t>& s) {
  return !s.empty() && *s.begin() == 0 && *s.rbegin() == static_cast<int64_t>(s.size()) - 1;
}

// Follows a run with `watch --json` until it ends (again after a coordinator
// restart); returns the exit code and the tasks' last states.
struct RunEnd {
  int exit_code = -1;
  std::map<std::string, cmax::v1::TaskInfo> tasks;
  std::string output;
};
RunEnd WaitForRun(Cluster& c, const std::string& run_id, std::chrono::seconds timeout) {
  RunEnd end;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::seconds>(
        deadline - std::chrono::steady_clock::now());
    auto r = c.Ctl({"watch", run_id, "--json"}, std::max(left, 1s));
    end.exit_code = r.exit.code;
    end.output = r.out + r.err;
    for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
      cmax::v1::RunEvent ev;
      if (!google::protobuf::util::JsonStringToMessage(std::string(line), &ev).ok()) continue;
      if (ev.has_task()) end.tasks[ev.task().task_id()] = ev.task();
    }
    // 0, 1, 4 (completed, not rated) and 5 (nothing measured) mean the run
    // ended; 3: ask again.
    if (r.exit.code == 0 || r.exit.code == 1 || r.exit.code == kExitNotRated ||
        r.exit.code == cmax::testing::kExitNothingMeasured) {
      return end;
    }
    std::this_thread::sleep_for(500ms);  // the coordinator is away: ask again
  }
  return end;
}

std::string Submit(Cluster& c, const std::string& plan) {
  auto submit = c.Ctl({"run", "--plan", plan, "--no-wait"});
  INFO(submit.out << submit.err);
  REQUIRE(submit.exit.code == 0);
  std::string run_id = Cluster::RunIdFrom(submit.out);
  REQUIRE(!run_id.empty());
  return run_id;
}

void WaitUntilBusy(Cluster& c, int n) {
  auto s = c.WaitForAgents(n, "busy", 30s);
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// Processes whose command line contains `pattern`.
int CountProcesses(const std::string& pattern) {
  auto ps = cmax::RunCommand({"pgrep", "-c", "-f", "--", pattern}, 5s);
  if (!ps.ok()) return -1;
  int n = 0;
  (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(ps->out), &n);
  return n;
}

bool WaitForProcesses(const std::string& pattern, int n, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (CountProcesses(pattern) == n) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

// "ok" from SQLite's integrity check of the coordinator's database.
std::string IntegrityCheck(const std::string& db_path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    std::string e = db ? sqlite3_errmsg(db) : "open failed";
    sqlite3_close(db);
    return e;
  }
  sqlite3_busy_timeout(db, 10000);
  std::string result;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    result = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  } else {
    result = sqlite3_errmsg(db);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return result;
}

int64_t FreeMiB(const std::string& dir) {
  struct statvfs v;
  if (statvfs(dir.c_str(), &v) != 0) return -1;
  return static_cast<int64_t>(v.f_bavail) * static_cast<int64_t>(v.f_frsize) >> 20;
}

// A tmpfs mounted on `dir` for the test's lifetime; declare it after the
// Cluster so it is unmounted (lazily) before the cluster removes its dir.
class Tmpfs {
 public:
  Tmpfs(const std::string& dir, const std::string& size) : dir_(dir) {
    std::filesystem::create_directories(dir);
    // mode=0750: a daemon refuses a state folder others can write
    // (common/owned_dir.h), and a fresh tmpfs is 1777 by default.
    auto r = cmax::RunCommand(
        {"mount", "-t", "tmpfs", "-o", "size=" + size + ",mode=0750", "tmpfs", dir}, 30s);
    mounted_ = r.ok() && r->exit.exited && r->exit.code == 0;
    if (!mounted_) why_ = r.ok() ? r->err : std::string(r.status().message());
  }
  ~Tmpfs() {
    if (mounted_) (void)cmax::RunCommand({"umount", "-l", dir_}, 30s);
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }
  // Writes zeros into `file` until the file system is full.
  void Fill(const std::string& file) {
    (void)cmax::RunCommand({"dd", "if=/dev/zero", "of=" + file, "bs=64k"}, 60s);
  }

 private:
  std::string dir_;
  bool mounted_ = false;
  std::string why_;
};

std::string RecordsPlan(Cluster& c, const std::string& name, int records, int rate,
                        int retries = 0, const std::string& extra = "") {
  return c.WritePlan(name, absl::StrCat("name: ", name, R"(
suites:
  - suite: selftest
    timeout: 3m
    retries: )", retries, R"(
    params: {mode: records, records: )", records, ", rate: ", rate, "}\n", extra));
}

}  // namespace

TEST_CASE("coordinator killed twice mid-run: every record stored exactly once",
          "[integration][resilience]") {
  Cluster c("rs1", {.agents = 4, .heartbeat_timeout_s = 10});
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());
  std::string plan = RecordsPlan(c, "many", 4003, 800, 0, R"(  - suite: selftest
    name: after
    params: {mode: records, records: 500}
)");
  std::string run_id = Submit(c, plan);
  WaitUntilBusy(c, 4);
  std::this_thread::sleep_for(1500ms);
  c.StopCoordinator(SIGKILL);  // while the suites write and records flow
  std::this_thread::sleep_for(1s);
  REQUIRE(c.StartCoordinator().ok());
  std::this_thread::sleep_for(2500ms);
  c.StopCoordinator(SIGKILL);  // again, after the agents came back
  REQUIRE(c.StartCoordinator().ok());

  RunEnd end = WaitForRun(c, run_id, 120s);
  INFO(end.output);
  REQUIRE(end.exit_code == kExitNotRated);
  auto records = Export(c, run_id);
  auto seqs = SeqsOf(records);
  // Two tasks per node, each attempt 1 only (nothing ran twice).
  REQUIRE(seqs.size() == 8);
  for (const auto& [key, s] : seqs) {
    const auto& [task, attempt, rank] = key;
    INFO(task);
    CHECK(attempt == 1);
    CHECK(rank == 0);
    CHECK(Contiguous(s));
    CHECK(s.size() == (absl::StrContains(task, ".0.") ? 4004u : 501u));
  }
  CHECK(records.size() == 4 * (4004 + 501));
  int late = 0;
  for (const auto& r : records) late += r.late();
  CHECK(late == 0);
  // The run's scorecard was written after the restarts.
  CHECK(c.Ctl({"report", run_id, "--format", "md"}).exit.code == 0);
}

TEST_CASE("coordinator restarted gracefully mid-run (systemctl restart): tasks finish, counted",
          "[integration][resilience]") {
  // SIGTERM, as `systemctl restart cmax-coordinator` sends it, with the
  // heartbeat timeout the packaged unit runs with (15 s): the agents keep
  // their tasks running, come back to the new process and end them there.
  // An operator follows the run (`cmaxctl run` without --no-wait): a watch
  // stream is open when the signal comes, and must not hold the old process
  // up until the run has ended there, its agents declared lost.
  Cluster c("rs5", {.agents = 3, .heartbeat_timeout_s = 15});
  REQUIRE(c.Start().ok());
  std::string plan = RecordsPlan(c, "graceful", 2001, 100);
  std::string run_id = Submit(c, plan);
  WaitUntilBusy(c, 3);
  int watch_exit = -1;
  std::thread watch([&] { watch_exit = c.Ctl({"watch", run_id}, 90s).exit.code; });
  std::this_thread::sleep_for(2s);
  c.StopCoordinator(SIGTERM);
  watch.join();
  CHECK(watch_exit == 3);  // the run did not finish there: watch again
  REQUIRE(c.StartCoordinator().ok());
  RunEnd end = WaitForRun(c, run_id, 120s);
  INFO(end.output);
  REQUIRE(end.exit_code == kExitNotRated);
  auto records = Export(c, run_id);
  auto seqs = SeqsOf(records);
  REQUIRE(seqs.size() == 3);
  for (const auto& [key, s] : seqs) {
    INFO(std::get<0>(key));
    CHECK(std::get<1>(key) == 1);
    CHECK(Contiguous(s));
    CHECK(s.size() == 2002u);
  }
  // The scorecard counts what the store holds, task by task.
  const cmax::v1::Scorecard card = cmax::testing::ReportCard(c, run_id);
  int tasks = 0;
  for (const auto& n : card.nodes()) {
    for (const auto& t : n.tasks()) {
      INFO(n.node() << " " << t.task_id() << " " << t.state() << ": " << t.message());
      CHECK(t.state() == "completed");
      CHECK(t.records() == 2002);
      ++tasks;
    }
  }
  CHECK(tasks == 3);
}

TEST_CASE("agent killed and restarted mid-task: failed or retried as the plan says",
          "[integration][resilience]") {
  const int retries = GENERATE(0, 1);
  const std::string prefix = absl::StrCat("rs2", retries);
  Cluster c(prefix, {.agents = 2, .heartbeat_timeout_s = 10});
  REQUIRE(c.Start().ok());
  const std::string pattern = "--records=3007";
  std::string plan = RecordsPlan(c, "restart", 3007, 500, retries, R"(  - suite: selftest
    name: after
    params: {mode: ok, records: 5}
)");
  std::string run_id = Submit(c, plan);
  WaitUntilBusy(c, 2);
  REQUIRE(WaitForProcesses(pattern, 2, 10s));
  std::this_thread::sleep_for(2s);
  c.StopAgent(1, SIGKILL);
  // The agent's child died with it: only node-0's is left.
  CHECK(WaitForProcesses(pattern, 1, 5s));
  REQUIRE(c.StartAgent(1).ok());

  RunEnd end = WaitForRun(c, run_id, 90s);
  INFO(end.output);
  const std::string task = run_id + ".0.node-1";
  REQUIRE(end.tasks.count(task));
  auto seqs = SeqsOf(Export(c, run_id));
  // What node-1 wrote before the kill is kept, once, under attempt 1.
  auto first = seqs[{task, 1, 0}];
  INFO("attempt 1 records: " << first.size());
  CHECK(first.size() > 100);
  CHECK(first.size() < 3008);
  CHECK(Contiguous(first));
  // Nothing of the other tasks is missing.
  CHECK(seqs[{run_id + ".0.node-0", 1, 0}].size() == 3008);
  CHECK(seqs[{run_id + ".1.node-0", 1, 0}].size() == 6);
  if (retries == 0) {
    CHECK(end.exit_code == 1);
    CHECK(end.tasks[task].state() == cmax::v1::TASK_FAILED);
    CHECK(absl::StrContains(end.tasks[task].message(), "agent restarted"));
    CHECK(seqs.count({task, 2, 0}) == 0);
  } else {
    CHECK(end.exit_code == kExitNotRated);
    CHECK(end.tasks[task].state() == cmax::v1::TASK_COMPLETED);
    CHECK(end.tasks[task].attempt() == 2);
    // The task describes attempt 2 and keeps attempt 1 as history.
    REQUIRE(end.tasks[task].earlier_attempts_size() == 1);
    const auto& earlier = end.tasks[task].earlier_attempts(0);
    CHECK(earlier.attempt() == 1);
    CHECK(earlier.state() == cmax::v1::TASK_FAILED);
    CHECK(absl::StrContains(earlier.message(), "agent restarted"));
    CHECK(earlier.finished_unix_ns() > 0);
    CHECK_FALSE(absl::StrContains(end.tasks[task].message(), "retrying"));  // attempt 2's own
    auto second = seqs[{task, 2, 0}];
    CHECK(second.size() == 3008);
    CHECK(Contiguous(second));
  }
  CHECK(seqs[{run_id + ".1.node-1", 1, 0}].size() == 6);
  // No orphans anywhere.
  CHECK(WaitForProcesses(pattern, 0, 10s));
}

TEST_CASE("a partitioned agent is lost, its child stopped, its late records kept",
          "[integration][resilience]") {
  Cluster c("rs3", {.agents = 2, .heartbeat_timeout_s = 3});
  REQUIRE(c.Start().ok());
  if (!c.using_netns()) {
    FAIL("network namespaces are not available, so no link can be cut");
  }
  const std::string pattern = "--records=12011";
  std::string plan = c.WritePlan("part", R"(name: part
suites:
  - suite: selftest
    name: long
    timeout: 3m
    nodes: [node-1]
    params: {mode: records, records: 12011, rate: 300}
  - suite: selftest
    name: short
    nodes: [node-0]
    params: {mode: records, records: 50, rate: 10}
)");
  std::string run_id = Submit(c, plan);
  REQUIRE(WaitForProcesses(pattern, 1, 20s));
  std::this_thread::sleep_for(2s);
  REQUIRE(c.Hosts({"cut", "1"}).ok());
  auto lost = c.WaitForAgents(1, "lost", 20s);
  INFO(lost.ToString());
  CHECK(lost.ok());
  // The run ends: node-1's task is lost.
  RunEnd end = WaitForRun(c, run_id, 60s);
  INFO(end.output);
  CHECK(end.exit_code == 1);
  const std::string task = run_id + ".0.node-1";
  CHECK(end.tasks[task].state() == cmax::v1::TASK_LOST);
  std::this_thread::sleep_for(1s);
  REQUIRE(c.Hosts({"heal", "1"}).ok());
  // Back as connected; the child of the lost task is stopped long before
  // its 40 s are up; the agent delivers what it holds and forgets it.
  auto back = c.WaitForAgents(2, "connected", 45s);
  INFO(back.ToString());
  CHECK(back.ok());
  CHECK(WaitForProcesses(pattern, 0, 20s));
  const std::string tasks_dir = c.agent_work_dir(1) + "/tasks";
  bool drained = false;
  for (int i = 0; i < 150 && !drained; ++i) {
    std::error_code ec;
    drained = std::filesystem::is_empty(tasks_dir, ec) && !ec;
    if (!drained) std::this_thread::sleep_for(200ms);
  }
  CHECK(drained);
  auto records = Export(c, run_id);
  auto seqs = SeqsOf(records);
  const auto& s = seqs[{task, 1, 0}];
  CHECK(Contiguous(s));
  CHECK(s.size() < 12012);  // stopped early
  int64_t last_on_time = -1, first_late = -1, late = 0;
  for (const auto& r : records) {
    if (r.task_id() != task) continue;
    if (r.late()) {
      ++late;
      if (first_late < 0 || r.seq() < first_late) first_late = r.seq();
    } else {
      last_on_time = std::max(last_on_time, r.seq());
    }
  }
  INFO("late " << late << ", last on time " << last_on_time << ", first late " << first_late);
  CHECK(late > 0);
  CHECK(first_late > last_on_time);
  // The lost task's summary counts the records it left before it was lost
  // (the scorecard was written before the late ones came).
  const cmax::v1::Scorecard card = cmax::testing::ReportCard(c, run_id);
  int64_t counted = -1;
  for (const auto& n : card.nodes()) {
    for (const auto& t : n.tasks()) {
      if (t.task_id() == task) counted = t.records();
    }
  }
  CHECK(counted == last_on_time + 1);
  // node-0 was not disturbed.
  CHECK(seqs[{run_id + ".1.node-0", 1, 0}].size() == 51);
}

TEST_CASE("a full coordinator disk refuses runs, damages nothing, and recovers",
          "[integration][resilience]") {
  if (geteuid() != 0) {
    FAIL("mounting a tmpfs needs root");
  }
  Cluster c("rs4", {.agents = 1, .netns = false, .heartbeat_timeout_s = 10});
  // The coordinator refuses new runs below 64 MiB free: 96 MiB leaves room
  // for runs until the test fills it.
  Tmpfs disk(c.data_dir(), "96m");
  if (!disk.mounted()) {
    FAIL("cannot mount a tmpfs here: " << disk.why());
  }
  REQUIRE(c.Start().ok());
  const std::string db = c.data_dir() + "/cmax.db";
  std::string plan = RecordsPlan(c, "disk", 3000, 1000);
  std::string run_id = Submit(c, plan);
  WaitUntilBusy(c, 1);
  std::this_thread::sleep_for(500ms);
  disk.Fill(c.data_dir() + "/fill");  // mid-run: record inserts start failing
  CHECK(FreeMiB(c.data_dir()) == 0);

  auto refused = c.Ctl({"run", "--plan", plan});
  INFO(refused.out << refused.err);
  CHECK(refused.exit.code == 2);
  CHECK(absl::StrContains(refused.err, c.data_dir()));
  CHECK(absl::StrContains(refused.err, "MiB free"));
  CHECK(absl::StrContains(refused.err, "disk is full"));
  std::this_thread::sleep_for(3s);  // the suite finishes while the disk is full
  CHECK(IntegrityCheck(db) == "ok");

  std::filesystem::remove(c.data_dir() + "/fill");
  RunEnd end = WaitForRun(c, run_id, 90s);
  INFO(end.output);
  CHECK(end.exit_code == kExitNotRated);
  auto seqs = SeqsOf(Export(c, run_id));
  const auto& s = seqs[{run_id + ".0.node-0", 1, 0}];
  CHECK(s.size() == 3001);
  CHECK(Contiguous(s));
  auto again = c.Ctl({"run", "--plan", RecordsPlan(c, "after", 10, 0)}, 60s);
  INFO(again.out << again.err);
  CHECK(again.exit.code == kExitNotRated);
  CHECK(IntegrityCheck(db) == "ok");
}

TEST_CASE("a full agent work dir fails the task clearly and the agent keeps serving",
          "[integration][resilience]") {
  if (geteuid() != 0) {
    FAIL("mounting a tmpfs needs root");
  }
  Cluster c("rs5", {.agents = 1, .netns = false});
  Tmpfs disk(c.agent_work_dir(0), "8m");
  if (!disk.mounted()) {
    FAIL("cannot mount a tmpfs here: " << disk.why());
  }
  REQUIRE(c.Start().ok());
  disk.Fill(c.agent_work_dir(0) + "/fill");
  std::string plan = RecordsPlan(c, "small", 20, 0);
  auto failed = c.Ctl({"run", "--plan", plan}, 60s);
  INFO(failed.out << failed.err);
  CHECK(failed.exit.code == 1);
  CHECK(absl::StrContains(failed.out, "No space left on device"));
  CHECK(absl::StrContains(failed.out, c.agent_work_dir(0)));
  CHECK(c.WaitForAgents(1, "connected", 10s).ok());
  std::filesystem::remove(c.agent_work_dir(0) + "/fill");
  auto ok = c.Ctl({"run", "--plan", plan}, 60s);
  INFO(ok.out << ok.err);
  CHECK(ok.exit.code == kExitNotRated);
}

// A cmax-agent started by hand beside the cluster's, as `node` with the
// cluster's token and CA and the client certificate <cert>.pem/.key, in the
// coordinator's namespace `hub` when the cluster uses namespaces; its output
// in <dir>/extra-<node>.log. The caller kills it.
absl::StatusOr<std::unique_ptr<cmax::Subprocess>> SpawnAgentWithCertificate(
    Cluster& c, const std::string& hub, const std::string& node, const std::string& cert) {
  cmax::SpawnOptions so;
  so.argv = {Cluster::BinDir() + "/cmax-agent", "--coordinator", c.address(),
             "--node-name", node, "--work-dir", c.dir() + "/extra-" + node,
             "--bench-dir", Cluster::BinDir(), "--token-file", c.agent_token_file(),
             "--tls-ca", c.dir() + "/tls/ca.pem", "--tls-cert", cert + ".pem",
             "--tls-key", cert + ".key"};
  if (c.using_netns()) so.argv.insert(so.argv.begin(), {"ip", "netns", "exec", hub});
  so.stdout_path = c.dir() + "/extra-" + node + ".log";
  so.stderr_path = so.stdout_path;
  return cmax::Subprocess::Spawn(so);
}

TEST_CASE("mutual TLS: no client certificate or one from another CA is refused",
          "[integration][resilience][security]") {
  Cluster c("rs6", {.agents = 2, .token = "mutual tls token", .tls = true, .mtls = true});
  auto s = c.Start();  // the agents connect with their client certificates
  INFO(s.ToString());
  REQUIRE(s.ok());
  auto right = c.Ctl({"agents"});
  INFO(right.out << right.err);
  CHECK(right.exit.code == 0);
  CHECK(absl::StrContains(right.out, "node-1"));

  // A second CA with a client certificate of its own.
  const std::string other = c.dir() + "/other-ca";
  auto gen = cmax::RunCommand(
      {Cluster::SourceDir() + "/deploy/gen-certs.sh", other, "127.0.0.1", "client"}, 60s);
  REQUIRE(gen.ok());
  REQUIRE(gen->exit.code == 0);
  auto ctl = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {Cluster::BinDir() + "/cmaxctl", "--coordinator",
                                     c.address(), "--token-file", c.dir() + "/token",
                                     "--tls-ca", c.dir() + "/tls/ca.pem"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("agents");
    if (c.using_netns()) argv.insert(argv.begin(), {"ip", "netns", "exec", "rs6-hub"});
    auto r = cmax::RunCommand(argv, 30s);
    REQUIRE(r.ok());
    return *r;
  };
  auto none = ctl({});
  INFO(none.out << none.err);
  CHECK(none.exit.code != 0);
  CHECK_FALSE(absl::StrContains(none.out, "node-1"));
  auto foreign = ctl({"--tls-cert", other + "/client.pem", "--tls-key", other + "/client.key"});
  INFO(foreign.out << foreign.err);
  CHECK(foreign.exit.code != 0);
  CHECK_FALSE(absl::StrContains(foreign.out, "node-1"));
  // The right certificate by the same explicit path works (the control).
  auto own = ctl({"--tls-cert", c.dir() + "/tls/client.pem", "--tls-key",
                  c.dir() + "/tls/client.key"});
  CHECK(own.exit.code == 0);

  // An agent with the foreign certificate never gets in.
  auto intruder = SpawnAgentWithCertificate(c, "rs6-hub", "intruder", other + "/client");
  REQUIRE(intruder.ok());
  std::this_thread::sleep_for(4s);
  auto listed = c.Ctl({"agents"});
  CHECK_FALSE(absl::StrContains(listed.out, "intruder"));
  (*intruder)->SignalGroup(SIGKILL);
  (*intruder)->Wait();
}

TEST_CASE("mutual TLS: another node's certificate can neither join as a node nor take its session",
          "[integration][resilience][security]") {
  // Each agent dials with its own node's certificate (Cluster: mtls).
  Cluster c("rs7", {.agents = 2, .token = "mutual tls token", .tls = true, .mtls = true});
  auto s = c.Start();
  INFO(s.ToString());
  REQUIRE(s.ok());

  // node-0's certificate and the shared token, saying Hello as node-1, which
  // is connected: the takeover of a session an impostor would attempt.
  auto impostor = SpawnAgentWithCertificate(c, "rs7-hub", "node-1", c.dir() + "/tls/node-0");
  REQUIRE(impostor.ok());
  std::this_thread::sleep_for(4s);
  (*impostor)->SignalGroup(SIGKILL);
  (*impostor)->Wait();

  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string log = slurp(c.dir() + "/coordinator.log");
  INFO(log);
  CHECK(absl::StrContains(log, "refused: its client certificate is for node-0"));
  CHECK(absl::StrContains(log, "its Hello says node 'node-1'"));
  const std::string impostor_log = slurp(c.dir() + "/extra-node-1.log");
  INFO(impostor_log);
  CHECK(absl::StrContains(impostor_log, "certificate must name its node"));
  // The real node-1 kept its session: still connected, and it still runs
  // work (a hostcheck on both nodes completes).
  auto listed = c.Ctl({"agents"});
  INFO(listed.out << listed.err);
  CHECK(c.WaitForAgents(2, "connected", 10s).ok());
  const std::string plan = c.WritePlan("rs7", "name: rs7\nsuites:\n  - suite: hostcheck\n");
  auto run = c.Ctl({"run", "--plan", plan}, 90s);
  INFO(run.out << run.err);
  CHECK(absl::StrContains(run.out, "hostcheck on node-1: completed"));
  CHECK(absl::StrContains(run.out, "hostcheck on node-0: completed"));
}
