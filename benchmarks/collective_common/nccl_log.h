// What NCCL chose, read from its NCCL_DEBUG=INFO log (NCCL_DEBUG_SUBSYS
// INIT,NET,GRAPH,ENV): network plugin and transport (IB, RoCE, a fallback to
// sockets), GPUDirect RDMA, NVLS (NVLink SHARP), channels, rings and trees;
// and the findings cmax draws from them, with the log lines as evidence.
//
// Line formats (NCCL 2.18-2.28 as seen in public logs; see
// tests/fixtures/collective/NOTE.md): "<host>:<pid>:<tid> [<dev>] NCCL INFO
// <message>", e.g. "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB
// ib0:10.0.0.1<0>", "Using network IB", "NET/IB : No device found.",
// "NET/Socket : Using [0]eth0:10.0.0.1<0>", "NET/IB : GPU Direct RDMA
// Enabled for HCA 0 'mlx5_0'", "Channel 00/0 : 0[0] -> 8[0] [send] via
// NET/IB/0/GDRDMA", "32 coll channels, 32 collnet channels, 16 nvls channels,
// 32 p2p channels, 32 p2p channels per peer", "NVLS multicast support is
// available on dev 0", "Channel 00/24 :    0   1   2", "Trees [0] ...",
// "comm 0x.. rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0".
// A prefix-less line (some tools strip it) is read the same way.
#ifndef CMAX_BENCHMARKS_COLLECTIVE_COMMON_NCCL_LOG_H_
#define CMAX_BENCHMARKS_COLLECTIVE_COMMON_NCCL_LOG_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cmax/v1/record.pb.h"

namespace cmax::collective {

struct NcclLogFacts {
  bool any_nccl_line = false;
  std::string version;              // "2.28.9+cuda13.0"
  std::string network;              // "Using network X": IB, Socket, IBext_v8, ...
  std::string net_plugin;           // loaded plugin name, "internal" when none
  std::vector<std::string> ib_devices;      // "mlx5_0:1/IB", "mlx5_1:1/RoCE"
  std::vector<std::string> socket_devices;  // "eth0:10.0.0.1<0>"
  bool ib_no_device = false;        // "NET/IB : No device found"
  std::string transport;            // IB, RoCE, Socket, the plugin's network, or "none"
  int net_connections = 0;          // "via NET/..." channel connections
  int gdr_connections = 0;          // ... of which "/GDRDMA"
  bool gdr_enabled_line = false;    // "GPU Direct RDMA Enabled for HCA ..."
  bool gdr_disabled_line = false;   // "GPU Direct RDMA Disabled for HCA ..."
  std::map<std::string, int> intra_node;  // "P2P/CUMEM/read" -> connections, "SHM" ...
  bool nvls_available = false;      // "NVLS multicast support is available"
  bool nvls_unavailable = false;    // "... is not available"
  int nvls_channels = -1;           // -1: not logged
  int coll_channels = -1;
  int channels = -1;                // "Channel xx/NN :" ring listing: NN
  bool trees = false;               // "Trees [" or "Tree 0 :" lines
  int ranks = -1, nodes = -1;       // from "comm ... nRanks N nNodes M"
  // Up to 3 log lines per fact key (network, ib, socket, no_ib, gdr,
  // net_conn, nvls, channels, warn), for evidence.
  std::map<std::string, std::vector<std::string>> evidence;
};

NcclLogFacts ParseNcclLog(std::string_view text);

// What the plan and the node say NCCL should have used.
struct TransportExpectation {
  bool rdma_devices_present = false;  // /sys/class/infiniband has devices
  bool expect_gdr = false;            // the plan expects GPUDirect RDMA
  // Nodes the run's ranks are on, as the suite knows it; 0 unknown. NCCL
  // logs its network choice at init even for one rank on one node, where
  // no traffic leaves the node: the transport is judged only when traffic
  // crossed nodes (this is above 1, NCCL's nNodes is, or channels went
  // through the network).
  int nodes = 0;
};

// Findings (suite, time and base labels are filled by the RecordWriter):
//  collective.nccl_socket_fallback  FAIL: sockets for inter-node traffic (or
//    "NET/IB : No device found") on a node with RDMA devices, in a run whose
//    traffic crossed nodes;
//  collective.nccl_gdr_off          FAIL: inter-node connections without
//    GDRDMA where the plan expects GPUDirect RDMA;
//  collective.nccl_transport        INFO: what NCCL used;
//  collective.nccl_log_missing      WARN with not_measured set: no NCCL line
//    in the log (the transport was not measured).
std::vector<v1::Finding> TransportFindings(const NcclLogFacts& facts,
                                           const TransportExpectation& expect);

// Labels describing the facts (transport, network, net_plugin, gdr
// yes|no|n/a, nvls yes|no|unknown, channels, trees), for the suite's
// Measurements.
std::map<std::string, std::string> TransportLabels(const NcclLogFacts& facts);

}  // namespace cmax::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_COMMON_NCCL_LOG_H_
