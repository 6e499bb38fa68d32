#include "benchmarks/rdma/rails.h"

#include <arpa/inet.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/hostcheck/topology.h"

namespace cmax::bench::rdma {
namespace {

constexpr char kInfiniband[] = "/sys/class/infiniband";

bool GidIsZero(const std::string& gid) {
  for (char c : gid) {
    if (c != '0' && c != ':') return false;
  }
  return true;
}

// IPv4-mapped: the first 80 bits zero, then ffff (RFC 4291 2.5.5.2).
bool GidIsIpv4Mapped(const std::string& gid) {
  return absl::StartsWith(absl::AsciiStrToLower(gid), "0000:0000:0000:0000:0000:ffff:");
}

int PickRoceGid(const Sysroot& root, const std::string& port_dir) {
  int fallback = -1;
  std::vector<int> indices;
  for (const std::string& name : root.List(port_dir + "/gid_attrs/types")) {
    int i = 0;
    if (absl::SimpleAtoi(name, &i)) indices.push_back(i);
  }
  std::sort(indices.begin(), indices.end());
  for (int i : indices) {
    auto type = root.ReadLine(absl::StrCat(port_dir, "/gid_attrs/types/", i));
    auto gid = root.ReadLine(absl::StrCat(port_dir, "/gids/", i));
    if (!type || !gid || GidIsZero(*gid)) continue;
    if (!absl::StrContains(absl::AsciiStrToLower(*type), "roce v2")) continue;
    if (GidIsIpv4Mapped(*gid)) return i;
    if (fallback < 0) fallback = i;
  }
  return fallback;
}

}  // namespace

std::string FormatRail(const Rail& r) {
  return absl::StrCat(r.hca, " ", r.port, " ", r.link_layer.empty() ? "-" : r.link_layer,
                      " ", r.rate_gbps, " ", r.gid_index, " ", r.gpu, " ",
                      r.gpu_bdf.empty() ? "-" : r.gpu_bdf);
}

absl::StatusOr<Rail> ParseRail(const std::string& line) {
  std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
  Rail r;
  if (f.size() != 7 || !ValidHcaName(f[0]) || !absl::SimpleAtoi(f[1], &r.port) ||
      !absl::SimpleAtod(f[3], &r.rate_gbps) || !absl::SimpleAtoi(f[4], &r.gid_index) ||
      !absl::SimpleAtoi(f[5], &r.gpu) || r.port < 1 || r.port > 255) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed rail entry '", line.substr(0, 200), "'"));
  }
  r.hca = f[0];
  r.link_layer = f[2] == "-" ? "" : f[2];
  r.gpu_bdf = f[6] == "-" ? "" : f[6];
  return r;
}

bool ValidHcaName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '-') return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' &&
        c != '-') {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::vector<Rail>> ReadRails(const Sysroot& root, int gid_index) {
  if (!root.Exists(kInfiniband) || root.List(kInfiniband).empty()) {
    return absl::NotFoundError(
        absl::StrCat("no RDMA devices: ", root.Path(kInfiniband),
                     root.Exists(kInfiniband) ? " is empty" : " does not exist"));
  }
  absl::StatusOr<hostcheck::Topology> topo = hostcheck::ReadTopology(root);
  if (!topo.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read the PCIe topology: ", topo.status().message()));
  }
  // The GPU the map pairs with each device: the lowest GPU index.
  std::map<std::string, int> gpu_of;
  std::map<std::string, std::string> bdf_of;
  bool paths_known = true;
  for (const auto& p : topo->gpu_pci) paths_known = paths_known && p.path_known;
  if (paths_known) {
    std::vector<hostcheck::GpuNicPair> pairs = hostcheck::PairGpusWithNics(*topo);
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (pairs[i].nic == nullptr || gpu_of.count(pairs[i].nic->name)) continue;
      gpu_of[pairs[i].nic->name] = static_cast<int>(i);
      bdf_of[pairs[i].nic->name] = pairs[i].gpu_bdf;
    }
  }
  std::vector<Rail> rails;
  std::vector<std::string> inactive;
  for (const hostcheck::RdmaNic& nic : topo->nics) {
    if (!ValidHcaName(nic.name)) continue;
    for (const hostcheck::RdmaPort& port : nic.ports) {
      if (!port.active()) {
        inactive.push_back(absl::StrCat(nic.name, "/", port.port, " '",
                                        port.state.empty() ? "(no state)" : port.state,
                                        "'"));
        continue;
      }
      Rail r;
      r.hca = nic.name;
      r.port = port.port;
      r.link_layer = port.link_layer;
      r.rate_gbps = port.rate_gbps;
      if (r.roce()) {
        r.gid_index = gid_index >= 0
                          ? gid_index
                          : PickRoceGid(root, absl::StrCat(kInfiniband, "/", nic.name,
                                                           "/ports/", port.port));
      }
      if (auto it = gpu_of.find(nic.name); it != gpu_of.end()) {
        r.gpu = it->second;
        r.gpu_bdf = bdf_of[nic.name];
      }
      rails.push_back(std::move(r));
    }
  }
  if (rails.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no ACTIVE RDMA port under ", root.Path(kInfiniband), ": ",
                     inactive.empty() ? "no ports" : absl::StrJoin(inactive, ", ")));
  }
  std::stable_sort(rails.begin(), rails.end(), [](const Rail& a, const Rail& b) {
    auto key = [](const Rail& r) {
      return std::make_tuple(r.gpu < 0 ? 1 << 30 : r.gpu, r.hca, r.port);
    };
    return key(a) < key(b);
  });
  return rails;
}

const char* PerftestProgram(PerftestTest test) {
  switch (test) {
    case PerftestTest::kWriteBw:
      return "ib_write_bw";
    case PerftestTest::kReadBw:
      return "ib_read_bw";
    case PerftestTest::kWriteLat:
      return "ib_write_lat";
  }
  return "";
}

const char* PerftestTestName(PerftestTest test) {
  switch (test) {
    case PerftestTest::kWriteBw:
      return "write_bw";
    case PerftestTest::kReadBw:
      return "read_bw";
    case PerftestTest::kWriteLat:
      return "write_lat";
  }
  return "";
}

const char* PerftestMetric(PerftestTest test) {
  switch (test) {
    case PerftestTest::kWriteBw:
      return "rdma_write_bw_gbps";
    case PerftestTest::kReadBw:
      return "rdma_read_bw_gbps";
    case PerftestTest::kWriteLat:
      return "rdma_write_lat_us";
  }
  return "";
}

std::vector<std::string> PerftestArgv(const std::string& program, PerftestTest test,
                                      const Rail& rail, const PerftestOptions& o,
                                      const std::string& server_address) {
  const bool bw = test != PerftestTest::kWriteLat;
  std::vector<std::string> argv = {program,
                                   "-d",
                                   rail.hca,
                                   "-i",
                                   absl::StrCat(rail.port),
                                   "-F",
                                   "-p",
                                   absl::StrCat(o.tcp_port)};
  if (bw) argv.push_back("--report_gbits");
  if (rail.roce() && rail.gid_index >= 0) {
    argv.insert(argv.end(), {"-x", absl::StrCat(rail.gid_index)});
  }
  if (bw && o.duration_s > 0) {
    // Duration mode measures inside margins (perftest -f, default 2 s at
    // each end): the start is its warm-up.
    argv.insert(argv.end(), {"-D", absl::StrCat(static_cast<int64_t>(o.duration_s))});
  } else {
    if (o.iterations > 0) argv.insert(argv.end(), {"-n", absl::StrCat(o.iterations)});
    // perftest --help: "Perform some iterations before start measuring in
    // order to warming-up memory cache, valid in Atomic, Read and Write BW
    // tests".
    if (bw) argv.push_back("--perform_warm_up");
  }
  if (o.size_bytes > 0) argv.insert(argv.end(), {"-s", absl::StrCat(o.size_bytes)});
  if (o.use_cuda && rail.gpu >= 0) {
    argv.push_back(o.cuda_by_bus_id && !rail.gpu_bdf.empty()
                       ? absl::StrCat("--use_cuda_bus_id=", rail.gpu_bdf)
                       : absl::StrCat("--use_cuda=", rail.gpu));
  }
  if (!server_address.empty()) argv.push_back(server_address);
  return argv;
}

absl::StatusOr<ServerReady> ParseServerReady(const std::string& value) {
  std::vector<std::string> f = absl::StrSplit(value, absl::MaxSplits(' ', 2));
  if (f.empty() || f[0] != "ready" || f.size() < 2) {
    return absl::InvalidArgumentError("not a \"ready PORT ADDRESSES\" answer");
  }
  ServerReady r;
  if (!absl::SimpleAtoi(f[1], &r.tcp_port) || r.tcp_port < 1 || r.tcp_port > 65535 ||
      f[1].find_first_not_of("0123456789") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("the peer's TCP port '", f[1].substr(0, 32), "' is not a port number"));
  }
  if (f.size() == 3) {
    for (absl::string_view a : absl::StrSplit(f[2], ',', absl::SkipEmpty())) {
      const std::string addr(a);
      unsigned char buf[16];
      if (addr.size() > 45 || (inet_pton(AF_INET, addr.c_str(), buf) != 1 &&
                               inet_pton(AF_INET6, addr.c_str(), buf) != 1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the peer published '", addr.substr(0, 64),
            "' as its address, which is not a numeric IPv4 or IPv6 address: refused"));
      }
      r.addresses.push_back(addr);
    }
  }
  if (r.addresses.empty()) {
    return absl::InvalidArgumentError("the peer published no address to connect to");
  }
  return r;
}

}  // namespace cmax::bench::rdma
