#include "agent/connection.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cmax/v1/service.grpc.pb.h"
#include "common/logging.h"
#include "common/time_util.h"

namespace cmax::agent {
namespace {

constexpr int64_t kNsPerMs = 1000000;
// Repeated dial failures are logged at warn at most this often.
constexpr int64_t kDialWarnEveryMs = 60000;

std::shared_ptr<spdlog::logger> Log() { return GetLogger("agent"); }

}  // namespace

struct Connection::Stream {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Coordinator::Stub> stub;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>> rw;
  bool reader_done = false;  // guarded by Connection::mu_
  // What the reader hands the dispatcher, in arrival order (guarded by
  // Connection::mu_): the reader never waits for the handler, so a handler
  // held up by its disk (an fsync queued behind a storage suite's writes)
  // does not hold up the answers to the coordinator's pings.
  std::deque<v1::CoordinatorMessage> inbox;
};

Connection::Connection(ConnectionOptions options, ConnectionHandler* handler)
    : options_(std::move(options)), clock_(options_.clock_offset_ns), handler_(handler) {}

Connection::~Connection() { Stop(); }

void Connection::Start() {
  if (supervisor_.joinable()) return;
  supervisor_ = std::thread([this] { Supervise(); });
}

void Connection::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  if (supervisor_.joinable()) supervisor_.join();
}

bool Connection::connected() const {
  absl::MutexLock lock(&mu_);
  return connected_;
}

uint64_t Connection::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

void Connection::BreakStreamForTesting() {
  absl::MutexLock lock(&mu_);
  if (context_ != nullptr) context_->TryCancel();
}

bool Connection::Send(uint64_t generation, v1::AgentMessage message) {
  const size_t size = message.ByteSizeLong();
  absl::MutexLock lock(&mu_);
  if (!connected_ || generation != generation_) return false;
  queued_bytes_ += size;
  queue_.emplace_back(size, std::move(message));
  return true;
}

bool Connection::HasRoom(uint64_t generation) const {
  absl::MutexLock lock(&mu_);
  return connected_ && generation == generation_ &&
         queued_bytes_ < options_.max_queue_bytes;
}

void Connection::SleepUnlessStopped(int64_t ms) {
  absl::MutexLock lock(&mu_);
  auto stopped = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
  mu_.AwaitWithTimeout(absl::Condition(&stopped), absl::Milliseconds(ms));
}

void Connection::Supervise() {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.75, 1.25);
  int64_t backoff_ms = options_.backoff_initial_ms;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    if (RunStream()) backoff_ms = options_.backoff_initial_ms;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    int64_t sleep_ms = std::min<int64_t>(options_.backoff_max_ms,
                                         static_cast<int64_t>(backoff_ms * jitter(rng)));
    SleepUnlessStopped(sleep_ms);
    backoff_ms = std::min<int64_t>(options_.backoff_max_ms, backoff_ms * 2);
  }
}

bool Connection::RunStream() {
  auto stream = std::make_unique<Stream>();
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (!options_.tls_ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options_.tls_ca_pem;
    ssl.pem_cert_chain = options_.tls_cert_pem;
    ssl.pem_private_key = options_.tls_key_pem;
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(options_.backoff_initial_ms));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(options_.backoff_max_ms));
  stream->channel = grpc::CreateCustomChannel(options_.target, creds, args);
  stream->stub = v1::Coordinator::NewStub(stream->channel);
  if (!options_.token.empty()) {
    stream->context.AddMetadata("authorization", absl::StrCat("Bearer ", options_.token));
  }
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return false;
    context_ = &stream->context;
    broken_ = false;
    received_any_ = false;
    heartbeat_ms_ = 0;
  }
  stream->rw = stream->stub->Connect(&stream->context);
  v1::AgentMessage hello;
  *hello.mutable_hello() = handler_->MakeHello();
  if (!stream->rw->Write(hello)) {
    grpc::Status status = stream->rw->Finish();
    const int64_t now = MonotonicNs();
    if (now - last_dial_warn_mono_ns_ >= kDialWarnEveryMs * kNsPerMs) {
      Log()->warn("cannot reach coordinator {}: {} (retrying with backoff)",
                  options_.target, status.error_message());
      last_dial_warn_mono_ns_ = now;
    } else {
      Log()->debug("cannot reach coordinator {}: {}", options_.target,
                   status.error_message());
    }
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
    return false;
  }
  last_dial_warn_mono_ns_ = 0;
  uint64_t generation;
  {
    absl::MutexLock lock(&mu_);
    generation = ++generation_;
    connected_ = true;
    queue_.clear();
    queued_bytes_ = 0;
    last_receive_mono_ns_ = MonotonicNs();
  }
  Log()->info("connected to coordinator {} (stream {})", options_.target, generation);
  handler_->OnConnected(generation);
  std::thread reader([this, s = stream.get(), generation] { ReaderLoop(s, generation); });
  std::thread writer([this, s = stream.get(), generation] { WriterLoop(s, generation); });
  std::thread dispatcher([this, s = stream.get()] { DispatchLoop(s); });

  std::string why;
  bool server_closed = false;
  bool delivered = false;
  {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return broken_ || stopping_; };
    for (;;) {
      mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(1));
      if (stopping_) {
        why = "agent stopping";
        break;
      }
      if (broken_) break;
      if (heartbeat_ms_ > 0) {
        const int64_t silence_ms = (MonotonicNs() - last_receive_mono_ns_) / kNsPerMs;
        if (silence_ms > std::max(options_.min_silence_ms, 5 * heartbeat_ms_)) {
          why = absl::StrCat("nothing received for ", silence_ms, " ms");
          broken_ = true;
          break;
        }
      }
    }
    connected_ = false;  // Send refuses from here on
    server_closed = stream->reader_done;
    delivered = received_any_;
    queue_.clear();
    queued_bytes_ = 0;
  }
  if (!server_closed) stream->context.TryCancel();
  reader.join();
  writer.join();
  dispatcher.join();
  grpc::Status status = stream->rw->Finish();
  {
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
  }
  if (why.empty()) why = status.ok() ? "stream closed" : status.error_message();
  Log()->info("disconnected from coordinator {} (stream {}): {}", options_.target,
              generation, why);
  return delivered;
}

void Connection::ReaderLoop(Stream* stream, uint64_t generation) {
  v1::CoordinatorMessage message;
  while (stream->rw->Read(&message)) {
    const int64_t t2 = clock_.NowNs();
    {
      absl::MutexLock lock(&mu_);
      last_receive_mono_ns_ = MonotonicNs();
      received_any_ = true;
      if (message.has_ping()) {
        // The period grows with the fleet: wait as long as it now says.
        if (message.ping().interval_ms() > 0) heartbeat_ms_ = message.ping().interval_ms();
        if (connected_ && generation_ == generation) {
          v1::AgentMessage pong;
          pong.mutable_pong()->set_t1_ns(message.ping().t1_ns());
          pong.mutable_pong()->set_t2_ns(t2);
          const size_t size = pong.ByteSizeLong() + 10;  // t3 comes later
          queued_bytes_ += size;
          queue_.emplace_front(size, std::move(pong));  // ahead of bulk data
        }
        continue;
      }
      if (message.has_welcome())
        heartbeat_ms_ = message.welcome().heartbeat_interval_ms();
      stream->inbox.push_back(std::move(message));
      message = v1::CoordinatorMessage();
    }
  }
  absl::MutexLock lock(&mu_);
  stream->reader_done = true;
  broken_ = true;
}

void Connection::DispatchLoop(Stream* stream) {
  for (;;) {
    v1::CoordinatorMessage message;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, stream]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !stream->inbox.empty() || stream->reader_done;
      };
      mu_.Await(absl::Condition(&ready));
      // What arrived before the stream ended is still handled (a cancel, an
      // acknowledgement), unless the agent is stopping.
      if (stream->inbox.empty() || stopping_) return;
      message = std::move(stream->inbox.front());
      stream->inbox.pop_front();
    }
    if (message.has_welcome()) {
      Log()->info("coordinator {} is version {}, heartbeat every {} ms", options_.target,
                  message.welcome().coordinator_version(),
                  message.welcome().heartbeat_interval_ms());
    }
    handler_->OnMessage(message);
  }
}

void Connection::WriterLoop(Stream* stream, uint64_t generation) {
  for (;;) {
    v1::AgentMessage message;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, generation]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || broken_ || stopping_ || !connected_ ||
               generation_ != generation;
      };
      mu_.Await(absl::Condition(&ready));
      if (broken_ || stopping_ || !connected_ || generation_ != generation) return;
      queued_bytes_ -= std::min(queued_bytes_, queue_.front().first);
      message = std::move(queue_.front().second);
      queue_.pop_front();
    }
    if (message.has_pong()) message.mutable_pong()->set_t3_ns(clock_.NowNs());
    if (!stream->rw->Write(message)) {
      absl::MutexLock lock(&mu_);
      broken_ = true;
      return;
    }
  }
}

}  // namespace cmax::agent
