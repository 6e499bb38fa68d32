// The executor's view of the coordinator stream: where it queues outgoing
// messages. Implemented by Connection (gRPC) and by fakes in tests.
//
// Streams are numbered: every successful (re)connect starts a new generation
// and tells the executor (Executor::OnConnected). A message is only queued on
// the stream of the generation the sender names, so nothing meant for a dead
// stream leaks onto its successor ahead of the resend from the acked seq.
#ifndef CMAX_AGENT_OUTBOX_H_
#define CMAX_AGENT_OUTBOX_H_

#include <cstdint>

#include "cmax/v1/service.pb.h"

namespace cmax::agent {

class Outbox {
 public:
  virtual ~Outbox() = default;
  // Queues `message` on the stream of `generation`. False (the message is
  // dropped) when that stream is down or no longer the current one; the
  // executor resends records and end statuses after the next OnConnected.
  // Thread-safe, never blocks on the network.
  virtual bool Send(uint64_t generation, v1::AgentMessage message) = 0;
  // True while the stream of `generation` is up and its queue has room for
  // bulk data (record batches). Thread-safe.
  virtual bool HasRoom(uint64_t generation) const = 0;
};

}  // namespace cmax::agent

#endif  // CMAX_AGENT_OUTBOX_H_
