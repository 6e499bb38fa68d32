// The rails of one node for the rdma suite: every ACTIVE port of every RDMA
// device under /sys/class/infiniband (read through a Sysroot, so fixture
// trees stand in), with the GPU the GPU-NIC map of benchmarks/hostcheck/
// topology.h pairs with the device, ordered so that rail k of one node
// meets rail k of its peer: by the lowest index of a GPU paired with the
// device (GPU bus order), then device name, then port. And the argv of one
// perftest run (never a shell).
//
// sysfs formats (Documentation/ABI/stable/sysfs-class-infiniband):
//   ports/<n>/state       "4: ACTIVE"
//   ports/<n>/rate        "400 Gb/sec (4X NDR)"
//   ports/<n>/link_layer  "InfiniBand" or "Ethernet" (RoCE)
//   ports/<n>/gids/<i>    "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d"
//   ports/<n>/gid_attrs/types/<i>  "IB/RoCE v1" or "RoCE v2"
#ifndef CMAX_BENCHMARKS_RDMA_RAILS_H_
#define CMAX_BENCHMARKS_RDMA_RAILS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/sysroot.h"

namespace cmax::bench::rdma {

struct Rail {
  std::string hca;         // "mlx5_0"
  int port = 1;            // the device's port number
  std::string link_layer;  // "InfiniBand", "Ethernet"
  double rate_gbps = 0;    // 400; 0 when unreadable
  int gid_index = -1;      // RoCE: the GID index for -x; -1 for InfiniBand or none found
  int gpu = -1;            // index (bus order) of the GPU the map pairs with it, -1: none
  std::string gpu_bdf;     // that GPU's bus id
  bool roce() const { return link_layer == "Ethernet"; }
};

// One line for the rendezvous: "mlx5_0 1 InfiniBand 400 -1 0 0000:18:00.0"
// (gpu_bdf "-" when none); ParseRail reads it back.
std::string FormatRail(const Rail& rail);
absl::StatusOr<Rail> ParseRail(const std::string& line);

// True for an RDMA device name perftest may be given: 1-64 of
// [A-Za-z0-9_.-], not starting with '-' (so it never reads as an option).
bool ValidHcaName(const std::string& name);

// The rails of the node under `root`. NOT_FOUND: no RDMA devices (no
// /sys/class/infiniband, or it is empty), with the path in the message;
// FAILED_PRECONDITION: devices but no ACTIVE port (every port and its state
// listed). A device whose name fails ValidHcaName is skipped. `gid_index`
// >= 0 forces that GID index on every RoCE rail; -1 picks per port the
// first "RoCE v2" GID that is set, preferring an IPv4-mapped one
// (::ffff:a.b.c.d, what RoCE v2 over IPv4 routes with).
absl::StatusOr<std::vector<Rail>> ReadRails(const Sysroot& root, int gid_index = -1);

enum class PerftestTest { kWriteBw, kReadBw, kWriteLat };
// "ib_write_bw", "ib_read_bw", "ib_write_lat".
const char* PerftestProgram(PerftestTest test);
// "write_bw", ... (the --tests value and the record label).
const char* PerftestTestName(PerftestTest test);
// The metric a run of `test` is recorded as: rdma_write_bw_gbps,
// rdma_read_bw_gbps, rdma_write_lat_us.
const char* PerftestMetric(PerftestTest test);

struct PerftestOptions {
  int tcp_port = 18515;         // -p (perftest's default port is 18515)
  double duration_s = 0;        // -D, bandwidth tests only; 0: not given
  int64_t iterations = 0;       // -n; 0: not given
  int64_t size_bytes = 0;       // -s; 0: perftest's default
  bool use_cuda = false;        // with the rail's GPU
  bool cuda_by_bus_id = false;  // --use_cuda_bus_id=<bdf> instead of --use_cuda=<index>
};

// The argv of one side: the server when `server_address` is empty, else the
// client of that server. `program` is the resolved path of the binary.
//   <program> -d <hca> -i <port> -F -p <tcp> [--report_gbits] [-x <gid>]
//     [-D <s> | [-n <iters>] [--perform_warm_up]] [-s <bytes>]
//     [--use_cuda=<gpu>] [<server>]
// --report_gbits is given to the bandwidth tests (perftest reports latency
// in usec whatever it is given); -D only to bandwidth tests (perftest's
// latency tests in duration mode print only an average, no percentiles);
// --perform_warm_up to bandwidth tests that run by iterations.
std::vector<std::string> PerftestArgv(const std::string& program, PerftestTest test,
                                      const Rail& rail, const PerftestOptions& options,
                                      const std::string& server_address);

// The server rank's "ready PORT ADDR,ADDR..." rendezvous value, from the
// peer node. Each element becomes an argument of the root-run perftest
// client, so only a TCP port 1-65535 and numeric IPv4 or IPv6 addresses are
// accepted (a peer publishing "--out_json_file=/x" is refused, never passed
// on), and at least one address.
struct ServerReady {
  int tcp_port = 0;
  std::vector<std::string> addresses;
};
absl::StatusOr<ServerReady> ParseServerReady(const std::string& value);

}  // namespace cmax::bench::rdma

#endif  // CMAX_BENCHMARKS_RDMA_RAILS_H_
