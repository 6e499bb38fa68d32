// The gRPC face of the coordinator. Every handler checks the bearer token,
// posts its work to the core thread and returns at once. The agents' streams
// (Connect) use the async API spread over --agent-stream-queues completion
// queues, each with its own thread; every other method uses the callback API.
//
// Why not the callback API for Connect too (issue 18, docs/scale.md): Debian's
// libgrpc 1.51 is built without NDEBUG, so every completion runs
// cq_check_tag(), a linear search of its completion queue's outstanding tags
// (src/core/lib/surface/completion_queue.cc, "GPR_ASSERT(found)"; the hot
// loop at 0x4f1436 in libgrpc.so.29.0.0). The callback API puts every call
// of the process on one queue, and each open agent stream keeps its pending
// read there: at 50,000 agents every ping's write and every pong's read
// scanned ~50,000 tags or more, 38-54 % of the idle coordinator's samples.
// Spread over N queues a completion scans about an N-th of them; more
// queues cost more thread wake-ups (the figures are in docs/scale.md).
#ifndef CMAX_COORDINATOR_SERVICE_H_
#define CMAX_COORDINATOR_SERVICE_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"

#include "cmax/v1/service.grpc.pb.h"
#include "coordinator/core.h"

namespace cmax::coordinator {

// Connect asynchronous, the rest callback methods. (Marking a callback
// method async afterwards, WithAsyncMethod_Connect<CallbackService>, would keep
// its callback handler: grpc::internal::RpcServiceMethod::SetServerApiType
// drops the handler only when the method was sync.)
using CoordinatorServiceBase = v1::Coordinator::WithAsyncMethod_Connect<
    v1::Coordinator::WithCallbackMethod_ListAgents<v1::Coordinator::WithCallbackMethod_SubmitRun<
        v1::Coordinator::WithCallbackMethod_ListRuns<v1::Coordinator::WithCallbackMethod_GetRun<
            v1::Coordinator::WithCallbackMethod_WatchRun<
                v1::Coordinator::WithCallbackMethod_CancelRun<
                    v1::Coordinator::WithCallbackMethod_GetReport<
                        v1::Coordinator::WithCallbackMethod_Export<v1::Coordinator::Service>>>>>>>>>;

class CoordinatorService final : public CoordinatorServiceBase {
 public:
  // `token` empty: no authentication (loopback development set-ups).
  CoordinatorService(CoordinatorCore* core, std::string token);
  ~CoordinatorService() override;

  // Before builder->BuildAndStart(): adds the completion queues (a thread
  // each) the agent streams are spread over.
  void AddAgentQueues(grpc::ServerBuilder* builder, int queues);
  // After BuildAndStart(): starts accepting agent streams.
  void StartAgentStreams();
  // After server->Shutdown(): shuts the queues down, drains them and joins
  // their threads (every stream's end is posted to the core). Idempotent;
  // the destructor calls it.
  void StopAgentStreams();

  CoordinatorCore* core() const { return core_; }
  // The bearer token check (constant time), for every method.
  bool Authorized(grpc::ServerContextBase* context) const;

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

 private:
  CoordinatorCore* core_;
  std::string token_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> threads_;
  bool started_ = false;
  bool stopped_ = false;
};

// absl::Status -> grpc::Status (the codes are the same numbers).
grpc::Status ToGrpc(const absl::Status& status);

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_SERVICE_H_
