// rdma: perftest (ib_write_bw, ib_read_bw, ib_write_lat) between the two
// nodes of a pair, rail by rail (issue 20, item 2). cmax runs it with scope
// pairs: rounds of disjoint node pairs, one task per pair, rank 0 the
// server and rank 1 the client.
//
// Protocol over the group's rendezvous (common/rendezvous_client.h):
//   rdma/rails/<rank>  "ok" and one FormatRail line per rail, or
//                      "none <reason>" when this node cannot take part
//   then for run k (rail i, test t, in that order), both ranks in step:
//   rdma/srv/<k>       server: "ready <tcp port> <addr>,<addr>" once its
//                      perftest listens, or "fail <reason>"
//   rdma/cli/<k>       client: "done <exit>" when its perftest ended
//   rdma/srvexit/<k>   server: "<exit>\t<stderr tail>" of its perftest
//   rdma/result        client: its exit code, which the server adopts
// Rail i of one node meets rail i of the other (rails.h orders them by the
// GPU the GPU-NIC map pairs with each NIC).
//
// Records (written by the client, labels src = client node, dst = server
// node, hca, port, peer_hca, peer_port, gpu, peer_gpu, memory, link_layer,
// port_rate_gbps, peer_port_rate_gbps, rail, test, size_bytes,
// perftest_version):
//   rdma_write_bw_gbps, rdma_read_bw_gbps   BW average, Gb/s (label
//                                           min_rate_fraction: the judge's floor)
//   rdma_write_lat_us                       stat=p50 (perftest's t_typical),
//                                           p99, avg; usec
// Findings: rdma.run_failed (FAIL, networking) when the client's perftest
// failed while the server's was listening: the link's, with both commands
// and stderr tails; not-measured findings (RecordWriter::NotMeasured) for
// everything that could not run: no RDMA devices, no active port, perftest
// not installed, the peer not at the rendezvous, the server side not
// starting, a rail without a partner.
// Exit: 0 ran, 1 a run failed on a link, 2 nothing could be measured.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "benchmarks/connectivity/peer_link.h"
#include "benchmarks/rdma/perftest_report.h"
#include "benchmarks/rdma/rails.h"
#include "benchmarks/suite.h"
#include "common/suite_flags.h"
#include "common/record_io.h"
#include "common/rendezvous_client.h"
#include "common/subprocess.h"
#include "common/sysroot.h"

namespace cmax::bench {
namespace {

using rdma::PerftestTest;
using rdma::Rail;

constexpr char kCategory[] = "networking";
constexpr double kDefaultMinRateFraction = 0.9;

std::string NodeName() {
  if (const char* n = getenv("CMAX_NODE_NAME"); n && *n) return n;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::string Tail(const std::string& text, size_t max_bytes) {
  std::string t = text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  }
  return text;
}

std::string End(const std::string& node, const Rail& r) {
  return absl::StrCat(node, ":", r.hca, "/", r.port);
}

// The first TCP port in [base, base + 100) that binds on every address now;
// perftest's server binds it right after (a small race, reported as a
// server failure if lost). 0 when none.
int FreeTcpPort(int base) {
  for (int p = base; p < base + 100 && p <= 65535; ++p) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(p));
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (ok) return p;
  }
  return 0;
}

// Whether this network namespace has a TCP socket listening on `port`:
// /proc/net/tcp{,6} rows "sl local_address rem_address st ..." with the
// local port in hex after the colon and st 0A = TCP_LISTEN
// (Documentation/networking/proc_net_tcp.rst).
bool Listening(int port) {
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (f.size() < 4 || f[3] != "0A") continue;
      size_t colon = f[1].rfind(':');
      int p = 0;
      if (colon != std::string::npos && absl::SimpleHexAtoi(f[1].substr(colon + 1), &p) &&
          p == port) {
        return true;
      }
    }
  }
  return false;
}

struct Settings {
  std::string root = "/";
  std::vector<PerftestTest> tests;
  rdma::PerftestOptions perftest;
  int gid_index = -1;
  std::string cuda = "auto";
  double run_timeout_s = 0;  // 0: derived from duration
  double min_rate_fraction = kDefaultMinRateFraction;
  bool jsonl = false;
};

class RdmaRun {
 public:
  RdmaRun(Settings s, RecordWriter* out)
      : s_(std::move(s)), out_(*out), node_(NodeName()) {}
  int Run();

 private:
  int CouldNotRun(const std::string& check, const std::string& title,
                  const std::string& why, const std::string& action);
  // The reason this node cannot take part, empty when it can; fills rails_
  // and programs_.
  std::string Prepare();
  bool CudaSupported(const std::string& program);
  int ServerRuns(RendezvousClient& rv);
  int ClientRuns(RendezvousClient& rv);
  double RunTimeout() const {
    if (s_.run_timeout_s > 0) return s_.run_timeout_s;
    return 60 + 2 * s_.perftest.duration_s;
  }
  std::map<std::string, std::string> Labels(size_t i, PerftestTest t) const;

  Settings s_;
  RecordWriter& out_;
  const std::string node_;
  std::string peer_node_;
  std::vector<Rail> rails_, peer_rails_;
  std::map<PerftestTest, std::string> programs_;
  bool use_cuda_ = false;
  bool cuda_by_bus_id_ = false;
  std::string perftest_version_ = "unknown";
  std::string work_dir_;
};

int RdmaRun::CouldNotRun(const std::string& check, const std::string& title,
                         const std::string& why, const std::string& action) {
  std::fprintf(stderr, "rdma: %s\n", why.c_str());
  out_.Log("error", absl::StrCat("not measured: ", why));
  out_.NotMeasured(check, kCategory, absl::StrCat("node:", node_), title, why, action);
  return kExitCouldNotRun;
}

bool RdmaRun::CudaSupported(const std::string& program) {
  // perftest built with CUDA lists --use_cuda in its usage (perftest's
  // README, "GPUDirect usage"); Debian's build has no CUDA and does not.
  auto r = RunCommand({program, "--help"}, std::chrono::seconds(10), 1 << 16);
  if (!r.ok()) return false;
  const std::string text = r->out + r->err;
  cuda_by_bus_id_ = absl::StrContains(text, "use_cuda_bus_id");
  return absl::StrContains(text, "use_cuda");
}

std::string RdmaRun::Prepare() {
  absl::StatusOr<std::vector<Rail>> rails =
      rdma::ReadRails(Sysroot(s_.root), s_.gid_index);
  if (!rails.ok()) return std::string(rails.status().message());
  rails_ = *std::move(rails);
  std::vector<std::string> missing;
  for (PerftestTest t : s_.tests) {
    std::string path = FindExecutable(rdma::PerftestProgram(t));
    if (path.empty()) missing.push_back(rdma::PerftestProgram(t));
    programs_[t] = path;
  }
  if (!missing.empty()) {
    return absl::StrCat("perftest is not installed: ", absl::StrJoin(missing, ", "),
                        " not found on PATH (Debian/Ubuntu package perftest)");
  }
  bool any_gpu = false;
  for (const Rail& r : rails_) any_gpu = any_gpu || r.gpu >= 0;
  if (s_.cuda != "off") {
    const bool driver = Sysroot(s_.root).Exists("/dev/nvidiactl");
    const bool supported = any_gpu && driver && CudaSupported(programs_.begin()->second);
    if (supported) {
      use_cuda_ = true;
    } else if (s_.cuda == "on") {
      return absl::StrCat("--cuda=on but GPUDirect cannot be used: ",
                          !any_gpu ? "the GPU-NIC map pairs no GPU with an RDMA device"
                          : !driver
                              ? "no NVIDIA driver (/dev/nvidiactl)"
                              : "this perftest was built without CUDA (no --use_cuda in "
                                "its --help)");
    }
  }
  // "Version: 6.06" (perftest -V; 6.06 exits 1 after printing it), kept
  // with the numbers.
  if (auto v = RunCommand({programs_.begin()->second, "--version"},
                          std::chrono::seconds(10), 1 << 12);
      v.ok()) {
    const std::string text = v->out + v->err;
    if (size_t at = text.find("Version:"); at != std::string::npos) {
      std::string ver = text.substr(at + 8, text.find('\n', at) - at - 8);
      perftest_version_ = std::string(absl::StripAsciiWhitespace(ver)).substr(0, 32);
    }
  }
  s_.perftest.use_cuda = use_cuda_;
  s_.perftest.cuda_by_bus_id = cuda_by_bus_id_;
  if (const char* dir = getenv("CMAX_TASK_DIR"); dir && *dir) {
    work_dir_ = dir;
  } else {
    char tmpl[] = "/tmp/cmax-rdma-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return "cannot make a work directory under /tmp";
    work_dir_ = tmpl;
  }
  return "";
}

std::map<std::string, std::string> RdmaRun::Labels(size_t i, PerftestTest t) const {
  const Rail& me = rails_[i];
  const Rail& peer = peer_rails_[i];
  std::map<std::string, std::string> l = {
      {"src", node_},
      {"dst", peer_node_},
      {"hca", me.hca},
      {"port", absl::StrCat(me.port)},
      {"peer_hca", peer.hca},
      {"peer_port", absl::StrCat(peer.port)},
      {"gpu", me.gpu >= 0 ? absl::StrCat(me.gpu) : "none"},
      {"peer_gpu", peer.gpu >= 0 ? absl::StrCat(peer.gpu) : "none"},
      {"memory", use_cuda_ && me.gpu >= 0 ? "cuda" : "host"},
      {"link_layer", me.link_layer},
      {"port_rate_gbps", absl::StrCat(me.rate_gbps)},
      {"peer_port_rate_gbps", absl::StrCat(peer.rate_gbps)},
      {"rail", absl::StrCat(i)},
      {"test", rdma::PerftestTestName(t)},
      {"perftest_version", perftest_version_},
  };
  return l;
}

int RdmaRun::Run() {
  const std::string reason = Prepare();
  auto client = RendezvousClient::FromEnvironment();
  if (!client.ok()) {
    if (!reason.empty()) {
      return CouldNotRun("rdma.not_measured", "not measured: rdma could not run", reason,
                         "install perftest and check the RDMA devices (ibv_devinfo)");
    }
    return CouldNotRun(
        "rdma.not_measured", "not measured: rdma could not run",
        absl::StrCat("rdma needs a pair of nodes (scope: pairs): ",
                     client.status().message()),
        "run it as a pairs task of a cmax run (it needs the group's rendezvous)");
  }
  RendezvousClient& rv = **client;
  if (rv.world_size() != 2) {
    return CouldNotRun(
        "rdma.not_measured", "not measured: rdma could not run",
        absl::StrCat("rdma runs between two nodes (scope: pairs); this group has ",
                     rv.world_size(), " ranks"),
        "use scope: pairs in the plan");
  }
  const int rank = rv.rank();
  std::vector<std::string> lines;
  if (reason.empty()) {
    lines.push_back(absl::StrCat("ok ", node_));
    for (const Rail& r : rails_) lines.push_back(rdma::FormatRail(r));
  } else {
    lines.push_back(absl::StrCat("none ", node_, " ", OneLine(reason)));
  }
  if (auto st = rv.Set(absl::StrCat("rdma/rails/", rank), absl::StrJoin(lines, "\n"));
      !st.ok()) {
    return CouldNotRun("rdma.not_measured", "not measured: rdma could not run",
                       absl::StrCat("rendezvous: ", st.message()), "");
  }
  if (!reason.empty()) {
    return CouldNotRun("rdma.not_measured", "not measured: rdma could not run", reason,
                       "install perftest and check the RDMA devices (ibv_devinfo, "
                       "/sys/class/infiniband/*/ports/*/state)");
  }
  auto peer = rv.Get(absl::StrCat("rdma/rails/", 1 - rank), absl::Seconds(120));
  if (!peer.ok()) {
    return CouldNotRun(
        "rdma.peer_missing", "not measured: the peer did not show up",
        absl::StrCat("the other node of the pair did not publish its rails at "
                     "the rendezvous within 120 s: ",
                     peer.status().message()),
        "check the peer's agent and its task log");
  }
  std::vector<std::string> peer_lines = absl::StrSplit(*peer, '\n', absl::SkipEmpty());
  if (peer_lines.empty() || !absl::StartsWith(peer_lines[0], "ok ")) {
    std::string why = peer_lines.empty() ? "(empty)" : peer_lines[0];
    std::vector<std::string> w = absl::StrSplit(why, absl::MaxSplits(' ', 2));
    std::string peer_name = w.size() > 1 ? w[1] : "the peer";
    return CouldNotRun(
        "rdma.peer_not_measured", "not measured: the peer cannot run perftest",
        absl::StrCat(peer_name, " cannot take part: ", w.size() > 2 ? w[2] : why),
        absl::StrCat("fix ", peer_name, " (its own record says why)"));
  }
  peer_node_ = peer_lines[0].substr(3);
  for (size_t j = 1; j < peer_lines.size(); ++j) {
    auto r = rdma::ParseRail(peer_lines[j]);
    if (!r.ok()) {
      return CouldNotRun("rdma.not_measured", "not measured: rdma could not run",
                         absl::StrCat("peer ", peer_node_, ": ", r.status().message()),
                         "");
    }
    peer_rails_.push_back(*r);
  }
  // Rails without a partner on the other node.
  for (size_t i = peer_rails_.size(); i < rails_.size(); ++i) {
    out_.NotMeasured("rdma.unpaired_rail", kCategory,
                     absl::StrCat("port:", End(node_, rails_[i])),
                     absl::StrCat("not measured: rail ", i, " (", End(node_, rails_[i]),
                                  ") has no partner on ", peer_node_),
                     absl::StrCat(node_, " has ", rails_.size(), " active RDMA ports, ",
                                  peer_node_, " has ", peer_rails_.size()),
                     "bring up the missing ports or compare like nodes");
  }
  const size_t n = std::min(rails_.size(), peer_rails_.size());
  rails_.resize(n);
  peer_rails_.resize(n);
  out_.Progress(
      "rails", 0,
      absl::StrCat(rank == 0 ? "server" : "client", " on ", node_, ", peer ", peer_node_,
                   ": ", n, " rails, ", s_.tests.size(), " tests each",
                   use_cuda_ ? ", GPU memory (--use_cuda)" : ", host memory"));
  return rank == 0 ? ServerRuns(rv) : ClientRuns(rv);
}

int RdmaRun::ServerRuns(RendezvousClient& rv) {
  const absl::Duration wait = absl::Seconds(RunTimeout() + 120);
  std::vector<std::string> addrs = connectivity::ListenAddresses();
  if (addrs.empty()) addrs.push_back("127.0.0.1");
  int k = 0;
  int not_measured = 0;
  for (size_t i = 0; i < rails_.size(); ++i) {
    for (PerftestTest t : s_.tests) {
      const std::string key = absl::StrCat(k++);
      const std::string what =
          absl::StrCat(rdma::PerftestProgram(t), " server on ", End(node_, rails_[i]));
      rdma::PerftestOptions o = s_.perftest;
      o.tcp_port = FreeTcpPort(s_.perftest.tcp_port);
      std::string fail;
      std::unique_ptr<Subprocess> child;
      std::vector<std::string> argv;
      const std::string out_path =
          absl::StrCat(work_dir_, "/perftest-server-", key, ".out");
      const std::string err_path =
          absl::StrCat(work_dir_, "/perftest-server-", key, ".err");
      if (o.tcp_port == 0) {
        fail = absl::StrCat("no free TCP port in [", s_.perftest.tcp_port, ", ",
                            s_.perftest.tcp_port + 100, ")");
      } else {
        argv = rdma::PerftestArgv(programs_[t], t, rails_[i], o, "");
        SpawnOptions so;
        so.argv = argv;
        so.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
        so.stdout_path = out_path;
        so.stderr_path = err_path;
        auto c = Subprocess::Spawn(so);
        if (!c.ok()) {
          fail = std::string(c.status().message());
        } else {
          child = std::move(*c);
          // Up to 10 s for it to listen; an exit before that is a failure.
          ExitInfo info;
          bool up = false;
          for (int w = 0; w < 200 && !up; ++w) {
            if (Listening(o.tcp_port)) {
              up = true;
            } else if (child->Poll(&info)) {
              fail = absl::StrCat("exited before listening (", info.Describe(),
                                  "): ", OneLine(TailOfFile(err_path, 600)));
              child.reset();
              break;
            } else {
              std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
          }
          if (!up && fail.empty()) {
            fail = absl::StrCat("not listening on TCP port ", o.tcp_port, " after 10 s");
            child->SignalGroup(SIGKILL);
            child->Wait();
            child.reset();
          }
        }
      }
      if (!fail.empty()) {
        const std::string cmd = absl::StrJoin(argv, " ");
        (void)rv.Set(absl::StrCat("rdma/srv/", key),
                     absl::StrCat("fail ", OneLine(fail)));
        out_.NotMeasured(
            "rdma.server_failed", kCategory, absl::StrCat("port:", End(node_, rails_[i])),
            absl::StrCat("not measured: ", what, " could not start"),
            absl::StrCat(fail, cmd.empty() ? "" : absl::StrCat(" (command: ", cmd, ")")),
            "run the command by hand on this node; check the device with ibv_devinfo");
        ++not_measured;
        continue;
      }
      (void)rv.Set(absl::StrCat("rdma/srv/", key),
                   absl::StrCat("ready ", o.tcp_port, " ", absl::StrJoin(addrs, ",")));
      auto done = rv.Get(absl::StrCat("rdma/cli/", key), wait);
      ExitInfo info;
      bool exited = false;
      for (int w = 0; w < 300 && !(exited = child->Poll(&info)); ++w) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      std::string outcome;
      if (!exited) {
        child->SignalGroup(SIGKILL);
        info = child->Wait();
        outcome =
            absl::StrCat("killed after the client ", done.ok() ? "ended" : "did not end");
      } else {
        outcome = info.Describe();
      }
      (void)rv.Set(absl::StrCat("rdma/srvexit/", key),
                   absl::StrCat(outcome, "\t", OneLine(TailOfFile(err_path, 600))));
      if (!done.ok()) {
        return CouldNotRun("rdma.peer_missing", "not measured: the peer did not show up",
                           absl::StrCat(peer_node_, " did not finish its side of ", what,
                                        ": ", done.status().message()),
                           absl::StrCat("check ", peer_node_, "'s agent and task log"));
      }
      if (!s_.jsonl) std::printf("%s: %s\n", what.c_str(), outcome.c_str());
    }
  }
  // The client's verdict is the pair's.
  auto result = rv.Get("rdma/result", wait);
  int code = 0;
  if (!result.ok() || !absl::SimpleAtoi(*result, &code)) {
    return CouldNotRun("rdma.peer_missing", "not measured: the peer did not show up",
                       absl::StrCat(peer_node_, " sent no result"), "");
  }
  if (code == kExitCouldNotRun || (not_measured > 0 && k == not_measured)) {
    return kExitCouldNotRun;
  }
  return code;
}

int RdmaRun::ClientRuns(RendezvousClient& rv) {
  const absl::Duration wait = absl::Seconds(RunTimeout() + 120);
  int k = 0, measured = 0, failed = 0;
  for (size_t i = 0; i < rails_.size(); ++i) {
    for (PerftestTest t : s_.tests) {
      const std::string key = absl::StrCat(k++);
      const std::string link =
          absl::StrCat(End(node_, rails_[i]), " <-> ", End(peer_node_, peer_rails_[i]));
      const std::string what = absl::StrCat(rdma::PerftestProgram(t), " ", link);
      auto srv = rv.Get(absl::StrCat("rdma/srv/", key), wait);
      if (!srv.ok()) {
        // The peer is gone: what was measured stands, the rest is not measured.
        const int code = failed > 0     ? kExitFoundFailures
                         : measured > 0 ? kExitPassed
                                        : kExitCouldNotRun;
        (void)rv.Set("rdma/result", absl::StrCat(code));
        CouldNotRun("rdma.peer_missing", "not measured: the peer did not show up",
                    absl::StrCat(peer_node_, " did not start its side of ", what,
                                 " (and the runs after it): ", srv.status().message()),
                    absl::StrCat("check ", peer_node_, "'s agent and task log"));
        return code;
      }
      if (absl::StartsWith(*srv, "fail ")) {
        out_.NotMeasured(
            "rdma.server_failed", kCategory, absl::StrCat("link:", link),
            absl::StrCat("not measured: ", what, " (the server side did not start)"),
            absl::StrCat(peer_node_, ": ", OneLine(*srv).substr(0, 512)),
            absl::StrCat("see ", peer_node_, "'s rdma.server_failed record"));
        continue;
      }
      // The peer's value becomes perftest arguments: numbers only.
      absl::StatusOr<rdma::ServerReady> ready = rdma::ParseServerReady(*srv);
      if (!ready.ok()) {
        out_.NotMeasured(
            "rdma.server_failed", kCategory, absl::StrCat("link:", link),
            absl::StrCat("not measured: ", what, " (the peer's answer was refused)"),
            absl::StrCat(peer_node_, ": ", ready.status().message()),
            absl::StrCat("check ", peer_node_, "'s agent and cmax version"));
        continue;
      }
      rdma::PerftestOptions o = s_.perftest;
      o.tcp_port = ready->tcp_port;
      const std::vector<std::string>& addrs = ready->addresses;
      // The server's addresses in the order it published them (its agent's
      // advertised address first); the next one only when perftest could
      // not connect to this one ("Couldn't connect to <host>:<port>",
      // perftest_communication.c), the server still waiting for a client.
      std::vector<std::string> argv;
      absl::StatusOr<CommandResult> r = absl::UnknownError("not run");
      for (const std::string& addr : addrs) {
        argv = rdma::PerftestArgv(programs_[t], t, rails_[i], o, addr);
        r = RunCommand(
            argv, std::chrono::milliseconds(static_cast<int64_t>(RunTimeout() * 1000)),
            1 << 20, {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}});
        if (!r.ok() || r->timed_out || r->exit.code == 0 ||
            !absl::StrContains(r->out + r->err, "Couldn't connect")) {
          break;
        }
      }
      const std::string cmd = absl::StrJoin(argv, " ");
      const int code = r.ok() && r->exit.exited ? r->exit.code : -1;
      (void)rv.Set(absl::StrCat("rdma/cli/", key), absl::StrCat("done ", code));
      auto sx = rv.Get(absl::StrCat("rdma/srvexit/", key), absl::Seconds(60));
      std::string server_exit = sx.ok() ? *sx : "(the server's outcome did not arrive)";
      std::string problem;
      bool not_measurable = false;
      std::vector<rdma::BwRow> bw;
      std::vector<rdma::LatRow> lat;
      if (!r.ok()) {
        problem = std::string(r.status().message());
        not_measurable = true;
      } else if (r->timed_out) {
        problem = absl::StrCat("timed out after ", RunTimeout(), " s");
      } else if (!r->exit.exited || r->exit.code != 0) {
        problem = r->exit.Describe();
      } else if (t == PerftestTest::kWriteLat) {
        auto p = rdma::ParseLatReport(r->out);
        if (p.ok())
          lat = *p;
        else
          problem = std::string(p.status().message());
      } else {
        auto p = rdma::ParseBwReport(r->out);
        if (p.ok()) {
          bw = *p;
        } else {
          problem = std::string(p.status().message());
          not_measurable = absl::IsFailedPrecondition(p.status());
        }
      }
      if (!problem.empty()) {
        const std::string err_tail = r.ok() ? Tail(r->err, 800) : "";
        const std::string out_tail = r.ok() ? Tail(r->out, 400) : "";
        const std::string detail = absl::StrCat(what, ": ", problem);
        if (not_measurable) {
          out_.NotMeasured("rdma.not_measured", kCategory, absl::StrCat("link:", link),
                           absl::StrCat("not measured: ", what),
                           absl::StrCat(detail, " (command: ", cmd, ")"),
                           "check the perftest installation on this node");
          continue;
        }
        ++failed;
        v1::Finding fd;
        fd.set_check_id("rdma.run_failed");
        fd.set_severity(v1::SEVERITY_FAIL);
        fd.set_category(kCategory);
        fd.set_subject(absl::StrCat("link:", link));
        fd.set_title(
            absl::StrCat(rdma::PerftestProgram(t), " failed on rail ", i, ": ", link));
        fd.set_detail(absl::StrCat(detail, "; the server on ", peer_node_,
                                   " was listening, so the link failed"));
        fd.add_evidence(absl::StrCat("client command on ", node_, ": ", cmd));
        if (!err_tail.empty()) fd.add_evidence(absl::StrCat("client stderr: ", err_tail));
        if (!out_tail.empty()) fd.add_evidence(absl::StrCat("client stdout: ", out_tail));
        fd.add_evidence(absl::StrCat("server on ", peer_node_, ": ", server_exit));
        fd.set_action(absl::StrCat("check both ports (ibstat ", rails_[i].hca, " on ",
                                   node_, ", ibstat ", peer_rails_[i].hca, " on ",
                                   peer_node_,
                                   "), the cable and the switch ports between them"));
        for (const auto& [lk, lv] : Labels(i, t)) (*fd.mutable_labels())[lk] = lv;
        out_.Find(fd);
        if (!s_.jsonl) std::printf("%s: FAILED (%s)\n", what.c_str(), problem.c_str());
        continue;
      }
      ++measured;
      std::map<std::string, std::string> labels = Labels(i, t);
      for (const rdma::BwRow& row : bw) {
        auto l = labels;
        l["size_bytes"] = absl::StrCat(row.bytes);
        l["iterations"] = absl::StrCat(row.iterations);
        l["min_rate_fraction"] = absl::StrCat(s_.min_rate_fraction);
        out_.Measure(rdma::PerftestMetric(t), row.average_gbps, "Gb/s", l);
        if (!s_.jsonl) {
          std::printf("%s: %lld B %.2f Gb/s (port %.0f Gb/s)\n", what.c_str(),
                      static_cast<long long>(row.bytes), row.average_gbps,
                      rails_[i].rate_gbps);
        }
      }
      for (const rdma::LatRow& row : lat) {
        auto l = labels;
        l["size_bytes"] = absl::StrCat(row.bytes);
        l["iterations"] = absl::StrCat(row.iterations);
        auto put = [&](const char* stat, double v) {
          auto ls = l;
          ls["stat"] = stat;
          out_.Measure(rdma::PerftestMetric(t), v, "us", ls);
        };
        put("p50", row.t_typical_us);
        if (row.p99_us) put("p99", *row.p99_us);
        if (row.t_avg_us) put("avg", *row.t_avg_us);
        if (!s_.jsonl) {
          std::printf("%s: %lld B typical %.2f us, 99%% %s us\n", what.c_str(),
                      static_cast<long long>(row.bytes), row.t_typical_us,
                      row.p99_us ? absl::StrFormat("%.2f", *row.p99_us).c_str() : "-");
        }
      }
    }
  }
  const int code =
      failed > 0 ? kExitFoundFailures : (measured > 0 ? kExitPassed : kExitCouldNotRun);
  (void)rv.Set("rdma/result", absl::StrCat(code));
  out_.Progress("done", 1,
                absl::StrCat(measured, " runs measured, ", failed, " failed, of ", k));
  return code;
}

}  // namespace

int RunRdma(int argc, char** argv) {
  Settings s;
  std::string tests = "all";
  std::string cuda = "auto";
  int64_t duration = 5, iters = 0, size = 0, port = 18515, gid = -1;
  double timeout = 0, fraction = kDefaultMinRateFraction;
  SuiteFlags flags("rdma", "cmax-bench");
  flags.Bind("tests", &tests);
  flags.Bind("duration", &duration);
  flags.Bind("iters", &iters);
  flags.Bind("size", &size);
  flags.Bind("port", &port);
  flags.Bind("gid-index", &gid);
  flags.Bind("cuda", &cuda);
  flags.Bind("timeout", &timeout);
  flags.Bind("min-rate-fraction", &fraction);
  flags.extra().AddString("root", &s.root,
                          "root directory for /sys and /dev (fixture trees); default /");
  flags.extra().AddFlag("jsonl", &s.jsonl, "write records as JSON lines");
  absl::Status parsed = flags.ParseArgs(argc, argv);
  RecordWriter out("rdma", s.jsonl ? stdout : nullptr, {{"node", NodeName()}});
  auto usage = [&](const std::string& why) {
    std::fprintf(stderr, "rdma: %s\n", why.c_str());
    out.NotMeasured("rdma.not_measured", kCategory, absl::StrCat("node:", NodeName()),
                    "not measured: rdma could not run", why,
                    "fix the plan's rdma parameters");
    return kExitCouldNotRun;
  };
  if (!parsed.ok()) return usage(std::string(parsed.message()));
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return kExitPassed;
  }
  for (absl::string_view name : absl::StrSplit(tests, ',', absl::SkipEmpty())) {
    if (name == "all") {
      s.tests = {PerftestTest::kWriteBw, PerftestTest::kReadBw, PerftestTest::kWriteLat};
      break;
    }
    bool found = false;
    for (PerftestTest t :
         {PerftestTest::kWriteBw, PerftestTest::kReadBw, PerftestTest::kWriteLat}) {
      if (name == rdma::PerftestTestName(t)) {
        if (std::find(s.tests.begin(), s.tests.end(), t) == s.tests.end())
          s.tests.push_back(t);
        found = true;
      }
    }
    if (!found) return usage(absl::StrCat("--tests: unknown test '", name, "'"));
  }
  if (s.tests.empty()) return usage("--tests names no test");
  if (cuda != "auto" && cuda != "on" && cuda != "off") {
    return usage(absl::StrCat("--cuda must be auto, on or off, not '", cuda, "'"));
  }
  if (duration < 0 || duration > 3600)
    return usage("--duration must be within [0, 3600]");
  if (iters < 0 || iters > 100000000) return usage("--iters must be within [0, 1e8]");
  if (size < 0 || size > (1LL << 30) || (size > 0 && size < 2)) {
    return usage("--size must be within [2, 1G]");
  }
  if (port < 1024 || port > 65535 - 100)
    return usage("--port must be within [1024, 65435]");
  if (gid < -1 || gid > 255) return usage("--gid-index must be within [0, 255]");
  if (timeout < 0 || timeout > 86400) return usage("--timeout must be within [0, 86400]");
  if (fraction <= 0 || fraction > 1)
    return usage("--min-rate-fraction must be within (0, 1]");
  s.cuda = cuda;
  s.gid_index = static_cast<int>(gid);
  s.run_timeout_s = timeout;
  s.min_rate_fraction = fraction;
  s.perftest.duration_s = iters > 0 ? 0 : static_cast<double>(duration);
  s.perftest.iterations = iters;
  s.perftest.size_bytes = size;
  s.perftest.tcp_port = static_cast<int>(port);
  RdmaRun run(std::move(s), &out);
  return run.Run();
}

}  // namespace cmax::bench
