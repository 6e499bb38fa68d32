#include "coordinator/service.h"

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "common/secrets.h"
#include "common/time_util.h"
#include "coordinator/history_rpc.h"

namespace cmax::coordinator {
namespace {

// The names of the client certificate a stream's peer presented (mutual
// TLS: --tls-client-ca): its subject alternative names and common name.
// Empty when it presented none; then the bearer token is its only
// credential.
std::vector<std::string> CertificateNames(const grpc::CallbackServerContext& context) {
  std::vector<std::string> names;
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (!auth || !auth->IsPeerAuthenticated()) return names;
  for (const char* property : {"x509_subject_alternative_name", "x509_common_name"}) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(property)) {
      names.emplace_back(v.data(), v.size());
    }
  }
  return names;
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

class AgentReactor;

// The core's handle on one agent stream; outlives the reactor (the core may
// still hold it), after which Send and Close do nothing.
class Session final : public AgentSession {
 public:
  Session(AgentReactor* reactor, std::string peer) : reactor_(reactor), peer_(std::move(peer)) {}
  void Send(const v1::CoordinatorMessage& message) override;
  void Close(const std::string& reason) override;
  std::string peer() const override { return peer_; }
  int64_t last_receive_mono_ns() const override {
    return last_receive_mono_ns_.load(std::memory_order_relaxed);
  }
  void Received() { last_receive_mono_ns_.store(MonotonicNs(), std::memory_order_relaxed); }
  void WriteDone(bool ok);
  // Ends the stream with `status` (once; nothing after Detach).
  void End(const grpc::Status& status);
  void Detach() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

 private:
  absl::Mutex mu_;
  AgentReactor* reactor_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::string peer_;
  WriteQueue<v1::CoordinatorMessage> writes_;
  std::atomic<int64_t> last_receive_mono_ns_{0};
};

class AgentReactor final
    : public grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage> {
 public:
  AgentReactor(CoordinatorCore* core, CoordinatorService* service,
               grpc::CallbackServerContext* context, const absl::Status& authorized)
      : core_(core),
        service_(service),
        session_(std::make_shared<Session>(this, context->peer())),
        certificate_names_(CertificateNames(*context)) {
    if (!authorized.ok()) {
      GetLogger("coordinator")
          ->warn("agent stream from {} refused: {}", context->peer(),
                 absl::IsUnauthenticated(authorized) ? std::string("bad token")
                                                     : std::string(authorized.message()));
      session_->Detach();
      Finish(ToGrpc(authorized));
      return;
    }
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      session_->Close("stream closed by the agent");
      return;
    }
    if (in_.has_hello()) {
      if (absl::Status id = CheckAgentIdentity(certificate_names_, in_.hello().node_name());
          !id.ok()) {
        // Another node's certificate cannot say Hello as this node, nor
        // take over its session.
        GetLogger("coordinator")
            ->warn("agent stream from {} refused: {}", session_->peer(),
                   std::string(id.message()));
        session_->End(ToGrpc(id));
        return;
      }
      BindAddresses(in_.mutable_hello());
      service_->AddKnownNodes({in_.hello().node_name()});
    }
    auto session = session_;
    // Heard now, as a pong's t4 is taken now, not when the core's round
    // gets to it: a core behind on its queue (a big SubmitRun, a starved
    // CPU) must not declare the agents it has not read yet lost.
    session->Received();
    const int64_t received = in_.has_pong() ? NowUnixNs() : 0;
    v1::AgentMessage message = std::move(in_);
    CoordinatorCore* core = core_;
    core_->Post([core, session, received, message = std::move(message)] {
      core->HandleAgentMessage(session, message, received);
    });
    in_.Clear();
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override { session_->WriteDone(ok); }
  void OnDone() override {
    session_->Detach();
    auto session = session_;
    CoordinatorCore* core = core_;
    core_->Post([core, session] { core->HandleStreamEnded(session); });
    delete this;
  }

 private:
  // Under mutual TLS a Hello declares only addresses its certificate names
  // or its stream comes from: the addresses become other nodes' peers and
  // mpirun's --host, so a node must not point them at a host of its choice.
  void BindAddresses(v1::Hello* hello) {
    if (certificate_names_.empty()) return;
    std::vector<std::string> declared(hello->addresses().begin(), hello->addresses().end());
    std::vector<std::string> dropped;
    std::vector<std::string> kept =
        AddressesBoundToCertificate(certificate_names_, session_->peer(), declared, &dropped);
    if (!dropped.empty()) {
      GetLogger("coordinator")
          ->warn("agent {} ({}): ignoring declared address(es) {}: neither its certificate "
                 "nor its connection names them (deploy/gen-certs.sh NODE,IP ...)",
                 hello->node_name(), session_->peer(), absl::StrJoin(dropped, ", "));
    }
    hello->clear_addresses();
    for (std::string& a : kept) hello->add_addresses(std::move(a));
  }

  CoordinatorCore* core_;
  CoordinatorService* service_;
  std::shared_ptr<Session> session_;
  const std::vector<std::string> certificate_names_;
  v1::AgentMessage in_;
};

void Session::Send(const v1::CoordinatorMessage& message) {
  const v1::CoordinatorMessage* next = writes_.Push(message);
  if (!next) return;
  absl::MutexLock lock(&mu_);
  if (reactor_ && !finished_) {
    reactor_->StartWrite(next);
  } else {
    writes_.Close();
  }
}

void Session::WriteDone(bool ok) {
  const v1::CoordinatorMessage* next = writes_.Done(ok);
  if (!next) return;
  absl::MutexLock lock(&mu_);
  if (reactor_ && !finished_) reactor_->StartWrite(next);
}

void Session::Close(const std::string& reason) {
  End(grpc::Status(grpc::StatusCode::UNAVAILABLE, reason));
}

void Session::End(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  if (!reactor_ || finished_) return;
  finished_ = true;
  reactor_->Finish(status);
}

// Streams a run's events to one cmaxctl.
class WatchReactor;
class Watcher final : public RunWatcher {
 public:
  explicit Watcher(WatchReactor* reactor) : reactor_(reactor) {}
  void OnEvent(const v1::RunEvent& event) override;
  void OnEnd() override;
  void OnShutdown(const std::string& reason) override {
    Fail(grpc::Status(grpc::StatusCode::UNAVAILABLE, reason));
  }
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
  WatchReactor(CoordinatorCore* core, const std::string& run_id, const grpc::Status& authorized)
      : watcher_(std::make_shared<Watcher>(this)) {
    if (!authorized.ok()) {
      watcher_->Fail(authorized);
      return;
    }
    auto watcher = watcher_;
    core->Post([core, run_id, watcher] {
      if (auto s = core->HandleWatchRun(run_id, watcher); !s.ok()) watcher->Fail(ToGrpc(s));
    });
  }
  void OnWriteDone(bool ok) override { watcher_->WriteDone(ok); }
  // The client went away or the server is shutting down: the call must
  // still be finished, or OnDone never comes and Server::Shutdown waits for
  // the run to end (a `systemctl restart` that took until then).
  void OnCancel() override { watcher_->Fail(grpc::Status::CANCELLED); }
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
  ExportReactor(CoordinatorCore* core, const std::string& run_id,
                const grpc::Status& authorized) {
    if (!authorized.ok()) {
      Finish(authorized);
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
                                const grpc::Status& authorized, Response* response, Fn fn) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (!authorized.ok()) {
    reactor->Finish(authorized);
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

absl::Status CheckAgentIdentity(const std::vector<std::string>& certificate_names,
                                const std::string& node_name) {
  if (certificate_names.empty()) return absl::OkStatus();
  for (const std::string& name : certificate_names) {
    if (name == node_name) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("its client certificate is for ", absl::StrJoin(certificate_names, ", "),
                   ", but its Hello says node '", node_name,
                   "': an agent's certificate must name its node (deploy/gen-certs.sh "
                   "makes one per node)"));
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

CoordinatorService::CoordinatorService(CoordinatorCore* core, Credentials credentials)
    : core_(core), credentials_(std::move(credentials)) {}

void CoordinatorService::AddKnownNodes(const std::vector<std::string>& nodes) {
  absl::MutexLock lock(&nodes_mu_);
  known_nodes_.insert(nodes.begin(), nodes.end());
}

bool CoordinatorService::IsKnownNode(const std::string& node) const {
  absl::MutexLock lock(&nodes_mu_);
  return known_nodes_.count(node) > 0;
}

Role CoordinatorService::PresentedRole(grpc::CallbackServerContext* context) const {
  if (credentials_.open()) return Role::kAdmin;
  const auto& md = context->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return Role::kNone;
  absl::string_view value(it->second.data(), it->second.size());
  if (!absl::ConsumePrefix(&value, "Bearer ")) return Role::kNone;
  return RoleOfToken(credentials_, value);
}

std::string CoordinatorService::CallerName(grpc::CallbackServerContext* context) const {
  const std::string role = absl::StrCat(RoleName(PresentedRole(context)), " token");
  for (const char* property : {"x509_common_name", "x509_subject_alternative_name"}) {
    for (const grpc::string_ref& v : context->auth_context()
                                         ? context->auth_context()->FindPropertyValues(property)
                                         : std::vector<grpc::string_ref>{}) {
      if (v.size() > 0) {
        return absl::StrCat("certificate ", std::string(v.data(), v.size()), " (", role, ")");
      }
    }
  }
  return role;
}

grpc::Status CoordinatorService::Authorize(grpc::CallbackServerContext* context, Role needed,
                                           absl::string_view call) const {
  const absl::Status s = AuthorizeOperatorCall(
      credentials_, PresentedRole(context), needed, call, CertificateNames(*context),
      [this](const std::string& name) { return IsKnownNode(name); });
  if (absl::IsPermissionDenied(s)) {
    GetLogger("coordinator")->warn("{} from {} refused: {}", std::string(call), context->peer(),
                                   std::string(s.message()));
  }
  return ToGrpc(s);
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>* CoordinatorService::Connect(
    grpc::CallbackServerContext* context) {
  return new AgentReactor(core_, this, context,
                          AuthorizeAgentStream(credentials_, PresentedRole(context)));
}

grpc::ServerUnaryReactor* CoordinatorService::ListAgents(grpc::CallbackServerContext* context,
                                                         const v1::ListAgentsRequest*,
                                                         v1::ListAgentsResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kRead, "ListAgents"), response,
               [core]() -> absl::StatusOr<v1::ListAgentsResponse> {
                 return core->HandleListAgents();
               });
}

grpc::ServerUnaryReactor* CoordinatorService::SubmitRun(grpc::CallbackServerContext* context,
                                                        const v1::SubmitRunRequest* request,
                                                        v1::SubmitRunResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kRun, "SubmitRun"), response,
               [core, request] { return core->HandleSubmitRun(*request); });
}

grpc::ServerUnaryReactor* CoordinatorService::ListRuns(grpc::CallbackServerContext* context,
                                                       const v1::ListRunsRequest* request,
                                                       v1::ListRunsResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kRead, "ListRuns"), response,
               [core, request] { return core->HandleListRuns(*request); });
}

grpc::ServerUnaryReactor* CoordinatorService::GetRun(grpc::CallbackServerContext* context,
                                                     const v1::GetRunRequest* request,
                                                     v1::GetRunResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kRead, "GetRun"), response,
               [core, request] { return core->HandleGetRun(request->run_id()); });
}

grpc::ServerWriteReactor<v1::RunEvent>* CoordinatorService::WatchRun(
    grpc::CallbackServerContext* context, const v1::WatchRunRequest* request) {
  return new WatchReactor(core_, request->run_id(), Authorize(context, Role::kRead, "WatchRun"));
}

grpc::ServerUnaryReactor* CoordinatorService::CancelRun(grpc::CallbackServerContext* context,
                                                        const v1::CancelRunRequest* request,
                                                        v1::CancelRunResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kRun, "CancelRun"), response,
               [core, request] { return core->HandleCancelRun(request->run_id()); });
}

grpc::ServerUnaryReactor* CoordinatorService::GetReport(grpc::CallbackServerContext* context,
                                                        const v1::GetReportRequest* request,
                                                        v1::GetReportResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kRead, "GetReport"), response,
               [core, request] { return core->HandleGetReport(*request); });
}

grpc::ServerWriteReactor<v1::ExportedRecord>* CoordinatorService::Export(
    grpc::CallbackServerContext* context, const v1::ExportRequest* request) {
  return new ExportReactor(core_, request->run_id(), Authorize(context, Role::kRead, "Export"));
}

grpc::ServerUnaryReactor* CoordinatorService::AddSchedule(grpc::CallbackServerContext* context,
                                                          const v1::AddScheduleRequest* request,
                                                          v1::AddScheduleResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kAdmin, "AddSchedule"), response,
               [core, request, by = CallerName(context)] {
                 return core->HandleAddSchedule(*request, by);
               });
}

grpc::ServerUnaryReactor* CoordinatorService::ListSchedules(grpc::CallbackServerContext* context,
                                                            const v1::ListSchedulesRequest*,
                                                            v1::ListSchedulesResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kRead, "ListSchedules"), response,
               [core]() -> absl::StatusOr<v1::ListSchedulesResponse> {
                 return core->HandleListSchedules();
               });
}

grpc::ServerUnaryReactor* CoordinatorService::UpdateSchedule(
    grpc::CallbackServerContext* context, const v1::UpdateScheduleRequest* request,
    v1::UpdateScheduleResponse* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kAdmin, "UpdateSchedule"), response,
               [core, request] { return core->HandleUpdateSchedule(*request); });
}

grpc::ServerUnaryReactor* CoordinatorService::GetRemediation(
    grpc::CallbackServerContext* context, const v1::GetRemediationRequest* request,
    v1::RemediationStatus* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kRead, "GetRemediation"), response,
               [core, request] { return core->HandleGetRemediation(*request); });
}

// Pause, resume, approve and dismiss act on nodes: the admin role only.
grpc::ServerUnaryReactor* CoordinatorService::UpdateRemediation(
    grpc::CallbackServerContext* context, const v1::UpdateRemediationRequest* request,
    v1::RemediationStatus* response) {
  CoordinatorCore* core = core_;
  return Unary(core_, context, Authorize(context, Role::kAdmin, "UpdateRemediation"), response,
               [core, request, by = CallerName(context)] {
                 return core->HandleUpdateRemediation(*request, by);
               });
}

grpc::ServerUnaryReactor* CoordinatorService::GetHistory(
    grpc::CallbackServerContext* context, const v1::GetHistoryRequest* request,
    v1::GetHistoryResponse* response) {
  if (grpc::Status authorized = Authorize(context, Role::kRead, "GetHistory");
      !authorized.ok()) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(authorized);
    return reactor;
  }
  // Off the core thread (history_rpc.h).
  return NewHistoryReactor(core_, *request, response);
}

}  // namespace cmax::coordinator
