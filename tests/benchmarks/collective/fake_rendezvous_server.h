// A stand-in for the agent's rendezvous socket in tests: a Unix-socket
// server speaking common/rendezvous_client.h's JSON-line protocol (one
// cmax.v1.RendezvousRequest per line in, one RendezvousReply per line out)
// with set, get (waits for the key up to timeout_ms) and barrier (waits for
// `world_size` arrivals). Ranks are child processes of the test with
// CMAX_RENDEZVOUS=unix:<path>. Test-only; drop it when the agent's relay can
// be used instead.
#ifndef CMAX_TESTS_BENCHMARKS_COLLECTIVE_FAKE_RENDEZVOUS_SERVER_H_
#define CMAX_TESTS_BENCHMARKS_COLLECTIVE_FAKE_RENDEZVOUS_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace cmax::testing {

class FakeRendezvousServer {
 public:
  // Listens on `socket_path` (removed first if it exists).
  static absl::StatusOr<std::unique_ptr<FakeRendezvousServer>> Start(const std::string& socket_path,
                                                                     int world_size);
  ~FakeRendezvousServer();

  std::string address() const { return "unix:" + path_; }
  // Requests served so far (all ops).
  int requests() const { return requests_.load(); }

 private:
  FakeRendezvousServer(std::string path, int fd, int world_size)
      : path_(std::move(path)), listen_fd_(fd), world_size_(world_size) {}
  void AcceptLoop();
  void Serve(int fd);
  std::string Handle(const std::string& line);

  std::string path_;
  int listen_fd_;
  int world_size_;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> kv_;
  std::map<std::string, int> barrier_count_;
  std::vector<std::thread> workers_;
  std::vector<int> conn_fds_;
};

}  // namespace cmax::testing

#endif  // CMAX_TESTS_BENCHMARKS_COLLECTIVE_FAKE_RENDEZVOUS_SERVER_H_
