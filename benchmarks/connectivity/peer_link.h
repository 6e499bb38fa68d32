// The TCP side of the connectivity suite: a listener that answers probes,
// and a probe that connects to a peer, checks it is the rank it expects,
// measures round-trip time over small ping-pongs and the rate of one
// transfer.
//
// Wire protocol (binary, one TCP connection per probe):
//   client: "CMAXCN02" + the task's secret (kSecretBytes)
//                                 server: "CMAXCN02" + rank (4 bytes, big endian)
//   client: 'p'                   server: 'p'            (a ping-pong, repeated)
//   client: 'T' + n (8 bytes BE) + n bytes   server: 'D' once all n arrived
//   client: 'q' (or close)
//
// The secret is a random per-task value rank 0 publishes in the group's
// key-value store (reachable only by the task's ranks, through their agents);
// the listener compares it in constant time and closes a connection that
// does not open with it at once (or after handshake_timeout_s when it sends
// nothing). It binds only the given addresses (those it publishes), never
// the wildcard, and serves at most max_connections at a time: one more is
// closed as soon as it is accepted.
//
// Threads: PeerListener runs an accept thread and one thread per connection
// (at most max_connections) until Stop(); Probe() runs on the caller's thread.
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

// Bytes of the task secret on the wire (a 32-character hex string).
inline constexpr size_t kSecretBytes = 32;

struct ListenerOptions {
  std::vector<std::string> bind;  // IPv4 literals, one socket each, one port
  std::string secret;             // kSecretBytes; REQUIRED
  int max_connections = 64;
  double handshake_timeout_s = 5;
};

class PeerListener {
 public:
  // Listens on every address of options.bind: on an ephemeral port when `low`
  // is 0, else on the first port of [low, high] free on all of them.
  static absl::StatusOr<std::unique_ptr<PeerListener>> Start(int rank, int low, int high,
                                                             const ListenerOptions& options);
  ~PeerListener();  // Stop()
  void Stop();
  int port() const { return port_; }
  // Connections closed for a wrong or missing secret, or over the limit.
  int refused() const { return refused_.load(); }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  PeerListener(std::vector<int> fds, int port, int rank, ListenerOptions options)
      : fds_(std::move(fds)), port_(port), rank_(rank), options_(std::move(options)) {}
  void AcceptLoop();
  void Serve(int fd);
  void JoinFinishedLocked();

  std::vector<int> fds_;
  int port_;
  int rank_;
  const ListenerOptions options_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> refused_{0};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<Worker> workers_;
  std::vector<int> open_fds_;
};

struct ProbeOptions {
  double connect_timeout_s = 2;
  double io_timeout_s = 30;
  int pings = 20;
  int64_t transfer_bytes = 4 << 20;
  std::string secret;  // the task's secret (ListenerOptions::secret)
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

// The addresses this rank listens on and publishes: the agent's advertised
// ones when it was given --advertise (CMAX_ADVERTISE, "a,b": IPv4 literals
// kept, host names resolved to their IPv4 addresses), else LocalAddresses().
// So trial agents on one machine, advertising 127.0.0.1, talk over loopback.
std::vector<std::string> ListenAddresses();

}  // namespace cmax::bench::connectivity

#endif  // CMAX_BENCHMARKS_CONNECTIVITY_PEER_LINK_H_
