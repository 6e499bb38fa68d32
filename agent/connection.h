// The agent's one bidirectional Coordinator.Connect stream: dial out, send
// Hello, answer Ping at once, hand everything else to a handler, and
// reconnect forever with exponential backoff and jitter (0.5 s doubling up
// to 10 s; reset once a stream delivered a message).
//
// Threads, per Connection:
//   supervisor  (Start → Stop): dials, writes Hello, watches the stream,
//               tears it down, sleeps the backoff;
//   writer      (one per stream): drains the outbound queue, one Write at a
//               time; a Pong's t3 is stamped just before its Write;
//   reader      (one per stream): Read loop; Ping → Pong queued at the
//               front; every other message → the dispatcher's inbox;
//   dispatcher  (one per stream): handler->OnMessage for each, in order. It
//               may wait on the disk (the task store's fsync) without
//               delaying a Pong; it ends when the reader has ended and the
//               inbox is empty (or the agent is stopping).
// Send/HasRoom (the Outbox) are thread-safe and never block on the network.
//
//   ┌──────────┐ stream up, Hello written ┌───────────┐
//   │ dialing  │─────────────────────────▶│ connected │ generation++
//   └──────────┘                          └───────────┘ handler->OnConnected
//        ▲  backoff      read/write fails, or    │
//        └───────────── watchdog, or Stop ◀──────┘
//
// Auth: with a token every call carries `authorization: Bearer <token>`
// (the token is never logged). TLS: SslCredentials with the given root CA
// and, for mutual TLS, a client certificate; otherwise insecure credentials,
// which main.cc allows with a token only for a loopback coordinator or with
// --allow-insecure (CheckTokenTransport, common/net_address.h).
#ifndef CMAX_AGENT_CONNECTION_H_
#define CMAX_AGENT_CONNECTION_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/agent_clock.h"
#include "agent/outbox.h"
#include "cmax/v1/service.pb.h"

namespace grpc {
class ClientContext;
}

namespace cmax::agent {

struct ConnectionOptions {
  std::string target;      // HOST:PORT
  std::string token;       // bearer token; empty: none
  std::string tls_ca_pem;  // root CA (PEM); empty: insecure channel
  // Client certificate chain and key (PEM) for a coordinator that requires
  // them (--tls-client-ca); both empty: none. Only used with tls_ca_pem.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  int64_t clock_offset_ns = 0;
  int64_t backoff_initial_ms = 500;
  int64_t backoff_max_ms = 10000;
  size_t max_queue_bytes = 8 << 20;  // HasRoom() false above this
  // A connected stream silent for max(this, 5 heartbeat periods) is torn
  // down and dialled again (the period comes in Welcome and every Ping).
  int64_t min_silence_ms = 30000;
};

// Receives what the coordinator sends. Called on the connection's threads.
class ConnectionHandler {
 public:
  virtual ~ConnectionHandler() = default;
  // The Hello for a new stream (called before each connect).
  virtual v1::Hello MakeHello() = 0;
  // Stream `generation` is up; Hello went out first on it.
  virtual void OnConnected(uint64_t generation) = 0;
  // Any message but Ping (answered by the connection), one at a time and in
  // order, on the stream's dispatcher thread. May wait on the disk; a
  // handler that never returns holds up the stream's end.
  virtual void OnMessage(const v1::CoordinatorMessage& message) = 0;
};

class Connection : public Outbox {
 public:
  // `handler` must outlive the connection.
  Connection(ConnectionOptions options, ConnectionHandler* handler);
  ~Connection() override;  // Stop()

  void Start();
  // Cancels the stream and joins every thread. Idempotent.
  void Stop();

  bool Send(uint64_t generation, v1::AgentMessage message) override;
  bool HasRoom(uint64_t generation) const override;

  bool connected() const;
  // Streams established so far.
  uint64_t generation() const;
  // Breaks the current stream as if the network failed (tests).
  void BreakStreamForTesting();

 private:
  struct Stream;
  void Supervise();
  // Runs one stream until it breaks; true when it delivered any message.
  bool RunStream();
  void WriterLoop(Stream* stream, uint64_t generation);
  void ReaderLoop(Stream* stream, uint64_t generation);
  void DispatchLoop(Stream* stream);
  // Sleeps up to `ms` or until Stop.
  void SleepUnlessStopped(int64_t ms);

  const ConnectionOptions options_;
  const AgentClock clock_;  // options_.clock_offset_ns
  ConnectionHandler* const handler_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  // (encoded size, message): the outbound queue of the current stream.
  std::deque<std::pair<size_t, v1::AgentMessage>> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_receive_mono_ns_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t heartbeat_ms_ ABSL_GUARDED_BY(mu_) = 0;  // from Welcome and Ping
  bool received_any_ ABSL_GUARDED_BY(mu_) = false;

  std::thread supervisor_;
  int64_t last_dial_warn_mono_ns_ = 0;  // supervisor thread only
};

}  // namespace cmax::agent

#endif  // CMAX_AGENT_CONNECTION_H_
