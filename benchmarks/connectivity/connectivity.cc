// connectivity: full-mesh TCP reachability, round-trip time and a short
// transfer between every pair of ranks of a gang (one rank per node by
// default). Every rank listens, publishes "<node> <port> <addr>,<addr>" as
// addr/<rank> through the group's rendezvous, waits at a barrier, then probes
// every other rank in rounds (round r: rank i probes rank (i + r) mod n, so
// each rank sends to one peer and receives from one at a time), with a
// barrier after each round and before the listeners close.
//
// Records, written by the probing (source) rank, labels src, dst (node
// names), src_rank, dst_rank, dst_addr:
//   reachable      1 or 0
//   rtt_ms         median of --pings small ping-pongs
//   transfer_mbps  one transfer of --bytes, megabits per second
// and a FAIL finding (networking) for every peer it cannot reach, naming
// both nodes and every address tried with its error.
// Exit: 0 every peer reached, 1 some were not, 2 could not run (not a rank
// of a group, rendezvous or listener failure).
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/connectivity/peer_link.h"
#include "benchmarks/suite.h"
#include "common/suite_flags.h"
#include "common/record_io.h"
#include "common/rendezvous_client.h"
#include "common/secrets.h"

namespace cmax::bench {
namespace {

using connectivity::PeerListener;
using connectivity::ProbeOptions;
using connectivity::ProbeResult;

struct PeerInfo {
  std::string node;
  int port = 0;
  std::vector<std::string> addresses;
};

absl::StatusOr<PeerInfo> ParsePeer(const std::string& text) {
  std::vector<std::string> f = absl::StrSplit(text, ' ', absl::SkipEmpty());
  PeerInfo p;
  if (f.size() != 3 || !absl::SimpleAtoi(f[1], &p.port) || p.port <= 0 || p.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("malformed peer entry '", text.substr(0, 200),
                                                   "'"));
  }
  p.node = f[0];
  p.addresses = absl::StrSplit(f[2], ',', absl::SkipEmpty());
  return p;
}

std::string NodeName() {
  if (const char* n = getenv("CMAX_NODE_NAME"); n && *n) return n;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

int CouldNotRun(RecordWriter& out, const std::string& why) {
  std::fprintf(stderr, "connectivity: %s\n", why.c_str());
  out.Log("error", absl::StrCat("not measured: ", why));
  // Evidence for the scorecard: Networking not measured on this node, why.
  out.NotMeasured("connectivity.not_measured", "networking", absl::StrCat("node:", NodeName()),
                  "not measured: connectivity could not run", why,
                  "run it as a gang task of a cmax run (it needs the group's rendezvous)");
  return kExitCouldNotRun;
}

// One cell of the human matrix: "ok 0.12ms 940Mb/s" or "UNREACHABLE".
std::string Cell(bool reachable, double rtt_ms, double mbps) {
  if (!reachable) return "UNREACHABLE";
  return absl::StrFormat("%.2fms %.0fMb/s", rtt_ms, mbps);
}

}  // namespace

int RunConnectivity(int argc, char** argv) {
  std::string port_range;
  int64_t bytes = 4 << 20;
  int64_t pings = 20;
  double timeout = 2;
  bool jsonl = false;
  SuiteFlags flags("connectivity", "cmax-bench");
  flags.Bind("port-range", &port_range);
  flags.Bind("bytes", &bytes);
  flags.Bind("pings", &pings);
  flags.Bind("timeout", &timeout);
  flags.extra().AddFlag("jsonl", &jsonl, "write records as JSON lines");
  const std::string node = NodeName();
  absl::Status parsed = flags.ParseArgs(argc, argv);
  RecordWriter out("connectivity", jsonl ? stdout : nullptr, {{"node", node}});
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
  if (pings < 1 || bytes < 0 || timeout <= 0) {
    return CouldNotRun(out, "--pings must be >= 1, --bytes >= 0 and --timeout > 0");
  }

  auto client = RendezvousClient::FromEnvironment();
  if (!client.ok()) {
    return CouldNotRun(out, absl::StrCat("connectivity needs a gang (scope: gang; "
                                         "one rank per node): ",
                                         client.status().message()));
  }
  RendezvousClient& rv = **client;
  const int rank = rv.rank();
  const int n = rv.world_size();
  const std::vector<std::string> mine = connectivity::ListenAddresses();
  const absl::Duration wait = absl::Seconds(120 + timeout * 4 * static_cast<double>(n));
  // The task's secret: rank 0 makes it, every rank reads it from the group's
  // store; only peers that present it are served (peer_link.h).
  connectivity::ListenerOptions lo;
  lo.bind = mine;
  if (rank == 0) {
    auto secret = RandomHex(connectivity::kSecretBytes / 2);
    if (!secret.ok()) return CouldNotRun(out, std::string(secret.status().message()));
    if (auto s = rv.Set("connectivity/secret", *secret); !s.ok()) {
      return CouldNotRun(out, std::string(s.message()));
    }
    lo.secret = *secret;
  } else {
    auto secret = rv.Get("connectivity/secret", wait);
    if (!secret.ok()) return CouldNotRun(out, std::string(secret.status().message()));
    lo.secret = *secret;
  }
  auto listener = PeerListener::Start(rank, low, high, lo);
  if (!listener.ok()) {
    return CouldNotRun(out, absl::StrCat("cannot listen: ", listener.status().message()));
  }
  if (auto s = rv.Set(absl::StrCat("addr/", rank),
                      absl::StrCat(node, " ", (*listener)->port(), " ", absl::StrJoin(mine, ",")));
      !s.ok()) {
    return CouldNotRun(out, std::string(s.message()));
  }
  out.Progress("listening", 0,
               absl::StrCat("rank ", rank, " of ", n, " on ", node, " port ",
                            (*listener)->port(), " (", absl::StrJoin(mine, ","), ")"));
  if (auto s = rv.Barrier("connectivity/listening", wait); !s.ok()) {
    return CouldNotRun(out, std::string(s.status().message()));
  }
  std::vector<PeerInfo> peers(n);
  for (int j = 0; j < n; ++j) {
    auto v = rv.Get(absl::StrCat("addr/", j), absl::Seconds(30));
    if (!v.ok()) return CouldNotRun(out, std::string(v.status().message()));
    auto p = ParsePeer(*v);
    if (!p.ok()) return CouldNotRun(out, std::string(p.status().message()));
    peers[j] = *p;
  }

  ProbeOptions po;
  po.connect_timeout_s = timeout;
  po.pings = static_cast<int>(pings);
  po.transfer_bytes = bytes;
  po.secret = lo.secret;
  std::map<int, ProbeResult> results;
  int unreachable = 0;
  for (int r = 1; r < n; ++r) {
    const int j = (rank + r) % n;
    ProbeResult res = connectivity::Probe(peers[j].addresses, peers[j].port, j, po);
    std::map<std::string, std::string> labels = {
        {"src", node},
        {"dst", peers[j].node},
        {"src_rank", absl::StrCat(rank)},
        {"dst_rank", absl::StrCat(j)},
        {"dst_addr", res.reachable ? res.address : absl::StrJoin(peers[j].addresses, ",")}};
    out.Measure("reachable", res.reachable ? 1 : 0, "bool", labels);
    if (res.reachable) {
      if (res.rtt_ms > 0) out.Measure("rtt_ms", res.rtt_ms, "ms", labels);
      if (res.transfer_mbps > 0) out.Measure("transfer_mbps", res.transfer_mbps, "Mbit/s", labels);
      if (!res.error.empty()) {
        out.Log("warn", absl::StrCat(node, " -> ", peers[j].node, ": connected but ", res.error));
      }
    } else {
      ++unreachable;
      v1::Finding f;
      f.set_check_id("connectivity.unreachable");
      f.set_severity(v1::SEVERITY_FAIL);
      f.set_category("networking");
      f.set_subject(absl::StrCat("node:", peers[j].node));
      f.set_title(absl::StrCat(node, " cannot reach ", peers[j].node, " over TCP"));
      std::vector<std::string> tried;
      for (const auto& a : res.attempts) {
        tried.push_back(absl::StrCat(a.address, ":", peers[j].port, " (", a.error, ")"));
        f.add_evidence(absl::StrCat(node, " -> ", a.address, ":", peers[j].port, ": ", a.error));
      }
      f.set_detail(absl::StrCat("rank ", rank, " on ", node, " tried every address rank ", j,
                                " on ", peers[j].node, " published: ",
                                absl::StrJoin(tried, "; ")));
      f.set_action(absl::StrCat("check routes, firewalls and security groups between ", node,
                                " and ", peers[j].node));
      (*f.mutable_labels())["src"] = node;
      (*f.mutable_labels())["dst"] = peers[j].node;
      (*f.mutable_labels())["src_rank"] = absl::StrCat(rank);
      (*f.mutable_labels())["dst_rank"] = absl::StrCat(j);
      (*f.mutable_labels())["dst_addr"] = absl::StrJoin(peers[j].addresses, ",");
      out.Find(f);
    }
    results[j] = res;
    if (auto s = rv.Barrier(absl::StrCat("connectivity/round-", r), wait); !s.ok()) {
      return CouldNotRun(out, std::string(s.status().message()));
    }
  }
  // This rank's row for the human matrix that rank 0 prints.
  std::vector<std::string> row;
  for (const auto& [j, res] : results) {
    row.push_back(absl::StrFormat("%d:%d:%.4f:%.1f", j, res.reachable ? 1 : 0, res.rtt_ms,
                                  res.transfer_mbps));
  }
  (void)rv.Set(absl::StrCat("row/", rank), absl::StrJoin(row, ";"));
  if (auto s = rv.Barrier("connectivity/done", wait); !s.ok()) {
    return CouldNotRun(out, std::string(s.status().message()));
  }
  (*listener)->Stop();
  out.Progress("done", 1, absl::StrCat(n - 1 - unreachable, " of ", n - 1, " peers reached"));

  if (!jsonl && rank == 0) {
    std::printf("connectivity over %d ranks (row: from, column: to; RTT median, transfer)\n", n);
    std::printf("%-16s", "");
    for (int j = 0; j < n; ++j) std::printf(" %-20s", peers[j].node.substr(0, 20).c_str());
    std::printf("\n");
    for (int i = 0; i < n; ++i) {
      std::map<int, std::string> cells;
      auto v = rv.Get(absl::StrCat("row/", i), absl::Seconds(10));
      if (v.ok()) {
        for (absl::string_view item : absl::StrSplit(*v, ';', absl::SkipEmpty())) {
          std::vector<std::string> f = absl::StrSplit(item, ':');
          int j = 0, ok = 0;
          double rtt = 0, mbps = 0;
          if (f.size() == 4 && absl::SimpleAtoi(f[0], &j) && absl::SimpleAtoi(f[1], &ok) &&
              absl::SimpleAtod(f[2], &rtt) && absl::SimpleAtod(f[3], &mbps)) {
            cells[j] = Cell(ok == 1, rtt, mbps);
          }
        }
      }
      std::printf("%-16s", peers[i].node.substr(0, 16).c_str());
      for (int j = 0; j < n; ++j) {
        std::string c = i == j ? "-" : (cells.count(j) ? cells[j] : "?");
        std::printf(" %-20s", c.c_str());
      }
      std::printf("\n");
    }
  } else if (!jsonl) {
    for (const auto& [j, res] : results) {
      std::printf("%s -> %s: %s\n", node.c_str(), peers[j].node.c_str(),
                  Cell(res.reachable, res.rtt_ms, res.transfer_mbps).c_str());
    }
  }
  return unreachable > 0 ? kExitFoundFailures : kExitPassed;
}

}  // namespace cmax::bench
