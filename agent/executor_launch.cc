// Launching a child: its argv (the suite binary directly, or mpirun for a
// launcher-mpirun group task), its environment (the plan's, then the task's
// CMAX_* variables and the agent's own limits), its working directory and
// output files, the start record written as spool line 0 for a task with a
// start instant, and the group's rendezvous endpoint (opened per (task,
// attempt), closed when no child of the group waits or runs).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/executor.h"
#include "agent/executor_internal.h"
#include "common/allowed_files.h"
#include "common/logging.h"
#include "common/record_io.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "common/suite_catalog.h"
#include "common/time_util.h"

namespace cmax::agent {
namespace {

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

// The suite's command line when the agent starts it itself (not through
// mpirun): <bench-dir>/<binary> <suite> <args> --jsonl, and --root=<root>
// for a suite that takes it when the agent has one.
std::vector<std::string> DirectArgv(const v1::TaskAssignment& a, const SuiteInfo& suite,
                                    const ExecutorOptions& options) {
  std::vector<std::string> argv;
  std::vector<std::string> args(a.args().begin(), a.args().end());
  argv.push_back(absl::StrCat(options.bench_dir, "/", SuiteBinary(suite, args)));
  argv.push_back(suite.name);
  for (const std::string& arg : a.args()) argv.push_back(arg);
  argv.push_back("--jsonl");
  if (suite.takes_root && !options.root.empty()) {
    argv.push_back(absl::StrCat("--root=", options.root));
  }
  return argv;
}

// A child's environment beyond what it inherits: the plan's variables, then
// the task's CMAX_* ones and the agent's own limits, which the plan may
// never set (ValidateSuiteEnv). The rendezvous variables come later
// (PrepareRendezvous). `dir` is the task directory.
std::map<std::string, std::string> ChildEnv(const v1::TaskAssignment& a, const TaskKey& key,
                                            int32_t local_rank, const std::string& dir,
                                            const ExecutorOptions& options) {
  const bool mpirun = a.launcher() == "mpirun";
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : a.env()) env[k] = v;
  const bool group = a.ranks_size() > 0;
  env["CMAX_TASK_ID"] = a.task_id();
  env["CMAX_ATTEMPT"] = absl::StrCat(a.attempt());
  env["CMAX_NODE_NAME"] = options.node_name;
  env["CMAX_TASK_DIR"] = dir;
  // The agent's own limits on what a plan may make a suite read or write
  // (common/allowed_files.h); set after the plan's environment.
  env["CMAX_ALLOW_READ"] = absl::StrJoin(options.allow_read, ",");
  env["CMAX_STORAGE_ROOTS"] = absl::StrJoin(options.storage_roots, ",");
  env["CMAX_STORAGE_DIR"] = options.storage_roots.empty() ? "" : options.storage_roots.front();
  // The monitoring suite's extra ports (--allow-exporter-ports, which the
  // agent's main leaves in its own environment).
  const char* ports = std::getenv(kExporterPortsEnv);
  env[kExporterPortsEnv] = ports != nullptr ? ports : "";
  if (!options.advertise.empty()) {
    env["CMAX_ADVERTISE"] = absl::StrJoin(options.advertise, ",");
  }
  if (!mpirun) {
    // Under mpirun every rank learns its place from Open MPI; mpirun's own
    // environment reaches its local ranks and must not name a rank.
    env["CMAX_RANK"] = absl::StrCat(key.rank);
    env["CMAX_WORLD_SIZE"] = absl::StrCat(group ? a.world_size() : 1);
    env["CMAX_LOCAL_RANK"] = absl::StrCat(local_rank);
    env["CMAX_LOCAL_WORLD_SIZE"] = absl::StrCat(group ? a.local_world_size() : 1);
  }
  if (!a.group().empty()) env["CMAX_GROUP"] = a.group();
  return env;
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

absl::StatusOr<std::vector<std::string>> MpirunArgv(const v1::TaskAssignment& a,
                                                    const std::string& mpirun,
                                                    const std::string& bench_dir) {
  const SuiteInfo* suite = FindSuite(a.suite());
  if (suite == nullptr) return absl::InvalidArgumentError("unknown suite");
  std::vector<std::string> args(a.args().begin(), a.args().end());
  std::vector<std::string> rest;
  CMAX_ASSIGN_OR_RETURN(std::vector<std::string> options, MpirunOptionArgs(args, &rest));
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
  argv.insert(argv.end(), options.begin(), options.end());
  for (const char* var : {"CMAX_RENDEZVOUS", "CMAX_RENDEZVOUS_SECRET", "CMAX_GROUP"}) {
    argv.insert(argv.end(), {"-x", var});
  }
  argv.push_back(absl::StrCat(bench_dir, "/", SuiteBinary(*suite, rest)));
  argv.push_back(suite->name);
  argv.insert(argv.end(), rest.begin(), rest.end());
  argv.push_back("--jsonl");
  return argv;
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
    spawn.argv = DirectArgv(a, *suite, options_);
  }
  const std::string dir = store_.DirFor(t.key);
  spawn.env = ChildEnv(a, t.key, t.local_rank, dir, options_);
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
    v1::Record start = TaskStartRecord(suite->name, a.start_at_agent_ns(), clock_.NowNs());
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
  t.started_unix_ns = clock_.NowNs();
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

}  // namespace cmax::agent
