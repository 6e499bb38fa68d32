// The TCP side of the connectivity suite: a listener that answers probes,
// and a probe that connects to a peer, checks it is the rank it expects,
// measures round-trip time over small ping-pongs and the rate of one
// transfer.
//
// Wire protocol (binary, one TCP connection per probe):
//   client: "CMAXCN01"            server: "CMAXCN01" + rank (4 bytes, big endian)
//   client: 'p'                   server: 'p'            (a ping-pong, repeated)
//   client: 'T' + n (8 bytes BE) + n bytes   server: 'D' once all n arrived
//   client: 'q' (or close)
//
// Threads: PeerListener runs an accept thread and one thread per connection
// until Stop(); Probe() runs on the caller's thread.
#ifndef CMAX_BENCHMARKS_CONNECTIVITY_PEER_LINK_H_
#define CMAX_BENCHMARKS_CONNECTIVITY_PEER_LINK_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace cmax::bench::connectivity {

class PeerListener {
 public:
  // Listens on every IPv4 address: on port 0 (ephemeral) when `low` is 0,
  // else on the first free port of [low, high].
  static absl::StatusOr<std::unique_ptr<PeerListener>> Start(int rank, int low, int high);
  ~PeerListener();  // Stop()
  void Stop();
  int port() const { return port_; }

 private:
  PeerListener(int fd, int port, int rank) : fd_(fd), port_(port), rank_(rank) {}
  void AcceptLoop();
  void Serve(int fd);

  int fd_;
  int port_;
  int rank_;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<int> open_fds_;
};

struct ProbeOptions {
  double connect_timeout_s = 2;
  double io_timeout_s = 30;
  int pings = 20;
  int64_t transfer_bytes = 4 << 20;
};

struct AddressAttempt {
  std::string address;
  std::string error;  // empty: this address worked
};

struct ProbeResult {
  bool reachable = false;
  std::string address;  // the one that answered
  std::vector<AddressAttempt> attempts;
  double rtt_ms = 0;        // median of the pings
  double transfer_mbps = 0; // megabits per second (1e6 bit/s)
  std::string error;        // set when reachable but a measurement failed
};

// Tries `addresses` in order (IPv4 literals) until one answers as
// `expected_rank`, then measures over that connection.
ProbeResult Probe(const std::vector<std::string>& addresses, int port, int expected_rank,
                  const ProbeOptions& options);

// IPv4 addresses of interfaces that are up, loopback excluded; 127.0.0.1
// only when there is nothing else.
std::vector<std::string> LocalAddresses();

}  // namespace cmax::bench::connectivity

#endif  // CMAX_BENCHMARKS_CONNECTIVITY_PEER_LINK_H_
