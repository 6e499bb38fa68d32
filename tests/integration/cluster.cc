#include "tests/integration/cluster.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/record_io.h"
#include "common/secrets.h"
#include "google/protobuf/util/json_util.h"

namespace cmax::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string Cluster::BinDir() {
  const char* e = getenv("CMAX_BIN_DIR");
  return e && *e ? e : CMAX_TEST_BIN_DIR;
}

std::string Cluster::SourceDir() { return CMAX_SOURCE_DIR; }

Cluster::Cluster(std::string prefix, ClusterOptions options)
    : prefix_(std::move(prefix)), options_(std::move(options)) {
  std::string tmpl = "/tmp/cmax-it-" + prefix_ + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  dir_ = mkdtemp(buf.data()) ? buf.data() : "/tmp/cmax-it-" + prefix_;
  agents_.resize(options_.agents);
}

Cluster::~Cluster() {
  for (int i = 0; i < static_cast<int>(agents_.size()); ++i) StopAgent(i, SIGKILL);
  StopCoordinator(SIGKILL);
  if (netns_) {
    (void)RunCommand({SourceDir() + "/tests/hosts.sh", "down", prefix_}, std::chrono::seconds(30));
  }
  if (!getenv("CMAX_KEEP_TEST_DIRS")) {
    (void)RunCommand({"rm", "-rf", dir_}, std::chrono::seconds(30));
  }
}

std::vector<std::string> Cluster::InNamespace(const std::string& ns,
                                              std::vector<std::string> argv) const {
  if (!netns_) return argv;
  std::vector<std::string> out = {"ip", "netns", "exec", ns};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

absl::Status Cluster::Start() {
  if (options_.netns) {
    (void)RunCommand({SourceDir() + "/tests/hosts.sh", "down", prefix_}, std::chrono::seconds(30));
    auto up = RunCommand({SourceDir() + "/tests/hosts.sh", "up", prefix_,
                          std::to_string(options_.agents)},
                         std::chrono::seconds(60));
    if (up.ok() && up->exit.exited && up->exit.code == 0) {
      netns_ = true;
      for (absl::string_view line : absl::StrSplit(up->out, '\n')) {
        std::vector<std::string> f = absl::StrSplit(line, ' ');
        if (f.size() != 3 || f[0] != "ADDR") continue;
        if (f[1] == "hub") hub_addr_ = f[2];
        else host_addrs_.push_back(f[2]);
      }
    } else {
      fprintf(stderr,
              "NOTE: network namespaces are not available here (%s); agents use loopback\n",
              up.ok() ? up->err.c_str() : std::string(up.status().message()).c_str());
      (void)RunCommand({SourceDir() + "/tests/hosts.sh", "down", prefix_},
                       std::chrono::seconds(30));
    }
  }
  if (options_.tls) {
    std::string names = netns_ ? hub_addr_ + ",127.0.0.1,localhost" : "127.0.0.1,localhost";
    // "client" for cmaxctl; with mutual TLS each agent has its node's own,
    // as the coordinator binds a certificate to the node it names.
    std::vector<std::string> argv = {SourceDir() + "/deploy/gen-certs.sh", dir_ + "/tls", names,
                                     "client"};
    if (options_.mtls) {
      for (int i = 0; i < options_.agents; ++i) argv.push_back(node(i));
    }
    auto r = RunCommand(argv, std::chrono::seconds(60));
    if (!r.ok() || r->exit.code != 0) return absl::InternalError("gen-certs.sh failed");
  }
  if (options_.token.empty() && !options_.no_token) {
    auto random = RandomHex(16);
    if (!random.ok()) return random.status();
    options_.token = *random;
  }
  if (!options_.token.empty()) {
    std::ofstream(dir_ + "/token") << options_.token << "\n";
    chmod((dir_ + "/token").c_str(), 0600);
    if (!options_.shared_agent_token) {
      auto agent = RandomHex(16);
      if (!agent.ok()) return agent.status();
      std::ofstream(dir_ + "/agent-token") << *agent << "\n";
      chmod((dir_ + "/agent-token").c_str(), 0600);
    }
  }
  if (auto s = StartCoordinator(); !s.ok()) return s;
  for (int i = 0; i < options_.agents; ++i) {
    if (auto s = StartAgent(i); !s.ok()) return s;
  }
  return WaitForAgents(options_.agents, "connected", std::chrono::seconds(30));
}

std::string Cluster::agent_token_file() const {
  return options_.shared_agent_token ? token_file() : dir_ + "/agent-token";
}

absl::Status Cluster::StartCoordinator() {
  std::string listen = netns_ ? absl::StrCat(hub_addr_, ":", port_ ? port_ : 8470)
                              : absl::StrCat("127.0.0.1:", port_);
  std::vector<std::string> argv = {BinDir() + "/cmax-coordinator", "--data-dir", data_dir(),
                                   "--listen", listen, "--heartbeat-timeout",
                                   std::to_string(options_.heartbeat_timeout_s)};
  if (!options_.token.empty()) {
    argv.insert(argv.end(), {"--token-file", dir_ + "/token"});
    if (!options_.shared_agent_token) {
      argv.insert(argv.end(), {"--agent-token-file", dir_ + "/agent-token"});
    }
  } else {
    argv.push_back("--no-token");
  }
  if (options_.tls) {
    argv.insert(argv.end(),
                {"--tls-cert", dir_ + "/tls/server.pem", "--tls-key", dir_ + "/tls/server.key"});
    if (options_.mtls) argv.insert(argv.end(), {"--tls-client-ca", dir_ + "/tls/ca.pem"});
  }
  if (netns_ && (options_.token.empty() || !options_.tls)) argv.push_back("--allow-insecure");
  argv.insert(argv.end(), options_.coordinator_args.begin(), options_.coordinator_args.end());
  SpawnOptions so;
  so.argv = InNamespace(prefix_ + "-hub", argv);
  so.stdout_path = dir_ + "/coordinator.out";
  so.stderr_path = dir_ + "/coordinator.log";
  so.append = true;
  // A fresh stdout for the "listening on" line.
  std::ofstream(so.stdout_path, std::ios::trunc).close();
  auto child = Subprocess::Spawn(so);
  if (!child.ok()) return child.status();
  coordinator_ = std::move(*child);
  for (int i = 0; i < 200; ++i) {
    std::string out = Slurp(so.stdout_path);
    size_t at = out.find("listening on ");
    if (at != std::string::npos && out.find('\n', at) != std::string::npos) {
      std::string addr = out.substr(at + 13, out.find('\n', at) - at - 13);
      address_ = addr;
      // Printed before "listening on" when --http-listen is given.
      web_address_.clear();
      if (size_t w = out.find("web on "); w != std::string::npos && w < at) {
        web_address_ = out.substr(w + 7, out.find('\n', w) - w - 7);
      }
      int p = 0;
      if (absl::SimpleAtoi(addr.substr(addr.rfind(':') + 1), &p)) port_ = p;
      return absl::OkStatus();
    }
    ExitInfo info;
    if (coordinator_->Poll(&info)) {
      return absl::InternalError(absl::StrCat("coordinator exited (", info.Describe(), "): ",
                                              TailOfFile(so.stderr_path, 2000)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::DeadlineExceededError("coordinator did not start listening");
}

void Cluster::StopCoordinator(int sig) {
  if (!coordinator_) return;
  coordinator_->SignalGroup(sig);
  coordinator_->Wait();
  coordinator_.reset();
}

std::string Cluster::agent_work_dir(int i) const { return absl::StrCat(dir_, "/agent-", i); }

absl::Status Cluster::StartAgent(int i) {
  std::vector<std::string> argv = {BinDir() + "/cmax-agent", "--coordinator", address_,
                                   "--node-name", node(i), "--work-dir", agent_work_dir(i),
                                   "--bench-dir",
                                   options_.bench_dir.empty() ? BinDir() : options_.bench_dir};
  if (i < static_cast<int>(options_.agent_roots.size()) && !options_.agent_roots[i].empty()) {
    argv.insert(argv.end(), {"--root", options_.agent_roots[i]});
  }
  if (i < static_cast<int>(options_.clock_offsets_ms.size())) {
    argv.insert(argv.end(),
                {"--test-clock-offset-ms", std::to_string(options_.clock_offsets_ms[i])});
  }
  if (i < static_cast<int>(options_.advertise.size()) && !options_.advertise[i].empty()) {
    argv.insert(argv.end(), {"--advertise", options_.advertise[i]});
  } else if (!netns_) {
    argv.insert(argv.end(), {"--advertise", "127.0.0.1"});
  }
  if (!options_.token.empty()) argv.insert(argv.end(), {"--token-file", agent_token_file()});
  if (options_.tls) argv.insert(argv.end(), {"--tls-ca", dir_ + "/tls/ca.pem"});
  if (options_.tls && options_.mtls) {
    argv.insert(argv.end(), {"--tls-cert", dir_ + "/tls/" + node(i) + ".pem", "--tls-key",
                             dir_ + "/tls/" + node(i) + ".key"});
  }
  // Namespaces put the coordinator on a (test-made) non-loopback address.
  if (netns_ && !options_.tls) argv.push_back("--allow-insecure");
  argv.insert(argv.end(), {"--storage-roots",
                           absl::StrCat(agent_work_dir(i), "/storage,", shared_storage_dir())});
  argv.insert(argv.end(), options_.agent_args.begin(), options_.agent_args.end());
  SpawnOptions so;
  so.argv = InNamespace(absl::StrCat(prefix_, "-", i), argv);
  so.env = options_.agent_env;
  so.stdout_path = absl::StrCat(dir_, "/agent-", i, ".log");
  so.stderr_path = so.stdout_path;
  so.append = true;
  auto child = Subprocess::Spawn(so);
  if (!child.ok()) return child.status();
  agents_[i] = std::move(*child);
  return absl::OkStatus();
}

void Cluster::StopAgent(int i, int sig) {
  if (i >= static_cast<int>(agents_.size()) || !agents_[i]) return;
  agents_[i]->SignalGroup(sig);
  agents_[i]->Wait();
  agents_[i].reset();
}

pid_t Cluster::agent_pid(int i) const { return agents_[i] ? agents_[i]->pid() : -1; }
pid_t Cluster::coordinator_pid() const { return coordinator_ ? coordinator_->pid() : -1; }

namespace {

std::string ProcFile(pid_t pid, const char* name) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/", name), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t ParentOf(pid_t pid) {
  // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces.
  const std::string stat = ProcFile(pid, "stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 > stat.size()) return -1;
  std::vector<std::string> f = absl::StrSplit(stat.substr(close + 2), ' ');
  int ppid = -1;
  if (f.size() < 2 || !absl::SimpleAtoi(f[1], &ppid)) return -1;
  return ppid;
}

}  // namespace

pid_t Cluster::SuiteProcessOf(int i, const std::string& cmdline_part) const {
  const pid_t root = agent_pid(i);
  if (root <= 0) return -1;
  std::map<pid_t, pid_t> parent;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      int pid = 0;
      if (absl::SimpleAtoi(e->d_name, &pid)) parent[pid] = ParentOf(pid);
    }
    closedir(d);
  }
  for (const auto& [pid, ppid] : parent) {
    bool under = false;
    for (pid_t p = ppid; p > 1 && !under; p = parent.count(p) ? parent[p] : -1) {
      under = p == root;
    }
    if (!under) continue;
    const std::string cmd = ProcFile(pid, "cmdline");
    if (absl::StrContains(cmd, "cmax-bench") && absl::StrContains(cmd, cmdline_part)) {
      return pid;
    }
  }
  return -1;
}

absl::Status Cluster::WaitForAgents(int n, const std::string& state,
                                    std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    CommandResult r = Ctl({"agents", "--json"}, std::chrono::seconds(10));
    last = r.out + r.err;
    v1::ListAgentsResponse resp;
    if (r.exit.code == 0 &&
        google::protobuf::util::JsonStringToMessage(r.out, &resp).ok()) {
      int count = 0;
      for (const auto& a : resp.agents()) {
        if (a.state() == state || (state == "connected" && a.state() == "busy")) ++count;
      }
      if (count >= n) return absl::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("fewer than ", n, " agents ", state, "; last answer: ", last));
}

CommandResult Cluster::Ctl(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  std::vector<std::string> argv = {BinDir() + "/cmaxctl", "--coordinator", address_};
  if (!options_.token.empty()) argv.insert(argv.end(), {"--token-file", dir_ + "/token"});
  if (options_.tls) argv.insert(argv.end(), {"--tls-ca", dir_ + "/tls/ca.pem"});
  if (options_.tls && options_.mtls) {
    argv.insert(argv.end(), {"--tls-cert", dir_ + "/tls/client.pem", "--tls-key",
                             dir_ + "/tls/client.key"});
  }
  if (netns_ && !options_.tls) argv.push_back("--allow-insecure");
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunCommand(InNamespace(prefix_ + "-hub", argv), timeout, 64 << 20);
  if (!r.ok()) {
    CommandResult failed;
    failed.err = std::string(r.status().message());
    failed.exit.exited = true;
    failed.exit.code = 127;
    return failed;
  }
  return *r;
}

CommandResult Cluster::OnHost(int i, const std::vector<std::string>& argv,
                              std::chrono::seconds timeout) {
  auto r = RunCommand(InNamespace(absl::StrCat(prefix_, "-", i), argv), timeout);
  if (!r.ok()) {
    CommandResult failed;
    failed.err = std::string(r.status().message());
    failed.exit.code = 127;
    return failed;
  }
  return *r;
}

CommandResult Cluster::OnHub(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  auto r = RunCommand(InNamespace(prefix_ + "-hub", argv), timeout, 64 << 20);
  if (!r.ok()) {
    CommandResult failed;
    failed.err = std::string(r.status().message());
    failed.exit.exited = true;
    failed.exit.code = 127;
    return failed;
  }
  return *r;
}

absl::Status Cluster::Hosts(const std::vector<std::string>& args) {
  if (!netns_) return absl::FailedPreconditionError("no network namespaces on this machine");
  std::vector<std::string> argv = {SourceDir() + "/tests/hosts.sh", args.at(0), prefix_};
  argv.insert(argv.end(), args.begin() + 1, args.end());
  auto r = RunCommand(argv, std::chrono::seconds(30));
  if (!r.ok() || r->exit.code != 0) {
    return absl::InternalError(absl::StrCat("hosts.sh failed: ", r.ok() ? r->err : ""));
  }
  return absl::OkStatus();
}

std::string Cluster::WritePlan(const std::string& name, const std::string& yaml) const {
  std::string path = absl::StrCat(dir_, "/", name, ".yaml");
  std::ofstream(path) << yaml;
  return path;
}

std::string Cluster::RunIdFrom(const std::string& out) {
  size_t at = out.find("run r");
  if (at == std::string::npos) return "";
  size_t end = out.find(':', at);
  return out.substr(at + 4, end - at - 4);
}

}  // namespace cmax::testing
