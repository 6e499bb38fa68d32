#include "benchmarks/collective_common/nccl_log.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "re2/re2.h"

namespace cmax::collective {
namespace {

void Keep(NcclLogFacts* f, const std::string& key, std::string_view line) {
  auto& v = f->evidence[key];
  if (v.size() < 3) v.emplace_back(line);
}

// The message after "NCCL INFO " / "NCCL WARN ", or the line itself.
std::string_view Message(std::string_view line, bool* is_nccl, bool* is_warn) {
  *is_warn = false;
  for (const char* tag : {"NCCL INFO ", "NCCL WARN "}) {
    size_t p = line.find(tag);
    if (p != std::string_view::npos) {
      *is_nccl = true;
      *is_warn = tag[5] == 'W';
      return line.substr(p + std::strlen(tag));
    }
  }
  *is_nccl = false;
  return line;
}

// "[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]" -> {"mlx5_0:1/IB", "mlx5_1:1/RoCE"}.
std::vector<std::string> Devices(std::string_view list) {
  std::vector<std::string> out;
  for (absl::string_view tok : absl::StrSplit(absl::string_view(list.data(), list.size()), ' ',
                                              absl::SkipEmpty())) {
    if (!absl::StartsWith(tok, "[")) continue;
    size_t close = tok.find(']');
    if (close == absl::string_view::npos || close + 1 >= tok.size()) continue;
    out.emplace_back(tok.substr(close + 1));
  }
  return out;
}

}  // namespace

NcclLogFacts ParseNcclLog(std::string_view text) {
  static const RE2 kVersion(R"(NCCL version (\S+))");
  static const RE2 kNetwork(R"(^Using network (.+?)\s*$)");
  static const RE2 kPlugin(R"(Loaded net plugin (.+?)\s*(\(v\d+\))?\s*$)");
  static const RE2 kConn(R"(Channel \d+/\d+ : .*via NET/(\S+))");
  static const RE2 kIntra(R"(Channel \d+/\d+ : .*via (P2P/\S+|SHM\S*|P2P/direct pointer))");
  static const RE2 kChanCounts(R"((\d+) coll channels,.*?(\d+) nvls channels)");
  static const RE2 kRingList(R"(^Channel (\d+)/(\d+) :\s+\d+(\s+\d+)*\s*$)");
  static const RE2 kComm(R"(nRanks (\d+) nNodes (\d+))");
  NcclLogFacts f;
  for (absl::string_view raw : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    std::string_view line(raw.data(), raw.size());
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    bool nccl = false, warn = false;
    std::string_view msg = Message(line, &nccl, &warn);
    std::string s;
    if (RE2::PartialMatch(line, kVersion, &s)) {
      f.version = s;
      f.any_nccl_line = true;
      continue;
    }
    if (nccl) f.any_nccl_line = true;
    if (warn) Keep(&f, "warn", line);
    std::string m(msg);
    if (RE2::PartialMatch(m, kNetwork, &s)) {
      f.network = s;
      Keep(&f, "network", line);
    } else if (RE2::PartialMatch(m, kPlugin, &s)) {
      f.net_plugin = s;
      Keep(&f, "plugin", line);
    } else if (absl::StrContains(m, "No plugin found") && f.net_plugin.empty()) {
      f.net_plugin = "internal";
    } else if (absl::StartsWith(m, "NET/IB : Using ") || absl::StartsWith(m, "NET/IB: Using ")) {
      std::string_view rest = m;
      rest.remove_prefix(rest.find("Using ") + 6);
      size_t oob = rest.find("; OOB");
      if (f.ib_devices.empty()) f.ib_devices = Devices(rest.substr(0, oob));
      Keep(&f, "ib", line);
    } else if (absl::StrContains(m, "NET/IB : No device found") ||
               absl::StrContains(m, "NET/IB: No device found")) {
      f.ib_no_device = true;
      Keep(&f, "no_ib", line);
    } else if (absl::StartsWith(m, "NET/Socket : Using ")) {
      if (f.socket_devices.empty()) f.socket_devices = Devices(m.substr(19));
      Keep(&f, "socket", line);
    } else if (absl::StrContains(m, "GPU Direct RDMA Enabled")) {
      f.gdr_enabled_line = true;
      Keep(&f, "gdr", line);
    } else if (absl::StrContains(m, "GPU Direct RDMA Disabled")) {
      f.gdr_disabled_line = true;
      Keep(&f, "gdr", line);
    } else if (RE2::PartialMatch(m, kConn, &s)) {
      ++f.net_connections;
      if (absl::StrContains(s, "GDRDMA")) ++f.gdr_connections;
      Keep(&f, absl::StrContains(s, "GDRDMA") ? "net_conn_gdr" : "net_conn", line);
    } else if (RE2::PartialMatch(m, kIntra, &s)) {
      ++f.intra_node[s];
    } else if (absl::StrContains(m, "NVLS multicast support is not available")) {
      f.nvls_unavailable = true;
      Keep(&f, "nvls", line);
    } else if (absl::StrContains(m, "NVLS multicast support is available")) {
      f.nvls_available = true;
      Keep(&f, "nvls", line);
    } else if (int coll = 0, nvls = 0; RE2::PartialMatch(m, kChanCounts, &coll, &nvls)) {
      f.coll_channels = std::max(f.coll_channels, coll);
      f.nvls_channels = std::max(f.nvls_channels, nvls);
      Keep(&f, "channels", line);
    } else if (int idx = 0, total = 0; RE2::PartialMatch(m, kRingList, &idx, &total)) {
      f.channels = std::max(f.channels, total);
    } else if (absl::StartsWith(m, "Trees [") || absl::StartsWith(m, "Tree ")) {
      f.trees = true;
    } else if (int nr = 0, nn = 0; RE2::PartialMatch(m, kComm, &nr, &nn)) {
      f.ranks = std::max(f.ranks, nr);
      f.nodes = std::max(f.nodes, nn);
    }
  }
  // The transport NCCL used between nodes.
  if (absl::StartsWith(f.network, "IB")) {
    bool all_roce = !f.ib_devices.empty();
    for (const auto& d : f.ib_devices) all_roce = all_roce && absl::StrContains(d, "/RoCE");
    f.transport = all_roce ? "RoCE" : "IB";
  } else if (f.network == "Socket") {
    f.transport = "Socket";
  } else if (!f.network.empty()) {
    f.transport = f.network;
  } else if (f.net_connections == 0) {
    f.transport = "none";
  }
  return f;
}

std::vector<v1::Finding> TransportFindings(const NcclLogFacts& f,
                                           const TransportExpectation& expect) {
  std::vector<v1::Finding> out;
  auto evidence = [&](v1::Finding* fd, std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
      auto it = f.evidence.find(k);
      if (it == f.evidence.end()) continue;
      for (const auto& line : it->second) fd->add_evidence(line);
    }
  };
  if (!f.any_nccl_line) {
    v1::Finding fd;
    fd.set_check_id("collective.nccl_log_missing");
    fd.set_severity(v1::SEVERITY_WARN);
    fd.set_not_measured(true);  // the transport check could not run
    fd.set_category("networking");
    fd.set_subject("node");
    fd.set_title("NCCL's transport not measured: no NCCL line in the debug log");
    fd.set_detail("NCCL_DEBUG=INFO output was expected in the log file; without it the "
                  "transport, GPUDirect RDMA and NVLS cannot be checked");
    out.push_back(std::move(fd));
    return out;
  }
  // Traffic left the node: the run spans nodes, NCCL said so, or a channel
  // went through the network. One node alone never judges the network
  // (NCCL picks and logs one at init even for a single rank).
  const bool inter_node = expect.nodes > 1 || f.nodes > 1 || f.net_connections > 0;
  const bool socket = f.transport == "Socket" || (f.network.empty() && f.ib_no_device);
  if (socket && expect.rdma_devices_present && inter_node) {
    v1::Finding fd;
    fd.set_check_id("collective.nccl_socket_fallback");
    fd.set_severity(v1::SEVERITY_FAIL);
    fd.set_category("networking");
    fd.set_subject("node");
    fd.set_title("NCCL fell back to sockets on a node with RDMA devices");
    fd.set_detail(absl::StrCat(
        "NCCL used network '", f.network.empty() ? "Socket" : f.network, "'",
        f.ib_no_device ? " after \"NET/IB : No device found\"" : "",
        " although the node has InfiniBand/RoCE devices; inter-node collectives run over TCP "
        "at a fraction of the fabric's bandwidth"));
    evidence(&fd, {"network", "no_ib", "socket", "net_conn"});
    fd.set_action("check the RDMA stack the job sees (rdma-core, /dev/infiniband in the "
                  "container, NCCL_IB_HCA and NCCL_IB_DISABLE, the net plugin) and rerun");
    out.push_back(std::move(fd));
  }
  if (expect.expect_gdr && f.net_connections > 0 && f.gdr_connections < f.net_connections) {
    v1::Finding fd;
    fd.set_check_id("collective.nccl_gdr_off");
    fd.set_severity(v1::SEVERITY_FAIL);
    fd.set_category("networking");
    fd.set_subject("node");
    fd.set_title("GPUDirect RDMA not used where the plan expects it");
    fd.set_detail(absl::StrCat(f.net_connections - f.gdr_connections, " of ", f.net_connections,
                               " network connections go through host memory (no GDRDMA)",
                               f.gdr_disabled_line ? "; NCCL logged GPU Direct RDMA Disabled" : ""));
    evidence(&fd, {"net_conn", "gdr", "ib"});
    fd.set_action("load the nvidia-peermem module (or use DMA-BUF), check NCCL_NET_GDR_LEVEL and "
                  "the PCIe topology between GPUs and NICs, and rerun");
    out.push_back(std::move(fd));
  }
  v1::Finding info;
  info.set_check_id("collective.nccl_transport");
  info.set_severity(v1::SEVERITY_INFO);
  info.set_category("networking");
  info.set_subject("node");
  auto labels = TransportLabels(f);
  info.set_title(absl::StrCat("NCCL used ", labels["transport"], " (GPUDirect RDMA ",
                              labels["gdr"], ", NVLS ", labels["nvls"], ")"));
  info.set_detail(absl::StrJoin(labels, ", ", absl::PairFormatter("=")));
  evidence(&info, {"network", "ib", "socket", "gdr", "net_conn_gdr", "nvls", "channels"});
  for (const auto& [k, v] : labels) (*info.mutable_labels())[k] = v;
  out.push_back(std::move(info));
  return out;
}

std::map<std::string, std::string> TransportLabels(const NcclLogFacts& f) {
  std::map<std::string, std::string> l;
  l["transport"] = f.transport.empty() ? "unknown" : f.transport;
  if (!f.network.empty()) l["network"] = f.network;
  l["net_plugin"] = f.net_plugin.empty() ? "unknown" : f.net_plugin;
  if (f.net_connections == 0) {
    l["gdr"] = "n/a";
  } else {
    l["gdr"] = f.gdr_connections == f.net_connections ? "yes"
               : f.gdr_connections == 0               ? "no"
                                                      : "partial";
  }
  if (f.nvls_channels > 0) {
    l["nvls"] = "yes";
  } else if (f.nvls_channels == 0 || f.nvls_unavailable) {
    l["nvls"] = "no";
  } else {
    l["nvls"] = f.nvls_available ? "available" : "unknown";
  }
  if (f.channels >= 0) l["channels"] = absl::StrCat(f.channels);
  if (f.coll_channels >= 0) l["coll_channels"] = absl::StrCat(f.coll_channels);
  if (f.nvls_channels >= 0) l["nvls_channels"] = absl::StrCat(f.nvls_channels);
  l["trees"] = f.trees ? "yes" : "no";
  if (!f.ib_devices.empty()) l["net_devices"] = absl::StrJoin(f.ib_devices, ",");
  if (!f.version.empty()) l["nccl_version"] = f.version;
  return l;
}

}  // namespace cmax::collective
