// An AgentSession that records what the coordinator sends (tests only).
#ifndef CMAX_TESTS_COORDINATOR_FAKE_SESSION_H_
#define CMAX_TESTS_COORDINATOR_FAKE_SESSION_H_

#include <string>
#include <vector>

#include "coordinator/registry.h"

namespace cmax::coordinator {

class FakeSession : public AgentSession {
 public:
  explicit FakeSession(std::string peer = "fake") : peer_(std::move(peer)) {}
  void Send(const v1::CoordinatorMessage& message) override { sent.push_back(message); }
  void Close(const std::string& reason) override { closed = reason; }
  std::string peer() const override { return peer_; }
  int64_t last_receive_mono_ns() const override { return received_ns; }

  std::vector<v1::CoordinatorMessage> sent;
  int64_t received_ns = 0;  // what the stream stamped on its last read
  std::string closed;

 private:
  std::string peer_;
};

inline v1::Hello HelloFrom(const std::string& node, const std::string& boot_id = "boot-1") {
  v1::Hello h;
  h.set_node_name(node);
  h.set_boot_id(boot_id);
  h.add_addresses("10.0.0.1");
  return h;
}

}  // namespace cmax::coordinator

#endif  // CMAX_TESTS_COORDINATOR_FAKE_SESSION_H_
