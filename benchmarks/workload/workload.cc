// cmax-bench workload: one rank of a data-parallel training job. This
// process starts the python rank (train.py, shipped in
// <prefix>/share/cmax/workload) as an argv, never through a shell, with an
// allow-listed environment plus MASTER_ADDR/MASTER_PORT (rank 0's address
// and a free port it picked, published through the group's rendezvous as
// "workload/master"), RANK, LOCAL_RANK, WORLD_SIZE. It tails the python
// rank's JSON lines (a file in the task directory) and turns them into
// records:
//   loss, step_time_s, compute_s  per step, as Samples (labels step, warmup)
//   step_time_median_s, compute_median_s, step_time_p99_p50, tokens_per_s, model_tflops,
//   mfu (GPUs with a known dense BF16 peak), optimizer_s, comm_s,
//   peak_mem_bytes             per rank, over the steps after the warm-up
// every one labelled rank, world_size, python, torch_version, device,
// cpu_model and model (what fixes the loss curve: layers, width, ..., seed,
// lr).
// A rank that logs no step for --stall seconds (180 s before its first
// step, or --stall when longer) writes a workload.no_step
// finding (in_comm: whether it was waiting in the step's all-reduce), kills
// its python rank and exits 1. The python rank dies with this process
// (PR_SET_PDEATHSIG), so the agent's timeout and kill reach it.
// Exit: 0 trained; 1 a stall, a NaN/Inf loss or a failed python rank;
// 2 not measured (no torch, no CUDA on a GPU node, no train.py, bad input).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "benchmarks/suite.h"
#include "common/record_io.h"
#include "common/rendezvous_client.h"
#include "common/subprocess.h"
#include "common/suite_flags.h"
#include "reports/gpu_specs.h"

namespace cmax::bench {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

std::string NodeName() {
  if (const char* n = std::getenv("CMAX_NODE_NAME"); n != nullptr && *n != '\0') return n;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

int CouldNotRun(RecordWriter& out, const std::string& why, const std::string& action = "") {
  std::fprintf(stderr, "workload: %s\n", why.c_str());
  out.NotMeasured("workload.not_measured", "compute", absl::StrCat("node:", NodeName()),
                  "not measured: the training workload could not run", why, action);
  return kExitCouldNotRun;
}

// train.py: <exe dir>/../share/cmax/workload/train.py (installed, node
// tarball and build tree alike).
std::string TrainScript() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const auto p = exe.parent_path().parent_path() / "share" / "cmax" / "workload" / "train.py";
  return std::filesystem::exists(p, ec) ? p.string() : "";
}

// Where the node has NVIDIA GPUs (the driver's /proc entries): it is then a
// GPU node, and torch without CUDA is not measured rather than a CPU run.
bool NodeHasNvidiaGpus() {
  std::error_code ec;
  if (std::filesystem::exists("/dev/nvidia0", ec)) return true;
  if (!std::filesystem::is_directory("/proc/driver/nvidia/gpus", ec)) return false;
  return std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec) !=
         std::filesystem::directory_iterator();
}

// The IPv4 address of interface `ifname` (any interface that is up and not
// loopback when empty), "" when there is none.
std::string InterfaceAddress(const std::string& ifname) {
  ifaddrs* ifs = nullptr;
  std::string found;
  if (getifaddrs(&ifs) != 0) return "";
  for (ifaddrs* i = ifs; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (ifname.empty() ? ((i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
                       : std::string(i->ifa_name) != ifname) {
      continue;
    }
    char buf[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof(buf));
    found = buf;
  }
  freeifaddrs(ifs);
  return found;
}

// The address rank 0 advertises as MASTER_ADDR: the agent's first
// --advertise address, else the IPv4 address of $GLOO_SOCKET_IFNAME, else
// the first IPv4 address of an interface that is up and not loopback, else
// 127.0.0.1 (every rank on this host).
std::string MasterAddress() {
  if (const char* adv = std::getenv("CMAX_ADVERTISE"); adv != nullptr && *adv != '\0') {
    std::vector<std::string> parts = absl::StrSplit(adv, ',', absl::SkipWhitespace());
    if (!parts.empty()) return parts[0];
  }
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname) {
    if (std::string a = InterfaceAddress(ifname); !a.empty()) return a;
  }
  if (std::string a = InterfaceAddress(""); !a.empty()) return a;
  return "127.0.0.1";
}

// A free TCP port in [low, high] (0, 0: any), found by binding to it. The
// python rank 0 binds it moments later (torch's TCPStore).
absl::StatusOr<int> FreePort(int low, int high) {
  for (int port = low; port <= high; ++port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::InternalError("socket failed");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
      socklen_t len = sizeof(a);
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
      close(fd);
      return static_cast<int>(ntohs(a.sin_port));
    }
    close(fd);
    if (low == 0) break;
  }
  return absl::UnavailableError(
      low == 0 ? "no free TCP port" : absl::StrCat("no free TCP port in ", low, "-", high));
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

const Value* Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}
std::optional<double> Num(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  if (v == nullptr || v->kind_case() != Value::kNumberValue) return std::nullopt;
  return v->number_value();
}
std::string Str(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  if (v == nullptr) return "";
  if (v->kind_case() == Value::kStringValue) return v->string_value();
  if (v->kind_case() == Value::kNumberValue) {
    const double d = v->number_value();
    // Whole numbers (parameter counts, FLOPs per token) in full, not "3.7e+06".
    if (std::fabs(d) < 9e15 && d == std::floor(d)) return absl::StrCat(static_cast<int64_t>(d));
    return absl::StrCat(d);
  }
  return "";
}

// The environment of the python rank: an allow-list of this process's
// variables (the agent's and the plan's allow-listed ones), never the
// rendezvous secret.
std::map<std::string, std::string> PythonEnv() {
  static const char* const kKeep[] = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER",
                                      "LD_LIBRARY_PATH", "GLOO_SOCKET_IFNAME",
                                      "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
                                      "CMAX_NODE_NAME", "CMAX_TASK_DIR"};
  std::map<std::string, std::string> env;
  for (const char* k : kKeep) {
    if (const char* v = std::getenv(k)) env[k] = v;
  }
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    if (kv.rfind("NCCL_", 0) == 0) {
      const size_t eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  env["PYTHONNOUSERSITE"] = "1";
  env["PYTHONDONTWRITEBYTECODE"] = "1";
  env["PYTHONHASHSEED"] = "0";
  return env;
}

// The state letter of /proc/<pid>/stat (R, S, D, T, Z...), "" when unread.
std::string ProcessState(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return "";
  return text.substr(paren + 2, 1);
}

// Seconds a rank may take to its first step (interpreter start, torch
// import, the process group's rendezvous) before that is a stall.
constexpr double kStartupGraceS = 180;

struct StepLine {
  int step = 0;
  double loss = 0;
  std::string loss_hex;
  double step_time_s = 0, compute_s = 0, tokens_per_s = 0, optimizer_s = 0;
  std::optional<double> comm_s, peak_mem;
};

}  // namespace

int RunWorkload(int argc, char** argv) {
  std::string python = "python3", device = "auto", port_range;
  // Defaults: about a minute on a 2-core CPU node (docs/workload.md).
  int64_t layers = 4, width = 256, heads = 4, seq = 128, batch = 8, vocab = 1024, steps = 50,
          warmup = 5, threads = 0, fault_rank = -1, fault_step = 2, fault_nan_step = -1;
  double stall_s = 120;
  bool jsonl = false;
  SuiteFlags flags("workload", "cmax-bench");
  flags.Bind("python", &python);
  flags.Bind("layers", &layers);
  flags.Bind("width", &width);
  flags.Bind("heads", &heads);
  flags.Bind("seq", &seq);
  flags.Bind("batch", &batch);
  flags.Bind("vocab", &vocab);
  flags.Bind("steps", &steps);
  flags.Bind("warmup-steps", &warmup);
  flags.Bind("threads", &threads);
  flags.Bind("device", &device);
  flags.Bind("stall", &stall_s);
  flags.Bind("port-range", &port_range);
  flags.extra().AddFlag("jsonl", &jsonl, "write records as JSON lines");
  flags.extra().AddInt("fault-perturb-rank", &fault_rank,
                       "TEST-ONLY: this rank perturbs its parameters after --fault-step, so its "
                       "loss departs from the other replicas'");
  flags.extra().AddInt("fault-step", &fault_step, "TEST-ONLY: the step of --fault-perturb-rank");
  flags.extra().AddInt("fault-nan-step", &fault_nan_step,
                       "TEST-ONLY: every rank's loss is NaN at this step");
  const std::string node = NodeName();
  absl::Status parsed = flags.ParseArgs(argc, argv);
  RecordWriter out("workload", jsonl ? stdout : nullptr, {{"node", node}});
  if (!parsed.ok()) return CouldNotRun(out, std::string(parsed.message()));
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return kExitPassed;
  }
  int low = 0, high = 0;
  if (!port_range.empty()) {
    std::vector<std::string> lh = absl::StrSplit(port_range, '-');
    if (lh.size() != 2 || !absl::SimpleAtoi(lh[0], &low) || !absl::SimpleAtoi(lh[1], &high) ||
        low < 1 || high > 65535 || low > high) {
      return CouldNotRun(out, absl::StrCat("--port-range '", port_range, "' is not LOW-HIGH"));
    }
  }
  const std::string script = TrainScript();
  if (script.empty()) {
    return CouldNotRun(out, "train.py is not installed beside cmax-bench "
                            "(../share/cmax/workload/train.py)",
                       "reinstall cmax-bench with its data files");
  }
  const std::string interpreter = FindExecutable(python);
  if (interpreter.empty()) {
    return CouldNotRun(out, absl::StrCat("no interpreter '", python, "' on PATH"),
                       "install python3 and python3-torch (or set the plan's python)");
  }
  const bool gpu_node = NodeHasNvidiaGpus();
  const std::string use_device = device == "auto" ? (gpu_node ? "cuda" : "cpu") : device;
  if (use_device == "cuda" && !gpu_node) {
    return CouldNotRun(out, "device cuda was asked, but this node has no NVIDIA GPU "
                            "(no /dev/nvidia0, nothing in /proc/driver/nvidia/gpus)",
                       "run the entry on GPU nodes, or with device: cpu on CPU-only nodes");
  }

  // The group: rank 0 publishes MASTER_ADDR and a free port.
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::unique_ptr<RendezvousClient> rv;
  auto client = RendezvousClient::FromEnvironment();
  if (client.ok()) {
    rv = std::move(*client);
    rank = rv->rank();
    world = rv->world_size();
    local_rank = rv->place().local_rank;
  } else if (!absl::IsFailedPrecondition(client.status())) {
    return CouldNotRun(out, std::string(client.status().message()));
  }
  if (rank == 0) {
    auto port = FreePort(low, high);
    if (!port.ok()) return CouldNotRun(out, std::string(port.status().message()));
    master_port = *port;
    if (rv != nullptr) {
      master_addr = MasterAddress();
      if (auto s = rv->Set("workload/master", absl::StrCat(master_addr, " ", master_port));
          !s.ok()) {
        return CouldNotRun(out, std::string(s.message()));
      }
    }
  } else {
    auto v = rv->Get("workload/master", absl::Seconds(120));
    if (!v.ok()) return CouldNotRun(out, std::string(v.status().message()));
    std::vector<std::string> f = absl::StrSplit(*v, ' ', absl::SkipEmpty());
    // Parsed into its types: an address or host name (letters, digits and
    // . : - _ only) and a port number, before it reaches an environment.
    if (f.size() != 2 || !absl::SimpleAtoi(f[1], &master_port) || master_port < 1 ||
        master_port > 65535 ||
        f[0].find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.:-_") !=
            std::string::npos ||
        f[0].size() > 255) {
      return CouldNotRun(out, absl::StrCat("malformed workload/master '", v->substr(0, 100), "'"));
    }
    master_addr = f[0];
  }

  std::vector<std::string> py = {interpreter, "-u", script,
                                 absl::StrCat("--layers=", layers),
                                 absl::StrCat("--width=", width),
                                 absl::StrCat("--heads=", heads),
                                 absl::StrCat("--seq=", seq),
                                 absl::StrCat("--batch=", batch),
                                 absl::StrCat("--vocab=", vocab),
                                 absl::StrCat("--steps=", steps),
                                 absl::StrCat("--warmup-steps=", warmup),
                                 absl::StrCat("--device=", use_device),
                                 absl::StrCat("--timeout=", std::max(60.0, stall_s * 2))};
  if (threads > 0) py.push_back(absl::StrCat("--threads=", threads));
  if (fault_rank >= 0) {
    py.push_back(absl::StrCat("--fault-perturb-rank=", fault_rank));
    py.push_back(absl::StrCat("--fault-step=", fault_step));
    out.Log("warn", absl::StrCat("--fault-perturb-rank ", fault_rank,
                                 ": that rank's parameters are perturbed on purpose"));
  }
  if (fault_nan_step >= 0) {
    py.push_back(absl::StrCat("--fault-nan-step=", fault_nan_step));
    out.Log("warn", absl::StrCat("--fault-nan-step ", fault_nan_step,
                                 ": the loss is made NaN on purpose"));
  }
  std::string dir = std::getenv("CMAX_TASK_DIR") ? std::getenv("CMAX_TASK_DIR") : "";
  if (dir.empty()) dir = std::filesystem::temp_directory_path().string();
  const std::string lines_path =
      absl::StrCat(dir, "/workload-rank", rank, ".", getpid(), ".jsonl");
  const std::string err_path = absl::StrCat(dir, "/workload-rank", rank, ".", getpid(), ".err");
  SpawnOptions so;
  so.argv = py;
  so.inherit_env = false;
  so.env = PythonEnv();
  so.env["MASTER_ADDR"] = master_addr;
  so.env["MASTER_PORT"] = absl::StrCat(master_port);
  so.env["RANK"] = absl::StrCat(rank);
  so.env["WORLD_SIZE"] = absl::StrCat(world);
  so.env["LOCAL_RANK"] = absl::StrCat(local_rank);
  so.stdout_path = lines_path;
  so.stderr_path = err_path;
  out.Progress("starting", 0,
               absl::StrCat("rank ", rank, " of ", world, " on ", node, ": ", interpreter, " ",
                            script, " (MASTER ", master_addr, ":", master_port, ")"));
  auto child = Subprocess::Spawn(so);
  if (!child.ok()) return CouldNotRun(out, std::string(child.status().message()));

  std::map<std::string, std::string> labels = {{"rank", absl::StrCat(rank)},
                                               {"local_rank", absl::StrCat(local_rank)},
                                               {"world_size", absl::StrCat(world)},
                                               {"python", interpreter}};
  if (use_device == "cuda") labels["gpu"] = absl::StrCat(local_rank);
  double flops_per_token = 0;
  std::string device_name;
  std::vector<StepLine> done_steps;
  int last_step = -1, comm_enter = -1;
  std::optional<Struct> error_line;
  bool no_torch = false, no_cuda = false;
  std::string pending;
  std::ifstream in;
  auto last_progress = std::chrono::steady_clock::now();
  ExitInfo exit_info;
  bool exited = false, stalled = false;

  auto read_lines = [&] {
    if (!in.is_open()) in.open(lines_path, std::ios::binary);
    if (!in.is_open()) return;
    char buf[65536];
    while (true) {
      in.read(buf, sizeof(buf));
      const std::streamsize n = in.gcount();
      if (n <= 0) break;
      pending.append(buf, static_cast<size_t>(n));
    }
    in.clear();
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      const std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      Struct s;
      if (!google::protobuf::util::JsonStringToMessage(line, &s).ok()) continue;
      if (const Value* h = Field(s, "header"); h != nullptr && h->has_struct_value()) {
        const Struct& hs = h->struct_value();
        labels["torch_version"] = Str(hs, "torch_version");
        labels["python_version"] = Str(hs, "python");
        labels["device"] = device_name = Str(hs, "device");
        labels["backend"] = Str(hs, "backend");
        labels["dtype"] = Str(hs, "dtype");
        labels["params"] = Str(hs, "params");
        labels["model"] = Str(hs, "model");
        if (const std::string cpu = Str(hs, "cpu_model"); !cpu.empty()) labels["cpu_model"] = cpu;
        flops_per_token = Num(hs, "flops_per_token").value_or(0);
        continue;
      }
      if (Field(s, "error") != nullptr) {
        no_torch = Field(s, "no_torch") != nullptr;
        no_cuda = Field(s, "no_cuda") != nullptr;
        if (no_cuda) labels["torch_version"] = Str(s, "torch_version");
        error_line = s;
        continue;
      }
      if (auto c = Num(s, "comm_enter")) {
        comm_enter = static_cast<int>(*c);
        last_progress = std::chrono::steady_clock::now();
        continue;
      }
      auto step = Num(s, "step");
      auto loss = Num(s, "loss");
      if (!step || !loss) continue;
      StepLine sl;
      sl.step = static_cast<int>(*step);
      sl.loss = *loss;
      sl.loss_hex = Str(s, "loss_hex");
      sl.step_time_s = Num(s, "step_time_s").value_or(0);
      sl.compute_s = Num(s, "compute_s").value_or(sl.step_time_s);
      sl.tokens_per_s = Num(s, "tokens_per_s").value_or(0);
      sl.optimizer_s = Num(s, "optimizer_s").value_or(0);
      sl.comm_s = Num(s, "comm_s");
      sl.peak_mem = Num(s, "peak_mem_bytes");
      last_step = sl.step;
      last_progress = std::chrono::steady_clock::now();
      std::map<std::string, std::string> l = labels;
      l["step"] = absl::StrCat(sl.step);
      l["warmup"] = sl.step < warmup ? "true" : "false";
      if (!sl.loss_hex.empty()) l["loss_hex"] = sl.loss_hex;
      // Per step: Samples (telemetry points), not Measurements, so that a
      // long job's steps do not become thousands of compared figures.
      out.Sample("loss", sl.loss, "nats", l);
      out.Sample("step_time_s", sl.step_time_s, "s", l);
      out.Sample("compute_s", sl.compute_s, "s", l);
      done_steps.push_back(sl);
    }
  };

  const auto start = std::chrono::steady_clock::now();
  while (true) {
    exited = (*child)->Poll(&exit_info);
    read_lines();
    if (exited) break;
    const double idle = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                      last_progress).count();
    // Until the first step, starting python, importing torch and joining
    // the process group may take longer than a step ever should.
    const double limit = last_step < 0 ? std::max(stall_s, kStartupGraceS) : stall_s;
    if (idle > limit) {
      stalled = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  if (stalled) {
    const bool in_comm = comm_enter > last_step;
    // T: stopped (SIGSTOP, a debugger, a suspended job); D: in the kernel,
    // uninterruptible (a driver). Evidence of which rank stopped first.
    const std::string state = ProcessState((*child)->pid());
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                        last_progress).count();
    v1::Finding f;
    f.set_check_id("workload.no_step");
    f.set_severity(v1::SEVERITY_WARN);
    f.set_category("reliability");
    f.set_subject(absl::StrCat("node:", node, " rank:", rank));
    f.set_title(absl::StrCat("training rank ", rank, " logged no step for ",
                             absl::StrFormat("%.0f", waited), " s after step ", last_step,
                             in_comm ? ": it was waiting in the gradient all-reduce"
                                     : ": it had not reached the gradient all-reduce"));
    f.add_evidence(absl::StrCat("python rank pid ", (*child)->pid(), " (state ",
                                state.empty() ? "unknown" : state, "), last step ", last_step,
                                ", last all-reduce entered at step ", comm_enter));
    (*f.mutable_labels())["process_state"] = state;
    (*f.mutable_labels())["rank"] = absl::StrCat(rank);
    (*f.mutable_labels())["world_size"] = absl::StrCat(world);
    (*f.mutable_labels())["last_step"] = absl::StrCat(last_step);
    (*f.mutable_labels())["in_comm"] = in_comm ? "true" : "false";
    (*f.mutable_labels())["waited_s"] = absl::StrFormat("%.1f", waited);
    f.set_action("see the workload judge's stall rule: it names the rank that stopped first");
    out.Find(f);
    (*child)->SignalGroup(SIGKILL);
    (*child)->SignalGroup(SIGCONT);
    (*child)->Wait();
    return kExitFoundFailures;
  }
  (void)start;

  if (no_torch || no_cuda) {
    const std::string why =
        no_torch ? absl::StrCat(interpreter, " has no torch: ", Str(*error_line, "error"))
                 : absl::StrCat("this node has NVIDIA GPUs but ", interpreter, "'s torch ",
                                labels["torch_version"], " has no CUDA");
    return CouldNotRun(out, why,
                       no_torch ? "install PyTorch for this interpreter (Debian: python3-torch) "
                                  "or name another one with the plan's python parameter"
                                : "install a CUDA build of PyTorch for this interpreter");
  }
  if (error_line.has_value()) {
    v1::Finding f;
    f.set_check_id("workload.loss_not_finite");
    f.set_severity(v1::SEVERITY_FAIL);
    f.set_category("reliability");
    f.set_subject(absl::StrCat("node:", node, " rank:", rank));
    f.set_title(absl::StrCat("training rank ", rank, ": ", Str(*error_line, "error")));
    (*f.mutable_labels())["rank"] = absl::StrCat(rank);
    (*f.mutable_labels())["step"] = Str(*error_line, "step");
    f.set_action("check this node's GPU (ECC, Xid) and rerun the workload");
    out.Find(f);
    return kExitFoundFailures;
  }
  if (!exit_info.exited || exit_info.code != 0) {
    const std::string tail = TailOfFile(err_path, 2000);
    v1::Finding f;
    f.set_check_id("workload.rank_failed");
    f.set_severity(v1::SEVERITY_FAIL);
    f.set_category("reliability");
    f.set_subject(absl::StrCat("node:", node, " rank:", rank));
    f.set_title(absl::StrCat("training rank ", rank, " ended with ", exit_info.Describe(),
                             " after step ", last_step));
    f.add_evidence(tail);
    (*f.mutable_labels())["rank"] = absl::StrCat(rank);
    (*f.mutable_labels())["last_step"] = absl::StrCat(last_step);
    f.set_action("read the python rank's stderr (evidence); a peer that died first is named by "
                 "its own finding");
    out.Find(f);
    std::fprintf(stderr, "workload: python rank %d: %s\n%s\n", rank,
                 exit_info.Describe().c_str(), tail.c_str());
    return kExitFoundFailures;
  }

  // Figures over the steps after the warm-up.
  std::vector<double> times, compute, tps, opt, comm;
  double peak = 0;
  for (const StepLine& s : done_steps) {
    if (s.peak_mem) peak = std::max(peak, *s.peak_mem);
    if (s.step < warmup) continue;
    times.push_back(s.step_time_s);
    compute.push_back(s.compute_s);
    tps.push_back(s.tokens_per_s);
    opt.push_back(s.optimizer_s);
    if (s.comm_s) comm.push_back(*s.comm_s);
  }
  if (times.empty()) return CouldNotRun(out, "no step after the warm-up was logged");
  std::map<std::string, std::string> l = labels;
  l["steps"] = absl::StrCat(times.size());
  l["warmup_steps"] = absl::StrCat(warmup);
  const double p50 = Quantile(times, 0.5);
  const double median_tps = Quantile(tps, 0.5);
  out.Measure("step_time_median_s", p50, "s", l);
  out.Measure("compute_median_s", Quantile(compute, 0.5), "s", l);
  out.Measure("step_time_p99_p50", p50 > 0 ? Quantile(times, 0.99) / p50 : 0, "ratio", l);
  out.Measure("tokens_per_s", median_tps, "tokens/s", l);
  out.Measure("optimizer_s", Quantile(opt, 0.5), "s", l);
  if (!comm.empty()) out.Measure("comm_s", Quantile(comm, 0.5), "s", l);
  if (peak > 0) out.Measure("peak_mem_bytes", peak, "bytes", l);
  const double tflops = flops_per_token * median_tps / 1e12;
  l["flops_per_token"] = absl::StrCat(static_cast<int64_t>(flops_per_token));
  if (tflops > 0) out.Measure("model_tflops", tflops, "TFLOP/s", l);
  if (use_device == "cuda") {
    auto spec = reports::FindGpuSpec(device_name);
    const double peak_tflops = spec ? reports::PeakTflops(*spec, "bf16") : 0;
    if (peak_tflops > 0) {
      l["peak_tflops"] = absl::StrCat(peak_tflops);
      out.Measure("mfu", tflops / peak_tflops, "ratio", l);
    } else {
      out.Log("info", absl::StrCat("MFU not measured: no dense BF16 peak known for '",
                                   device_name, "' (reports/gpu_specs.cc)"));
    }
  } else {
    out.Log("info", "MFU not measured on CPU here: the judge divides model_tflops by the "
                    "node's measured GEMM figure when the run has one");
  }
  out.Progress("done", 1,
               absl::StrFormat("rank %d: %zu steps after %d warm-up, %.0f tokens/s, %.3f s/step",
                               rank, times.size(), static_cast<int>(warmup), median_tps, p50));
  if (!jsonl && rank == 0) {
    std::printf("workload rank %d of %d: %.0f tokens/s, median step %.4f s, %.4g TFLOP/s\n",
                rank, world, median_tps, p50, tflops);
  }
  return kExitPassed;
}

}  // namespace cmax::bench
