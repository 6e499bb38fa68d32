// The gRPC GetHistory call (`cmaxctl history`), answered from the history
// threads (CoordinatorCore::QueryHistory), never the core thread: a call
// the client cancels (or whose deadline passes) leaves its query, which is
// dropped or stopped when nobody else waits for it (history_pool.h). Busy:
// RESOURCE_EXHAUSTED "busy, retry".
#ifndef CMAX_COORDINATOR_HISTORY_RPC_H_
#define CMAX_COORDINATOR_HISTORY_RPC_H_

#include <grpcpp/grpcpp.h>

#include "cmax/v1/service.pb.h"
#include "coordinator/core.h"

namespace cmax::coordinator {

// The reactor of one authorised GetHistory call (the caller checks the
// credentials first). It deletes itself when the call is done.
grpc::ServerUnaryReactor* NewHistoryReactor(CoordinatorCore* core,
                                            const v1::GetHistoryRequest& request,
                                            v1::GetHistoryResponse* response);

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_HISTORY_RPC_H_
