#include "coordinator/service.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>

#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "common/secrets.h"
#include "common/time_util.h"

namespace cmax::coordinator {
namespace {

grpc::Status Unauthenticated() {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "missing or wrong bearer token (see --token-file)");
}

// Outbound queue for one stream: one write in flight, the rest queued.
// Thread-safe; `start_write` is called outside the lock.
template <typename Message>
class WriteQueue {
 public:
  // Returns the message to write now, or nullptr when a write is in flight.
  const Message* Push(Message m) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (closed_) return nullptr;
    queue_.push_back(std::move(m));
    if (writing_) return nullptr;
    writing_ = true;
    return &queue_.front();
  }
  // After a write completed: the next message to write, or nullptr.
  const Message* Done(bool ok) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (!queue_.empty()) queue_.pop_front();
    if (!ok) closed_ = true;
    if (!ok || queue_.empty()) {
      writing_ = false;
      return nullptr;
    }
    return &queue_.front();
  }
  bool Idle() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return !writing_;
  }
  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

 private:
  absl::Mutex mu_;
  std::deque<Message> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

class AgentStream;

// The core's handle on one agent stream; outlives the stream (the core may
// still hold it), after which Send and Close do nothing.
class Session final : public AgentSession {
 public:
  Session(AgentStream* stream, std::string peer) : stream_(stream), peer_(std::move(peer)) {}
  void Send(const v1::CoordinatorMessage& message) override;
  void Close(const std::string& reason) override;
  std::string peer() const override { return peer_; }
  void WriteDone(bool ok);
  void Detach() {
    absl::MutexLock lock(&mu_);
    stream_ = nullptr;
  }

 private:
  absl::Mutex mu_;
  AgentStream* stream_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::string peer_;
  WriteQueue<v1::CoordinatorMessage> writes_;
};

// One agent stream on the async API (service.h says why not the callback
// API). Lives on one completion queue, whose thread runs its tags one at a
// time; StartWrite and Finish also come from the core thread (through
// Session), so the operations it starts are counted under mu_. Every stream
// ends in Finish (the agent closed it or the call broke: the read fails and
// the session closes it; or the core closed it). Once Finish has completed
// and no read or write is outstanding it deletes itself, like a callback
// reactor's OnDone: the session is detached and the core told the stream
// ended. No done notification (AsyncNotifyWhenDone) is asked for: it would
// be a second outstanding tag per stream on the queue, and every completion
// scans them (service.h).
class AgentStream {
 public:
  AgentStream(CoordinatorService* service, grpc::ServerCompletionQueue* cq)
      : service_(service), cq_(cq), stream_(&context_) {}

  // Waits for the next agent stream on this queue.
  void Request() {
    service_->RequestConnect(&context_, &stream_, cq_, cq_, &request_tag_);
  }

  // Called by Session under its lock: one write at a time (WriteQueue).
  void StartWrite(const v1::CoordinatorMessage* message) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (finishing_ || done_) return;
    ++outstanding_;
    writing_ = true;
    stream_.Write(*message, &write_tag_);
  }

  void Finish(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    FinishLocked(status);
  }

  // A completion-queue tag: which handler runs for it.
  struct Tag {
    AgentStream* stream;
    void (AgentStream::*handler)(bool ok);
    void Run(bool ok) { (stream->*handler)(ok); }
  };

 private:
  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finishing_ || done_) return;
    finishing_ = true;
    // Finish is not started beside a write in flight; the write's end
    // starts it.
    if (writing_) {
      pending_finish_ = status;
      return;
    }
    ++outstanding_;
    stream_.Finish(status, &finish_tag_);
  }

  void OnRequest(bool ok) {
    if (!ok) {  // the server is shutting down; no call was started
      delete this;
      return;
    }
    // The next stream on this queue.
    (new AgentStream(service_, cq_))->Request();
    session_ = std::make_shared<Session>(this, context_.peer());
    absl::MutexLock lock(&mu_);
    if (!service_->Authorized(&context_)) {
      GetLogger("coordinator")->warn("agent stream from {} refused: bad token", context_.peer());
      FinishLocked(Unauthenticated());
      return;
    }
    ++outstanding_;
    stream_.Read(&in_, &read_tag_);
  }

  void OnRead(bool ok) {
    if (!ok) {
      {
        absl::MutexLock lock(&mu_);
        --outstanding_;
      }
      session_->Close("stream closed by the agent");
      MaybeEnd();
      return;
    }
    auto session = session_;
    // A pong's t4 is taken here, not when the core gets to it.
    const int64_t received = in_.has_pong() ? NowUnixNs() : 0;
    v1::AgentMessage message = std::move(in_);
    in_.Clear();
    CoordinatorCore* core = service_->core();
    core->Post([core, session, received, message = std::move(message)] {
      core->HandleAgentMessage(session, message, received);
    });
    absl::MutexLock lock(&mu_);
    if (finishing_ || done_) {
      --outstanding_;
    } else {
      stream_.Read(&in_, &read_tag_);  // the same read slot stays outstanding
    }
  }

  void OnWrite(bool ok) {
    {
      absl::MutexLock lock(&mu_);
      --outstanding_;
      writing_ = false;
      if (pending_finish_) {
        ++outstanding_;
        stream_.Finish(*pending_finish_, &finish_tag_);
        pending_finish_.reset();
      }
    }
    session_->WriteDone(ok);
    MaybeEnd();
  }

  void OnFinish(bool) {
    {
      absl::MutexLock lock(&mu_);
      --outstanding_;
      done_ = true;
    }
    MaybeEnd();
  }

  // Once Finish has completed and nothing of the call is outstanding: as a
  // callback reactor's OnDone.
  void MaybeEnd() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      if (!done_ || outstanding_ > 0 || ended_) return;
      ended_ = true;
    }
    // After Detach no Session call reaches this stream (Detach waits for one
    // in progress, and StartWrite does nothing once done_).
    session_->Detach();
    auto session = session_;
    CoordinatorCore* core = service_->core();
    core->Post([core, session] { core->HandleStreamEnded(session); });
    delete this;
  }

  CoordinatorService* service_;
  grpc::ServerCompletionQueue* cq_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<v1::CoordinatorMessage, v1::AgentMessage> stream_;
  std::shared_ptr<Session> session_;
  v1::AgentMessage in_;
  Tag request_tag_{this, &AgentStream::OnRequest};
  Tag read_tag_{this, &AgentStream::OnRead};
  Tag write_tag_{this, &AgentStream::OnWrite};
  Tag finish_tag_{this, &AgentStream::OnFinish};
  absl::Mutex mu_;
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;  // read, write and finish in flight
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;  // Finish completed
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
};

void Session::Send(const v1::CoordinatorMessage& message) {
  const v1::CoordinatorMessage* next = writes_.Push(message);
  if (!next) return;
  absl::MutexLock lock(&mu_);
  if (stream_ && !finished_) {
    stream_->StartWrite(next);
  } else {
    writes_.Close();
  }
}

void Session::WriteDone(bool ok) {
  const v1::CoordinatorMessage* next = writes_.Done(ok);
  if (!next) return;
  absl::MutexLock lock(&mu_);
  if (stream_ && !finished_) stream_->StartWrite(next);
}

void Session::Close(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (!stream_ || finished_) return;
  finished_ = true;
  stream_->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, reason));
}

// Streams a run's events to one cmaxctl.
class WatchReactor;
class Watcher final : public RunWatcher {
 public:
  explicit Watcher(WatchReactor* reactor) : reactor_(reactor) {}
  void OnEvent(const v1::RunEvent& event) override;
  void OnEnd() override;
  bool closed() const override {
    absl::MutexLock lock(&mu_);
    return reactor_ == nullptr || finished_;
  }
  void WriteDone(bool ok);
  void Detach() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }
  void Fail(const grpc::Status& status);

 private:
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  mutable absl::Mutex mu_;
  WatchReactor* reactor_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  WriteQueue<v1::RunEvent> writes_;
};

class WatchReactor final : public grpc::ServerWriteReactor<v1::RunEvent> {
 public:
  WatchReactor(CoordinatorCore* core, const std::string& run_id, bool authorized)
      : watcher_(std::make_shared<Watcher>(this)) {
    if (!authorized) {
      watcher_->Fail(Unauthenticated());
      return;
    }
    auto watcher = watcher_;
    core->Post([core, run_id, watcher] {
      if (auto s = core->HandleWatchRun(run_id, watcher); !s.ok()) watcher->Fail(ToGrpc(s));
    });
  }
  void OnWriteDone(bool ok) override { watcher_->WriteDone(ok); }
  void OnDone() override {
    watcher_->Detach();
    delete this;
  }

 private:
  std::shared_ptr<Watcher> watcher_;
};

void Watcher::OnEvent(const v1::RunEvent& event) {
  const v1::RunEvent* next = writes_.Push(event);
  if (!next) return;
  absl::MutexLock lock(&mu_);
  if (reactor_ && !finished_) reactor_->StartWrite(next);
}

void Watcher::OnEnd() {
  absl::MutexLock lock(&mu_);
  ended_ = true;
  MaybeFinishLocked();
}

void Watcher::MaybeFinishLocked() {
  if (ended_ && !finished_ && reactor_ && writes_.Idle()) {
    finished_ = true;
    reactor_->Finish(grpc::Status::OK);
  }
}

void Watcher::WriteDone(bool ok) {
  const v1::RunEvent* next = writes_.Done(ok);
  absl::MutexLock lock(&mu_);
  if (next && reactor_ && !finished_) {
    reactor_->StartWrite(next);
    return;
  }
  MaybeFinishLocked();
}

void Watcher::Fail(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  if (reactor_ && !finished_) {
    finished_ = true;
    reactor_->Finish(status);
  }
}

// Streams a run's stored records. The core looks the run up and reads its
// records on its export thread (core_export.cc); `done` runs there.
class ExportReactor final : public grpc::ServerWriteReactor<v1::ExportedRecord> {
 public:
  ExportReactor(CoordinatorCore* core, const std::string& run_id, bool authorized) {
    if (!authorized) {
      Finish(Unauthenticated());
      return;
    }
    core->Post([this, core, run_id] {
      core->HandleExport(run_id,
                         [this](absl::StatusOr<std::vector<v1::ExportedRecord>> records) {
                           if (!records.ok()) {
                             Finish(ToGrpc(records.status()));
                             return;
                           }
                           records_ = std::move(*records);
                           Next();
                         });
    });
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::CANCELLED);
      return;
    }
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (index_ >= records_.size()) {
      Finish(grpc::Status::OK);
      return;
    }
    StartWrite(&records_[index_++]);
  }
  std::vector<v1::ExportedRecord> records_;
  size_t index_ = 0;
};

// Runs `fn` (returning absl::StatusOr<Response>) on the core thread and
// finishes the unary call with its result.
template <typename Response, typename Fn>
grpc::ServerUnaryReactor* Unary(CoordinatorCore* core, grpc::CallbackServerContext* context,
                                bool authorized, Response* response, Fn fn) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (!authorized) {
    reactor->Finish(Unauthenticated());
    return reactor;
  }
  core->Post([reactor, response, fn = std::move(fn)]() mutable {
    absl::StatusOr<Response> result = fn();
    if (!result.ok()) {
      reactor->Finish(ToGrpc(result.status()));
      return;
    }
    *response = std::move(*result);
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

}  // namespace

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

CoordinatorService::CoordinatorService(CoordinatorCore* core, std::string token)
    : core_(core), token_(std::move(token)) {}

CoordinatorService::~CoordinatorService() { StopAgentStreams(); }

void CoordinatorService::AddAgentQueues(grpc::ServerBuilder* builder, int queues) {
  for (int i = 0; i < std::max(1, queues); ++i) queues_.push_back(builder->AddCompletionQueue());
}

void CoordinatorService::StartAgentStreams() {
  if (started_) return;
  started_ = true;
  // A few streams accepted ahead on each queue: 50,000 agents connect
  // within seconds.
  constexpr int kAcceptAhead = 16;
  for (auto& q : queues_) {
    for (int i = 0; i < kAcceptAhead; ++i) (new AgentStream(this, q.get()))->Request();
    grpc::ServerCompletionQueue* cq = q.get();
    threads_.emplace_back([cq] {
      void* tag = nullptr;
      bool ok = false;
      while (cq->Next(&tag, &ok)) static_cast<AgentStream::Tag*>(tag)->Run(ok);
    });
  }
}

void CoordinatorService::StopAgentStreams() {
  if (stopped_) return;
  stopped_ = true;
  // The server's Shutdown has ended every call; what is still queued
  // (pending accepts, the calls' last tags) drains here.
  for (auto& q : queues_) q->Shutdown();
  for (auto& t : threads_) t.join();
  if (!started_) {
    void* tag = nullptr;
    bool ok = false;
    for (auto& q : queues_) {
      while (q->Next(&tag, &ok)) {
      }
    }
  }
}

bool CoordinatorService::Authorized(grpc::ServerContextBase* context) const {
  if (token_.empty()) return true;
  const auto& md = context->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return false;
  std::string value(it->second.data(), it->second.size());
  const std::string prefix = "Bearer ";
  if (value.compare(0, prefix.size(), prefix) != 0) return false;
  return SameSecret(value.substr(prefix.size()), token_);
}

grpc::ServerUnaryReactor* CoordinatorService::ListAgents(grpc::CallbackServerContext* context,
                                                         const v1::ListAgentsRequest*,
                                                         v1::ListAgentsResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorized(context), response,
               [core]() -> absl::StatusOr<v1::ListAgentsResponse> {
                 return core->HandleListAgents();
               });
}

grpc::ServerUnaryReactor* CoordinatorService::SubmitRun(grpc::CallbackServerContext* context,
                                                        const v1::SubmitRunRequest* request,
                                                        v1::SubmitRunResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorized(context), response,
               [core, request] { return core->HandleSubmitRun(*request); });
}

grpc::ServerUnaryReactor* CoordinatorService::ListRuns(grpc::CallbackServerContext* context,
                                                       const v1::ListRunsRequest* request,
                                                       v1::ListRunsResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorized(context), response,
               [core, request] { return core->HandleListRuns(*request); });
}

grpc::ServerUnaryReactor* CoordinatorService::GetRun(grpc::CallbackServerContext* context,
                                                     const v1::GetRunRequest* request,
                                                     v1::GetRunResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorized(context), response,
               [core, request] { return core->HandleGetRun(request->run_id()); });
}

grpc::ServerWriteReactor<v1::RunEvent>* CoordinatorService::WatchRun(
    grpc::CallbackServerContext* context, const v1::WatchRunRequest* request) {
  return new WatchReactor(core_, request->run_id(), Authorized(context));
}

grpc::ServerUnaryReactor* CoordinatorService::CancelRun(grpc::CallbackServerContext* context,
                                                        const v1::CancelRunRequest* request,
                                                        v1::CancelRunResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorized(context), response,
               [core, request] { return core->HandleCancelRun(request->run_id()); });
}

grpc::ServerUnaryReactor* CoordinatorService::GetReport(grpc::CallbackServerContext* context,
                                                        const v1::GetReportRequest* request,
                                                        v1::GetReportResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorized(context), response,
               [core, request] { return core->HandleGetReport(*request); });
}

grpc::ServerWriteReactor<v1::ExportedRecord>* CoordinatorService::Export(
    grpc::CallbackServerContext* context, const v1::ExportRequest* request) {
  return new ExportReactor(core_, request->run_id(), Authorized(context));
}

}  // namespace cmax::coordinator
