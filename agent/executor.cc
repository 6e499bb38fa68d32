#include "agent/executor.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "agent/plan_paths.h"
#include "common/atomic_file.h"
#include "common/logging.h"
#include "common/record_io.h"
#include "common/suite_catalog.h"
#include "common/time_util.h"

namespace cmax::agent {
namespace {

constexpr int64_t kNsPerMs = 1000000;
constexpr int64_t kNsPerS = 1000000000;
// Suite exit code "could not run" (DESIGN.md, "Suite exit codes"); the agent
// reports the same code when it cannot start the suite at all.
constexpr int kCouldNotRunExit = 2;

bool IsTaskIdChar(char ch) {
  return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
         ch == '-';
}

// ^[A-Za-z0-9_.-]{1,128}$
bool ValidTaskId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), IsTaskIdChar);
}

// The last non-empty line of `text`, at most 300 characters.
std::string LastLine(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  if (lines.empty()) return "";
  std::string last(absl::StripAsciiWhitespace(lines.back()));
  if (last.size() > 300) last = last.substr(0, 300) + "...";
  return last;
}

std::shared_ptr<spdlog::logger> Log() { return GetLogger("agent"); }

// Writes `record` as the first line of a new spool file at `path`.
absl::Status WriteFirstSpoolLine(const std::string& path, const v1::Record& record) {
  const std::string line = RecordToJsonLine(record) + "\n";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return absl::InternalError(absl::StrCat("open ", path, ": ", strerror(errno)));
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("write ", path, ": ", strerror(e)));
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) {
    return absl::InternalError(absl::StrCat("close ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

// Processes still in process group `pgid` (the suite's group: the suite made
// itself its leader, see Subprocess), from /proc/<pid>/stat field 5 (pgrp;
// proc(5)). Zombies count too.
std::vector<pid_t> GroupMembers(pid_t pgid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    pid_t pid = 0;
    if (!absl::SimpleAtoi(name, &pid) || pid <= 0) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid pgrp ..."; comm may hold spaces and ')'.
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<std::string> f =
        absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipWhitespace());
    pid_t pgrp = 0;
    if (f.size() > 2 && absl::SimpleAtoi(f[2], &pgrp) && pgrp == pgid) out.push_back(pid);
  }
  return out;
}

// SIGKILLs whatever is left of the suite's process group after the suite
// itself exited, waits (up to 2 s) until none of them runs any more, and
// returns how many there were.
int KillLeftovers(pid_t pgid) {
  std::vector<pid_t> members = GroupMembers(pgid);
  if (members.empty()) return 0;
  kill(-pgid, SIGKILL);
  const int64_t until = MonotonicNs() + 2 * kNsPerS;
  while (MonotonicNs() < until) {
    bool running = false;
    for (pid_t pid : GroupMembers(pgid)) {
      std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      size_t close = stat.rfind(')');
      if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z') {
        running = true;
      }
    }
    if (!running) break;
    usleep(5000);
  }
  return static_cast<int>(members.size());
}

}  // namespace

v1::Record TaskStartRecord(const std::string& suite, int64_t scheduled_unix_ns,
                           int64_t started_unix_ns) {
  v1::Record r;
  r.set_time_unix_ns(started_unix_ns);
  v1::Sample* s = r.mutable_sample();
  s->set_suite(suite);
  s->set_metric("cmax_task_start");
  s->set_value(static_cast<double>(started_unix_ns - scheduled_unix_ns) / 1e9);
  s->set_unit("s");
  s->set_time_unix_ns(started_unix_ns);
  s->set_count(1);
  (*s->mutable_labels())["scheduled_unix_ns"] = absl::StrCat(scheduled_unix_ns);
  (*s->mutable_labels())["started_unix_ns"] = absl::StrCat(started_unix_ns);
  (*s->mutable_labels())["clock"] = "node";
  return r;
}

bool IsCouldNotRun(const absl::Status& status) {
  return absl::IsNotFound(status) || absl::IsFailedPrecondition(status);
}

absl::Status ValidateAssignment(const v1::TaskAssignment& a,
                                const std::string& bench_dir) {
  if (!ValidTaskId(a.task_id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("task id '", a.task_id().substr(0, 200),
                     "' does not match ^[A-Za-z0-9_.-]{1,128}$"));
  }
  if (a.attempt() < 0) return absl::InvalidArgumentError("negative attempt");
  const SuiteInfo* suite = FindSuite(a.suite());
  if (suite == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown suite '", a.suite().substr(0, 200), "'"));
  }
  std::vector<std::string> args(a.args().begin(), a.args().end());
  std::string binary = absl::StrCat(bench_dir, "/", SuiteBinary(*suite, args));
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("suite ", suite->name, " needs ", binary,
                                            ", which is not an executable file"));
  }
  if (absl::Status s = ValidateSuiteArgs(*suite, args); !s.ok()) {
    // The coordinator checked these against the same declaration; a refusal
    // here means the two disagree (versions), so the suite cannot run.
    return absl::FailedPreconditionError(s.message());
  }
  for (const auto& [name, value] : a.env()) {
    if (absl::Status s = ValidateSuiteEnv(name, value); !s.ok()) return s;
  }
  if (a.timeout_seconds() < 0) return absl::InvalidArgumentError("negative timeout");
  if (!a.group().empty() && !ValidTaskId(a.group())) {
    return absl::InvalidArgumentError("group name is not a valid task id");
  }
  const bool mpirun = a.launcher() == "mpirun";
  if (!a.launcher().empty() && a.launcher() != "agents" && !mpirun) {
    return absl::InvalidArgumentError(absl::StrCat(
        "launcher '", a.launcher().substr(0, 64), "' is not supported by this agent"));
  }
  if (!mpirun) {
    for (const std::string& arg : args) {
      if (absl::StartsWith(arg, "--mpirun-")) {
        return absl::InvalidArgumentError(absl::StrCat(
            arg.substr(2, arg.find('=') - 2), " applies to launcher mpirun only"));
      }
    }
  } else {
    // One assignment to the group's first node: peers in rank order, each
    // running local_world_size ranks (see docs/mpirun.md).
    if (a.group().empty()) {
      return absl::InvalidArgumentError("launcher mpirun needs a group task");
    }
    if (a.peer_addresses_size() == 0) {
      return absl::InvalidArgumentError("launcher mpirun: no peer addresses");
    }
    for (int i = 0; i < a.peer_addresses_size(); ++i) {
      const std::string& p = a.peer_addresses(i);
      bool ok = !p.empty() && p.size() <= 253 && p[0] != '-' &&
                std::all_of(p.begin(), p.end(), [](char ch) {
                  return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '.' ||
                         ch == ':' || ch == '-' || ch == '_';
                });
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "launcher mpirun: peer ", i, " has no usable address ('", p.substr(0, 64), "')"));
      }
    }
    if (a.local_world_size() < 1 ||
        a.world_size() != a.local_world_size() * a.peer_addresses_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "launcher mpirun: world size ", a.world_size(), " is not ", a.peer_addresses_size(),
          " nodes x ", a.local_world_size(), " ranks"));
    }
    std::vector<std::string> rest;
    if (auto opts = MpirunOptionArgs(args, &rest); !opts.ok()) return opts.status();
    if (FindExecutable("mpirun").empty()) {
      return absl::NotFoundError(
          "launcher mpirun: mpirun is not installed on this node (Open MPI, package "
          "openmpi-bin)");
    }
    return absl::OkStatus();
  }
  if (a.ranks_size() > 0) {
    if (a.world_size() < 1)
      return absl::InvalidArgumentError("ranks given with world_size < 1");
    if (a.local_world_size() < a.ranks_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "local_world_size ", a.local_world_size(), " < ", a.ranks_size(), " ranks"));
    }
    std::set<int32_t> seen;
    for (const v1::RankAssignment& r : a.ranks()) {
      if (r.rank() < 0 || r.rank() >= a.world_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", r.rank(), " outside world size ", a.world_size()));
      }
      if (r.local_rank() < 0 || r.local_rank() >= a.local_world_size()) {
        return absl::InvalidArgumentError(absl::StrCat("local rank ", r.local_rank(),
                                                       " outside local world size ",
                                                       a.local_world_size()));
      }
      if (!seen.insert(r.rank()).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", r.rank(), " given twice"));
      }
    }
  }
  return absl::OkStatus();
}

struct Executor::Task {
  TaskKey key;
  v1::TaskAssignment assignment;
  int32_t local_rank = 0;
  bool has_dir = false;
  Phase phase = Phase::kWaiting;
  int64_t start_mono_ns = 0;
  int64_t deadline_mono_ns = 0;  // 0: no timeout
  int64_t kill_at_mono_ns = 0;   // pending SIGKILL
  bool kill_started = false;
  bool timed_out = false;
  bool cancelled = false;
  std::string cancel_reason;
  int timeout_s = 0;
  int64_t started_unix_ns = 0;
  std::unique_ptr<Subprocess> proc;
  std::unique_ptr<SpoolTailer> tailer;  // null without a directory
  int64_t acked = 0;                    // records with seq < acked are durable
  int64_t record_count = 0;             // valid in kDone
  v1::TaskStatus end_status;
  bool status_sent = false;
  bool status_acked = false;
  int64_t next_error_log_mono_ns = 0;
};

absl::StatusOr<std::vector<std::string>> MpirunArgv(const v1::TaskAssignment& a,
                                                    const std::string& mpirun,
                                                    const std::string& bench_dir) {
  const SuiteInfo* suite = FindSuite(a.suite());
  if (suite == nullptr) return absl::InvalidArgumentError("unknown suite");
  std::vector<std::string> args(a.args().begin(), a.args().end());
  std::vector<std::string> rest;
  absl::StatusOr<std::vector<std::string>> options = MpirunOptionArgs(args, &rest);
  if (!options.ok()) return options.status();
  std::vector<std::string> hosts;
  for (const std::string& p : a.peer_addresses()) {
    // IPv6 addresses contain ':' themselves; Open MPI's --host takes them
    // in brackets.
    std::string host = p.find(':') != std::string::npos ? absl::StrCat("[", p, "]") : p;
    hosts.push_back(absl::StrCat(host, ":", a.local_world_size()));
  }
  std::vector<std::string> argv = {mpirun,
                                    "--allow-run-as-root",
                                    "--oversubscribe",
                                    "-np",
                                    absl::StrCat(a.world_size()),
                                    "--host",
                                    absl::StrJoin(hosts, ",")};
  argv.insert(argv.end(), options->begin(), options->end());
  for (const char* var : {"CMAX_RENDEZVOUS", "CMAX_RENDEZVOUS_SECRET", "CMAX_GROUP"}) {
    argv.insert(argv.end(), {"-x", var});
  }
  argv.push_back(absl::StrCat(bench_dir, "/", SuiteBinary(*suite, rest)));
  argv.push_back(suite->name);
  argv.insert(argv.end(), rest.begin(), rest.end());
  argv.push_back("--jsonl");
  return argv;
}

Executor::Executor(ExecutorOptions options, Outbox* outbox, RendezvousEndpoints* rendezvous)
    : options_(std::move(options)),
      outbox_(outbox),
      rendezvous_(rendezvous),
      store_(options_.work_dir) {}

Executor::~Executor() { Stop(); }

int64_t Executor::AgentNowNs() const { return NowUnixNs() + options_.clock_offset_ns; }

absl::Status Executor::LoadStoredTasks() {
  LoadDoneKeys();
  absl::StatusOr<std::vector<StoredTask>> stored = store_.ScanAtStartup(AgentNowNs());
  if (!stored.ok()) return stored.status();
  for (StoredTask& s : *stored) {
    auto task = std::make_unique<Task>();
    task->key = s.key;
    task->has_dir = true;
    task->phase = Phase::kDone;
    task->tailer = std::make_unique<SpoolTailer>(store_.SpoolPath(s.key));
    task->record_count = s.status.record_count();
    task->end_status = s.status;
    Log()->info("holding task {} from before the restart: {} records, {}",
                s.key.DirName(), task->record_count,
                v1::TaskState_Name(s.status.state()));
    tasks_[s.key] = std::move(task);
  }
  held_dirty_ = true;
  RefreshHeld();
  return absl::OkStatus();
}

void Executor::Start() {
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void Executor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Executor::Post(Event event) {
  absl::MutexLock lock(&mu_);
  if (inbox_.size() >= options_.max_inbox && !stopping_) {
    if (!dropped_warned_) {
      Log()->warn("executor inbox full ({} events): holding the coordinator stream until it "
                  "drains",
                  inbox_.size());
      dropped_warned_ = true;
    }
    auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return inbox_.size() < options_.max_inbox || stopping_;
    };
    mu_.Await(absl::Condition(&room));
  }
  // Stopping: the agent is going away; the coordinator resends what it does
  // not see acknowledged or held after the agent reconnects.
  if (stopping_) return;
  inbox_.push_back(std::move(event));
}

void Executor::Assign(v1::TaskAssignment assignment) { Post(std::move(assignment)); }
void Executor::Cancel(v1::CancelTask cancel) { Post(std::move(cancel)); }
void Executor::HandleAck(v1::Ack ack) { Post(std::move(ack)); }
void Executor::HandleStatusAck(v1::StatusAck ack) { Post(std::move(ack)); }
void Executor::OnConnected(uint64_t generation) { Post(ConnectedEvent{generation}); }

std::vector<v1::HeldTask> Executor::HeldTasks() const {
  absl::MutexLock lock(&mu_);
  return held_;
}

int Executor::spawned_count() const {
  absl::MutexLock lock(&mu_);
  return spawned_;
}

void Executor::Loop() {
  bool busy = false;
  for (;;) {
    std::deque<Event> events;
    {
      absl::MutexLock lock(&mu_);
      if (!busy && inbox_.empty() && !stopping_) {
        auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
          return !inbox_.empty() || stopping_;
        };
        mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(50));
      }
      if (stopping_) break;
      events.swap(inbox_);
      dropped_warned_ = false;
    }
    for (Event& e : events) Handle(e);
    busy = Tick();
    RefreshHeld();
    RefreshStats();
  }
  KillAll();
}

void Executor::Handle(Event& event) {
  if (auto* a = std::get_if<v1::TaskAssignment>(&event)) {
    HandleAssign(*a);
  } else if (auto* c = std::get_if<v1::CancelTask>(&event)) {
    HandleCancelEvent(*c);
  } else if (auto* ack = std::get_if<v1::Ack>(&event)) {
    HandleAckEvent(*ack);
  } else if (auto* sa = std::get_if<v1::StatusAck>(&event)) {
    HandleStatusAckEvent(*sa);
  } else if (auto* conn = std::get_if<ConnectedEvent>(&event)) {
    HandleConnected(conn->generation);
  }
}

void Executor::HandleAssign(const v1::TaskAssignment& a) {
  std::vector<v1::RankAssignment> ranks(a.ranks().begin(), a.ranks().end());
  // mpirun: one child (mpirun itself) reported as rank 0 of the group.
  if (a.launcher() == "mpirun") ranks.clear();
  if (ranks.empty()) ranks.emplace_back();  // rank 0 of 1
  absl::Status valid = ValidateAssignment(a, options_.bench_dir);
  // A plan path this agent does not allow is the plan's problem on this
  // node, not a fault: the suite could not run here (exit 2), as when its
  // binary or a tool is missing.
  bool path_refused = false;
  if (valid.ok()) {
    valid = ValidatePlanPaths(a, options_.allow_read, options_.storage_roots);
    path_refused = !valid.ok();
  }
  const SuiteInfo* suite = FindSuite(a.suite());
  const int64_t now_mono = MonotonicNs();
  int64_t start_mono = now_mono;
  if (a.start_at_agent_ns() > 0) {
    start_mono = now_mono + std::max<int64_t>(0, a.start_at_agent_ns() - AgentNowNs());
  }
  for (const v1::RankAssignment& r : ranks) {
    TaskKey key{a.task_id(), a.attempt(), r.rank()};
    if (auto it = tasks_.find(key); it != tasks_.end()) {
      Task& t = *it->second;
      Log()->info("task {} assigned again: already {}", key.DirName(),
                  t.phase == Phase::kDone ? "finished" : "held");
      if (t.phase == Phase::kDone && !t.status_acked) t.status_sent = false;  // resend
      continue;
    }
    if (done_keys_.count(key)) {
      Log()->info("task {} assigned again: already finished and acknowledged",
                  key.DirName());
      continue;
    }
    auto task = std::make_unique<Task>();
    task->key = key;
    task->assignment = a;
    task->local_rank = r.local_rank();
    task->start_mono_ns = start_mono;
    Task& t = *task;
    tasks_[key] = std::move(task);
    held_dirty_ = true;
    v1::TaskStatus status;
    status.set_state(v1::TASK_FAILED);
    status.set_exit_code(-1);
    if (!valid.ok()) {
      Log()->warn("rejected task {}: {}", key.DirName(), std::string(valid.message()));
      if (path_refused || IsCouldNotRun(valid)) {
        // Same contract as a suite exiting 2 (DESIGN.md, "Suite exit codes").
        status.set_exit_code(kCouldNotRunExit);
        status.set_message(absl::StrCat("could not run: ", std::string(valid.message())));
      } else {
        status.set_message(absl::StrCat("rejected: ", std::string(valid.message())));
      }
      Finish(t, status);
      continue;
    }
    if (store_.Exists(key)) {
      // Not ours to reuse (left by someone else); never run twice in one dir.
      status.set_message(absl::StrCat("rejected: task directory ", store_.DirFor(key),
                                      " already exists"));
      Finish(t, status);
      continue;
    }
    if (absl::Status created = store_.Create(key, a); !created.ok()) {
      Log()->error("task {}: {}", key.DirName(), std::string(created.message()));
      status.set_message(std::string(std::string(created.message())));
      Finish(t, status);
      continue;
    }
    t.has_dir = true;
    t.tailer = std::make_unique<SpoolTailer>(store_.SpoolPath(key));
    t.timeout_s =
        a.timeout_seconds() > 0 ? a.timeout_seconds() : suite->default_timeout_s;
    Log()->info(
        "task {}: suite {} accepted{}", key.DirName(), a.suite(),
        start_mono > now_mono
            ? absl::StrCat(", starts in ", (start_mono - now_mono) / kNsPerMs, " ms")
            : "");
  }
}

absl::Status Executor::PrepareRendezvous(const Task& t,
                                          std::map<std::string, std::string>* env) {
  const v1::TaskAssignment& a = t.assignment;
  if (a.group().empty() || rendezvous_ == nullptr) return absl::OkStatus();
  const bool mpirun = a.launcher() == "mpirun";
  auto key = std::make_pair(a.task_id(), a.attempt());
  auto it = endpoints_.find(key);
  if (it == endpoints_.end()) {
    std::set<int> ranks;
    if (mpirun) {
      for (int r = 0; r < a.world_size(); ++r) ranks.insert(r);
    } else {
      for (const auto& [k, task] : tasks_) {
        if (k.task_id == a.task_id() && k.attempt == a.attempt()) ranks.insert(k.rank);
      }
    }
    // mpirun: ranks on other nodes reach this agent over TCP on its own
    // address, the one the coordinator lists first for it.
    const std::string tcp_host = mpirun ? a.peer_addresses(0) : "";
    absl::StatusOr<RelayEndpoint> ep = rendezvous_->Open(a.group(), std::move(ranks), tcp_host);
    if (!ep.ok()) {
      return absl::Status(ep.status().code(),
                          absl::StrCat("rendezvous for the group: ", ep.status().message()));
    }
    it = endpoints_.emplace(key, *ep).first;
  }
  (*env)["CMAX_RENDEZVOUS"] = it->second.address;
  if (!it->second.secret.empty()) (*env)["CMAX_RENDEZVOUS_SECRET"] = it->second.secret;
  return absl::OkStatus();
}

void Executor::CloseIdleRendezvous() {
  for (auto it = endpoints_.begin(); it != endpoints_.end();) {
    bool live = false;
    for (const auto& [k, task] : tasks_) {
      if (k.task_id == it->first.first && k.attempt == it->first.second &&
          task->phase != Phase::kDone) {
        live = true;
        break;
      }
    }
    if (live) {
      ++it;
      continue;
    }
    rendezvous_->Close(it->first.first);
    it = endpoints_.erase(it);
  }
}

void Executor::NoteKill(pid_t pid) {
  if (options_.kills_file.empty()) return;
  std::string dir = options_.kills_file.substr(0, options_.kills_file.rfind('/'));
  if (!dir.empty()) mkdir(dir.c_str(), 0755);
  if (FILE* f = std::fopen(options_.kills_file.c_str(), "a")) {
    std::fprintf(f, "%lld %d\n", static_cast<long long>(NowUnixNs()), static_cast<int>(pid));
    std::fclose(f);
  }
}

void Executor::StartChild(Task& t) {
  const v1::TaskAssignment& a = t.assignment;
  const SuiteInfo* suite = FindSuite(a.suite());
  const bool mpirun = a.launcher() == "mpirun";
  SpawnOptions spawn;
  if (mpirun) {
    absl::StatusOr<std::vector<std::string>> argv =
        MpirunArgv(a, FindExecutable("mpirun"), options_.bench_dir);
    if (!argv.ok()) {
      v1::TaskStatus status;
      status.set_state(v1::TASK_FAILED);
      status.set_exit_code(-1);
      status.set_message(absl::StrCat("launcher mpirun: ", argv.status().message()));
      Finish(t, status);
      return;
    }
    spawn.argv = *std::move(argv);
  } else {
    std::vector<std::string> args(a.args().begin(), a.args().end());
    spawn.argv.push_back(absl::StrCat(options_.bench_dir, "/", SuiteBinary(*suite, args)));
    spawn.argv.push_back(suite->name);
    for (const std::string& arg : a.args()) spawn.argv.push_back(arg);
    spawn.argv.push_back("--jsonl");
    if (suite->takes_root && !options_.root.empty()) {
      spawn.argv.push_back(absl::StrCat("--root=", options_.root));
    }
  }
  for (const auto& [k, v] : a.env()) spawn.env[k] = v;
  const std::string dir = store_.DirFor(t.key);
  const bool group = a.ranks_size() > 0;
  spawn.env["CMAX_TASK_ID"] = a.task_id();
  spawn.env["CMAX_ATTEMPT"] = absl::StrCat(a.attempt());
  spawn.env["CMAX_NODE_NAME"] = options_.node_name;
  spawn.env["CMAX_TASK_DIR"] = dir;
  // The agent's own limits on what a plan may make a suite read or write
  // (common/allowed_files.h); set after the plan's environment.
  spawn.env["CMAX_ALLOW_READ"] = absl::StrJoin(options_.allow_read, ",");
  spawn.env["CMAX_STORAGE_ROOTS"] = absl::StrJoin(options_.storage_roots, ",");
  spawn.env["CMAX_STORAGE_DIR"] =
      options_.storage_roots.empty() ? "" : options_.storage_roots.front();
  if (!options_.advertise.empty()) {
    spawn.env["CMAX_ADVERTISE"] = absl::StrJoin(options_.advertise, ",");
  }
  if (!mpirun) {
    // Under mpirun every rank learns its place from Open MPI; mpirun's own
    // environment reaches its local ranks and must not name a rank.
    spawn.env["CMAX_RANK"] = absl::StrCat(t.key.rank);
    spawn.env["CMAX_WORLD_SIZE"] = absl::StrCat(group ? a.world_size() : 1);
    spawn.env["CMAX_LOCAL_RANK"] = absl::StrCat(t.local_rank);
    spawn.env["CMAX_LOCAL_WORLD_SIZE"] = absl::StrCat(group ? a.local_world_size() : 1);
  }
  if (!a.group().empty()) spawn.env["CMAX_GROUP"] = a.group();
  if (absl::Status rv = PrepareRendezvous(t, &spawn.env); !rv.ok()) {
    v1::TaskStatus status;
    status.set_state(v1::TASK_FAILED);
    status.set_exit_code(-1);
    status.set_message(std::string(rv.message()));
    Log()->error("task {}: {}", t.key.DirName(), status.message());
    Finish(t, status);
    return;
  }
  spawn.cwd = dir;
  spawn.stdout_path = store_.SpoolPath(t.key);
  spawn.stderr_path = store_.StderrPath(t.key);
  spawn.die_with_parent = true;
  if (a.start_at_agent_ns() > 0) {
    // The start instant goes first into the spool, before the suite writes
    // anything: it is line (seq) 0, forwarded, counted and acknowledged like
    // every other record; the child then appends to the same file.
    v1::Record start = TaskStartRecord(suite->name, a.start_at_agent_ns(), AgentNowNs());
    if (absl::Status w = WriteFirstSpoolLine(spawn.stdout_path, start); w.ok()) {
      spawn.append = true;
    } else {
      Log()->error("task {}: start record not written: {}", t.key.DirName(),
                   std::string(w.message()));
    }
  }
  // This runs on the executor thread, which lives as long as the agent:
  // PR_SET_PDEATHSIG fires when the forking *thread* exits.
  absl::StatusOr<std::unique_ptr<Subprocess>> child = Subprocess::Spawn(spawn);
  if (!child.ok()) {
    v1::TaskStatus status;
    status.set_state(v1::TASK_FAILED);
    status.set_exit_code(kCouldNotRunExit);
    status.set_message(absl::StrCat("could not run: could not start ", spawn.argv[0], ": ",
                                    child.status().message()));
    Log()->error("task {}: {}", t.key.DirName(), status.message());
    Finish(t, status);
    return;
  }
  t.proc = *std::move(child);
  t.phase = Phase::kRunning;
  held_dirty_ = true;
  t.started_unix_ns = AgentNowNs();
  const int64_t now_mono = MonotonicNs();
  t.deadline_mono_ns = t.timeout_s > 0 ? now_mono + int64_t{t.timeout_s} * kNsPerS : 0;
  {
    absl::MutexLock lock(&mu_);
    ++spawned_;
  }
  Log()->info("task {}: started {}{} (pid {}, timeout {} s)", t.key.DirName(), suite->name,
              mpirun ? absl::StrCat(" through mpirun, ", a.world_size(), " ranks") : "",
              t.proc->pid(), t.timeout_s);
  v1::TaskStatus running;
  running.set_task_id(t.key.task_id);
  running.set_attempt(t.key.attempt);
  running.set_rank(t.key.rank);
  running.set_state(v1::TASK_RUNNING);
  running.set_started_unix_ns(t.started_unix_ns);
  SendStatus(running);
}

void Executor::OnExit(Task& t, const ExitInfo& info) {
  // Whatever the suite left running in its process group is stopped now,
  // before the spool is counted: records written after this instant would
  // lie beyond record_count and be deleted with the directory unseen.
  const int leftovers = KillLeftovers(t.proc->pid());
  if (leftovers > 0) {
    Log()->warn("task {}: the suite exited and left {} processes in its group; killed them",
                t.key.DirName(), leftovers);
  }
  v1::TaskStatus s;
  s.set_exit_code(info.exited ? info.code : -1);
  s.set_signal(info.exited ? 0 : info.signal);
  s.set_stderr_tail(TailOfFile(store_.StderrPath(t.key), kStderrTailBytes));
  if (t.timed_out) {
    s.set_state(v1::TASK_TIMED_OUT);
    s.set_message(absl::StrCat("killed after ", t.timeout_s, " s timeout"));
  } else if (t.cancelled) {
    s.set_state(v1::TASK_CANCELLED);
    s.set_message(
        absl::StrCat("cancelled", t.cancel_reason.empty() ? "" : ": ", t.cancel_reason));
  } else if (info.exited && (info.code == 0 || info.code == 1)) {
    s.set_state(v1::TASK_COMPLETED);
    s.set_message(info.code == 0 ? "passed" : "ran and found failures");
  } else if (info.exited && info.code == 2) {
    s.set_state(v1::TASK_FAILED);
    std::string last = LastLine(s.stderr_tail());
    s.set_message(absl::StrCat("could not run", last.empty() ? "" : ": ", last));
  } else {
    s.set_state(v1::TASK_FAILED);
    s.set_message(absl::StrCat("crashed: ", info.Describe()));
  }
  if (leftovers > 0) {
    s.set_message(absl::StrCat(s.message(), "; killed ", leftovers, " leftover process",
                               leftovers == 1 ? "" : "es",
                               " of the suite's process group after it exited (their later "
                               "output is not in the records)"));
  }
  Log()->info("task {}: {} ({})", t.key.DirName(), v1::TaskState_Name(s.state()),
              s.message());
  t.proc.reset();
  Finish(t, s);
}

void Executor::Finish(Task& t, v1::TaskStatus s) {
  s.set_task_id(t.key.task_id);
  s.set_attempt(t.key.attempt);
  s.set_rank(t.key.rank);
  s.set_started_unix_ns(t.started_unix_ns);
  s.set_ended_unix_ns(AgentNowNs());
  last_end_unix_ns_[t.assignment.suite()] = s.ended_unix_ns();
  t.record_count = 0;
  if (t.has_dir) {
    absl::StatusOr<int64_t> lines = CountSpoolLines(store_.SpoolPath(t.key));
    if (lines.ok()) {
      t.record_count = *lines;
    } else {
      Log()->error("task {}: {}", t.key.DirName(), std::string(lines.status().message()));
      t.record_count = t.tailer ? t.tailer->next_seq() : 0;
    }
  }
  s.set_record_count(t.record_count);
  if (t.has_dir) {
    if (absl::Status w = store_.WriteStatus(t.key, s); !w.ok()) {
      Log()->error("task {}: status.json not written: {}", t.key.DirName(),
                   std::string(w.message()));
      s.set_message(
          absl::StrCat(s.message(), " (status.json not written: ", w.message(), ")"));
    }
  }
  t.end_status = std::move(s);
  t.phase = Phase::kDone;
  t.status_sent = false;
  held_dirty_ = true;
}

void Executor::HandleCancelEvent(const v1::CancelTask& c) {
  bool found = false;
  const int64_t now_mono = MonotonicNs();
  for (auto& [key, task] : tasks_) {
    if (key.task_id != c.task_id() || key.attempt != c.attempt()) continue;
    found = true;
    Task& t = *task;
    if (t.phase == Phase::kDone) continue;
    t.cancelled = true;
    t.cancel_reason = c.reason();
    if (t.phase == Phase::kWaiting) {
      v1::TaskStatus s;
      s.set_state(v1::TASK_CANCELLED);
      s.set_exit_code(-1);
      s.set_message(absl::StrCat("cancelled before it started",
                                 c.reason().empty() ? "" : ": ", c.reason()));
      Finish(t, s);
    } else if (!t.kill_started) {
      Log()->info("task {}: cancelling ({})", key.DirName(), c.reason());
      t.kill_started = true;
      NoteKill(t.proc->pid());
      t.proc->SignalGroup(SIGTERM);
      t.kill_at_mono_ns = now_mono + options_.kill_grace_ms * kNsPerMs;
    }
  }
  if (!found) {
    Log()->warn("cancel for unknown task {} attempt {}", c.task_id(), c.attempt());
  }
}

void Executor::HandleAckEvent(const v1::Ack& ack) {
  auto it = tasks_.find(TaskKey{ack.task_id(), ack.attempt(), ack.rank()});
  if (it == tasks_.end()) {
    Log()->warn("ack for unknown task {}.a{}.r{}", ack.task_id(), ack.attempt(),
                ack.rank());
    return;
  }
  Task& t = *it->second;
  if (ack.next_seq() <= t.acked) return;
  t.acked = ack.next_seq();
  // The coordinator may already hold more than this agent has sent (records
  // from before a restart): skip ahead instead of resending them.
  if (t.tailer && t.acked > t.tailer->next_seq()) {
    if (absl::Status s = t.tailer->Seek(t.acked); !s.ok()) {
      Log()->warn("task {}: {}", t.key.DirName(), std::string(s.message()));
    }
  }
}

void Executor::HandleStatusAckEvent(const v1::StatusAck& ack) {
  auto it = tasks_.find(TaskKey{ack.task_id(), ack.attempt(), ack.rank()});
  if (it == tasks_.end()) {
    Log()->warn("status ack for unknown task {}.a{}.r{}", ack.task_id(), ack.attempt(),
                ack.rank());
    return;
  }
  // StatusAck carries no state: only an end status that went out on this
  // stream can be what it acknowledges (a late ack of TASK_RUNNING must not
  // count as the end status being durable).
  if (it->second->phase != Phase::kDone || !it->second->status_sent) return;
  it->second->status_acked = true;
}

void Executor::HandleConnected(uint64_t generation) {
  generation_ = generation;
  for (auto& [key, task] : tasks_) {
    Task& t = *task;
    if (t.tailer) {
      if (absl::Status s = t.tailer->Seek(t.acked); !s.ok()) {
        Log()->warn("task {}: {}", key.DirName(), std::string(s.message()));
      }
    }
    if (!t.status_acked) t.status_sent = false;
  }
}

void Executor::SendStatus(const v1::TaskStatus& status) {
  v1::AgentMessage m;
  *m.mutable_status() = status;
  outbox_->Send(generation_, std::move(m));
}

bool Executor::PumpRecords(Task& t) {
  if (!t.tailer || generation_ == 0) return false;
  const bool final = t.phase == Phase::kDone;
  if (final && t.tailer->next_seq() >= t.record_count) return false;
  const int64_t in_flight = t.tailer->next_seq() - t.acked;
  if (in_flight >= options_.max_unacked_records) return false;
  if (!outbox_->HasRoom(generation_)) return false;
  size_t max_records = std::min<int64_t>(options_.max_batch_records,
                                         options_.max_unacked_records - in_flight);
  if (final) {
    max_records = std::min<int64_t>(max_records, t.record_count - t.tailer->next_seq());
  }
  absl::StatusOr<std::vector<SpoolEntry>> entries =
      t.tailer->Read(max_records, options_.max_batch_bytes, final);
  if (!entries.ok()) {
    const int64_t now = MonotonicNs();
    if (now >= t.next_error_log_mono_ns) {
      Log()->error("task {}: {}", t.key.DirName(),
                   std::string(entries.status().message()));
      t.next_error_log_mono_ns = now + 10 * kNsPerS;
    }
    return false;
  }
  if (entries->empty()) return false;
  v1::AgentMessage m;
  v1::RecordBatch* batch = m.mutable_records();
  for (SpoolEntry& e : *entries) {
    v1::SpooledRecord* r = batch->add_records();
    r->set_task_id(t.key.task_id);
    r->set_attempt(t.key.attempt);
    r->set_rank(t.key.rank);
    r->set_seq(e.seq);
    *r->mutable_record() = std::move(e.record);
  }
  outbox_->Send(generation_, std::move(m));
  return true;
}

void Executor::MaybeSendEnd(Task& t) {
  if (t.phase != Phase::kDone || t.status_sent || t.status_acked || generation_ == 0)
    return;
  if (t.tailer && t.tailer->next_seq() < t.record_count) return;  // records first
  v1::AgentMessage m;
  *m.mutable_status() = t.end_status;
  if (outbox_->Send(generation_, std::move(m))) t.status_sent = true;
}

bool Executor::MaybeForget(Task& t) {
  if (t.phase != Phase::kDone || !t.status_acked) return false;
  if (t.tailer && t.acked < t.record_count) return false;
  if (t.has_dir) {
    if (absl::Status s = store_.Remove(t.key); !s.ok()) {
      Log()->warn("task {}: {}", t.key.DirName(), std::string(s.message()));
    }
  }
  Log()->info("task {}: delivered; forgotten", t.key.DirName());
  RememberDone(t.key);
  return true;
}

void Executor::RememberDone(const TaskKey& key) {
  if (!done_keys_.insert(key).second) return;
  done_order_.push_back(key);
  while (done_order_.size() > options_.max_remembered_done) {
    done_keys_.erase(done_order_.front());
    done_order_.pop_front();
  }
  const std::string path = options_.work_dir + "/finished";
  if (done_file_lines_ >= 2 * options_.max_remembered_done) {
    // Compact: write the remembered keys to a new file, then rename it over.
    std::string keys;
    for (const TaskKey& k : done_order_) {
      absl::StrAppend(&keys, k.task_id, " ", k.attempt, " ", k.rank, "\n");
    }
    absl::Status written = WriteFileAtomically(path, keys);
    if (written.ok()) {
      done_file_lines_ = done_order_.size();
      return;
    }
    Log()->warn("cannot compact {}", std::string(written.message()));
  }
  std::ofstream out(path, std::ios::app);
  out << key.task_id << ' ' << key.attempt << ' ' << key.rank << '\n';
  out.flush();
  if (!out) {
    Log()->warn("cannot note task {} in {}: a repeated assignment after a restart would run "
                "it again",
                key.DirName(), path);
  }
  ++done_file_lines_;
}

void Executor::LoadDoneKeys() {
  std::ifstream in(options_.work_dir + "/finished");
  std::string line;
  std::deque<TaskKey> keys;
  while (std::getline(in, line)) {
    ++done_file_lines_;
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    TaskKey k;
    if (f.size() != 3 || !ValidTaskId(f[0]) || !absl::SimpleAtoi(f[1], &k.attempt) ||
        !absl::SimpleAtoi(f[2], &k.rank)) {
      continue;
    }
    k.task_id = f[0];
    keys.push_back(std::move(k));
    if (keys.size() > options_.max_remembered_done) keys.pop_front();
  }
  for (TaskKey& k : keys) {
    if (done_keys_.insert(k).second) done_order_.push_back(std::move(k));
  }
}

bool Executor::Tick() {
  bool busy = false;
  const int64_t now_mono = MonotonicNs();
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    Task& t = *it->second;
    if (t.phase == Phase::kWaiting && now_mono >= t.start_mono_ns) StartChild(t);
    if (t.phase == Phase::kRunning) {
      ExitInfo info;
      if (t.proc->Poll(&info)) {
        OnExit(t, info);
      } else {
        if (t.deadline_mono_ns > 0 && now_mono >= t.deadline_mono_ns && !t.kill_started) {
          Log()->warn("task {}: timeout of {} s reached; stopping it", t.key.DirName(),
                      t.timeout_s);
          t.timed_out = true;
          t.kill_started = true;
          NoteKill(t.proc->pid());
          t.proc->SignalGroup(SIGTERM);
          t.kill_at_mono_ns = now_mono + options_.kill_grace_ms * kNsPerMs;
        }
        if (t.kill_at_mono_ns > 0 && now_mono >= t.kill_at_mono_ns) {
          Log()->warn("task {}: still alive {} ms after SIGTERM; SIGKILL",
                      t.key.DirName(), options_.kill_grace_ms);
          t.proc->SignalGroup(SIGKILL);
          t.kill_at_mono_ns = 0;
        }
      }
    }
    if (PumpRecords(t)) busy = true;
    MaybeSendEnd(t);
    if (MaybeForget(t)) {
      it = tasks_.erase(it);
      held_dirty_ = true;
    } else {
      ++it;
    }
  }
  if (rendezvous_ != nullptr) CloseIdleRendezvous();
  return busy;
}

void Executor::KillAll() {
  std::vector<Task*> running;
  for (auto& [key, task] : tasks_) {
    if (task->phase == Phase::kRunning) {
      Log()->info("task {}: stopping (agent shutting down)", key.DirName());
      NoteKill(task->proc->pid());
      task->proc->SignalGroup(SIGTERM);
      running.push_back(task.get());
    }
  }
  const int64_t kill_at = MonotonicNs() + options_.kill_grace_ms * kNsPerMs;
  while (!running.empty()) {
    ExitInfo info;
    running.erase(std::remove_if(running.begin(), running.end(),
                                 [&](Task* t) { return t->proc->Poll(&info); }),
                  running.end());
    if (running.empty()) break;
    if (MonotonicNs() >= kill_at) {
      for (Task* t : running) {
        t->proc->SignalGroup(SIGKILL);
        t->proc->Wait();
      }
      break;
    }
    usleep(20000);
  }
}

void Executor::RefreshHeld() {
  if (!held_dirty_) return;
  held_dirty_ = false;
  std::vector<v1::HeldTask> held;
  held.reserve(tasks_.size());
  for (const auto& [key, task] : tasks_) {
    v1::HeldTask h;
    h.set_task_id(key.task_id);
    h.set_attempt(key.attempt);
    h.set_rank(key.rank);
    h.set_running(task->phase != Phase::kDone);
    held.push_back(std::move(h));
  }
  absl::MutexLock lock(&mu_);
  held_ = std::move(held);
}

void Executor::RefreshStats() {
  const int64_t now = MonotonicNs();
  if (now - stats_mono_ns_ < 500'000'000) return;
  stats_mono_ns_ = now;
  ExecutorStats st;
  st.held = static_cast<int>(tasks_.size());
  for (const auto& [key, task] : tasks_) {
    if (task->phase == Phase::kRunning) ++st.running;
    if (task->tailer) {
      st.unacked_records += std::max<int64_t>(0, task->tailer->next_seq() - task->acked);
      struct stat sb;
      if (stat(task->tailer->path().c_str(), &sb) == 0) st.spool_bytes += sb.st_size;
    }
  }
  st.last_end_unix_ns = last_end_unix_ns_;
  absl::MutexLock lock(&mu_);
  stats_ = std::move(st);
}

ExecutorStats Executor::Stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace cmax::agent
