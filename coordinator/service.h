// The gRPC face of the coordinator (callback API). Every handler checks the
// caller's credential against the role its call needs (credentials.h), posts
// its work to the core thread and returns at once.
#ifndef CMAX_COORDINATOR_SERVICE_H_
#define CMAX_COORDINATOR_SERVICE_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "cmax/v1/service.grpc.pb.h"
#include "coordinator/core.h"
#include "coordinator/credentials.h"

namespace cmax::coordinator {

class CoordinatorService final : public v1::Coordinator::CallbackService {
 public:
  // `credentials.open()`: no authentication (--no-token, development only).
  CoordinatorService(CoordinatorCore* core, Credentials credentials);

  // Node names the coordinator knows (its stored agents, at start): a client
  // certificate naming one is that node's, and is refused on operator calls.
  // Every agent that says Hello adds its own. Thread-safe.
  void AddKnownNodes(const std::vector<std::string>& nodes) ABSL_LOCKS_EXCLUDED(nodes_mu_);
  bool IsKnownNode(const std::string& node) const ABSL_LOCKS_EXCLUDED(nodes_mu_);

  grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* ListAgents(grpc::CallbackServerContext* context,
                                       const v1::ListAgentsRequest* request,
                                       v1::ListAgentsResponse* response) override;
  grpc::ServerUnaryReactor* SubmitRun(grpc::CallbackServerContext* context,
                                      const v1::SubmitRunRequest* request,
                                      v1::SubmitRunResponse* response) override;
  grpc::ServerUnaryReactor* ListRuns(grpc::CallbackServerContext* context,
                                     const v1::ListRunsRequest* request,
                                     v1::ListRunsResponse* response) override;
  grpc::ServerUnaryReactor* GetRun(grpc::CallbackServerContext* context,
                                   const v1::GetRunRequest* request,
                                   v1::GetRunResponse* response) override;
  grpc::ServerWriteReactor<v1::RunEvent>* WatchRun(grpc::CallbackServerContext* context,
                                                   const v1::WatchRunRequest* request) override;
  grpc::ServerUnaryReactor* CancelRun(grpc::CallbackServerContext* context,
                                      const v1::CancelRunRequest* request,
                                      v1::CancelRunResponse* response) override;
  grpc::ServerUnaryReactor* GetReport(grpc::CallbackServerContext* context,
                                      const v1::GetReportRequest* request,
                                      v1::GetReportResponse* response) override;
  grpc::ServerWriteReactor<v1::ExportedRecord>* Export(grpc::CallbackServerContext* context,
                                                       const v1::ExportRequest* request) override;
  grpc::ServerUnaryReactor* AddSchedule(grpc::CallbackServerContext* context,
                                        const v1::AddScheduleRequest* request,
                                        v1::AddScheduleResponse* response) override;
  grpc::ServerUnaryReactor* GetHistory(grpc::CallbackServerContext* context,
                                       const v1::GetHistoryRequest* request,
                                       v1::GetHistoryResponse* response) override;
  grpc::ServerUnaryReactor* GetRemediation(grpc::CallbackServerContext* context,
                                           const v1::GetRemediationRequest* request,
                                           v1::RemediationStatus* response) override;
  grpc::ServerUnaryReactor* UpdateRemediation(grpc::CallbackServerContext* context,
                                              const v1::UpdateRemediationRequest* request,
                                              v1::RemediationStatus* response) override;
  grpc::ServerUnaryReactor* ListSchedules(grpc::CallbackServerContext* context,
                                          const v1::ListSchedulesRequest* request,
                                          v1::ListSchedulesResponse* response) override;
  grpc::ServerUnaryReactor* UpdateSchedule(grpc::CallbackServerContext* context,
                                           const v1::UpdateScheduleRequest* request,
                                           v1::UpdateScheduleResponse* response) override;

 private:
  // OK, or why `call` is refused to this caller (UNAUTHENTICATED,
  // PERMISSION_DENIED; logged).
  grpc::Status Authorize(grpc::CallbackServerContext* context, Role needed,
                         absl::string_view call) const;
  Role PresentedRole(grpc::CallbackServerContext* context) const;
  // Who made an operator call, for what it records (a schedule's added_by):
  // "admin token", or "certificate cmaxctl (admin token)" under mutual TLS
  // (the client certificate's common name, else its first subject
  // alternative name).
  std::string CallerName(grpc::CallbackServerContext* context) const;

  CoordinatorCore* core_;
  const Credentials credentials_;
  mutable absl::Mutex nodes_mu_;
  std::set<std::string> known_nodes_ ABSL_GUARDED_BY(nodes_mu_);
};

// Whether an agent stream may say Hello as `node_name`: always when its
// peer presented no client certificate (the token is then its credential),
// else only when one of the certificate's names (`certificate_names`: its
// subject alternative names and common name) is the node name.
// PERMISSION_DENIED, naming both, otherwise.
absl::Status CheckAgentIdentity(const std::vector<std::string>& certificate_names,
                                const std::string& node_name);

// absl::Status -> grpc::Status (the codes are the same numbers).
grpc::Status ToGrpc(const absl::Status& status);

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_SERVICE_H_
