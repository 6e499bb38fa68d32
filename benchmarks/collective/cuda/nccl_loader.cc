#include "benchmarks/collective/cuda/nccl_loader.h"

#include <dlfcn.h>
#include <nccl.h>

#include "absl/strings/str_cat.h"
#include "benchmarks/gpu_common/library_search.h"
#include "common/status_macros.h"

namespace cmax::bench {
namespace {

struct NcclApi {
  decltype(&::ncclGetVersion) get_version = nullptr;
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRankConfig) comm_init_rank_config = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclCommAbort) comm_abort = nullptr;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&::ncclGetErrorString) get_error_string = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclSend) send = nullptr;
  decltype(&::ncclRecv) recv = nullptr;
  decltype(&::ncclGroupStart) group_start = nullptr;
  decltype(&::ncclGroupEnd) group_end = nullptr;
};

NcclApi g_api;  // written once by g_library's load, read-only afterwards
LoadOnce g_library;

absl::StatusOr<std::string> DoLoad() {
  CMAX_ASSIGN_OR_RETURN(LoadedLibrary lib, LoadCudaLibrary("NCCL 2", {"libnccl.so.2"}));
  const std::string hint = "NCCL older than 2.14: update NCCL";
  NcclApi api;
#define CMAX_NCCL_RESOLVE(field, name) \
  CMAX_RETURN_IF_ERROR(ResolveSymbol(lib, #name, hint, &api.field));
  CMAX_NCCL_RESOLVE(get_version, ncclGetVersion)
  CMAX_NCCL_RESOLVE(get_unique_id, ncclGetUniqueId)
  CMAX_NCCL_RESOLVE(comm_init_rank_config, ncclCommInitRankConfig)
  CMAX_NCCL_RESOLVE(comm_destroy, ncclCommDestroy)
  CMAX_NCCL_RESOLVE(comm_abort, ncclCommAbort)
  CMAX_NCCL_RESOLVE(comm_get_async_error, ncclCommGetAsyncError)
  CMAX_NCCL_RESOLVE(get_error_string, ncclGetErrorString)
  CMAX_NCCL_RESOLVE(all_reduce, ncclAllReduce)
  CMAX_NCCL_RESOLVE(all_gather, ncclAllGather)
  CMAX_NCCL_RESOLVE(reduce_scatter, ncclReduceScatter)
  CMAX_NCCL_RESOLVE(broadcast, ncclBroadcast)
  CMAX_NCCL_RESOLVE(send, ncclSend)
  CMAX_NCCL_RESOLVE(recv, ncclRecv)
  CMAX_NCCL_RESOLVE(group_start, ncclGroupStart)
  CMAX_NCCL_RESOLVE(group_end, ncclGroupEnd)
#undef CMAX_NCCL_RESOLVE
  g_api = api;
  return lib.path;
}

const NcclApi& NcclFns() { return g_api; }

}  // namespace

absl::Status LoadNccl() { return g_library.Load(DoLoad); }

std::string NcclPath() { return g_library.path(); }

}  // namespace cmax::bench

using cmax::bench::NcclFns;
#define CMAX_NCCL_FORWARD(field, args) \
  {                                    \
    auto f = NcclFns().field;          \
    return f ? f args : ncclSystemError; \
  }

extern "C" {

ncclResult_t ncclGetVersion(int* version) CMAX_NCCL_FORWARD(get_version, (version))
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) CMAX_NCCL_FORWARD(get_unique_id, (id))
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config)
    CMAX_NCCL_FORWARD(comm_init_rank_config, (comm, nranks, id, rank, config))
ncclResult_t ncclCommDestroy(ncclComm_t comm) CMAX_NCCL_FORWARD(comm_destroy, (comm))
ncclResult_t ncclCommAbort(ncclComm_t comm) CMAX_NCCL_FORWARD(comm_abort, (comm))
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async)
    CMAX_NCCL_FORWARD(comm_get_async_error, (comm, async))

const char* ncclGetErrorString(ncclResult_t r) {
  if (auto f = NcclFns().get_error_string) return f(r);
  return "NCCL is not loaded";
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
    CMAX_NCCL_FORWARD(all_reduce, (send, recv, count, type, op, comm, stream))
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream)
    CMAX_NCCL_FORWARD(all_gather, (send, recv, count, type, comm, stream))
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
    CMAX_NCCL_FORWARD(reduce_scatter, (send, recv, count, type, op, comm, stream))
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream)
    CMAX_NCCL_FORWARD(broadcast, (send, recv, count, type, root, comm, stream))
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream)
    CMAX_NCCL_FORWARD(send, (send, count, type, peer, comm, stream))
ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream)
    CMAX_NCCL_FORWARD(recv, (recv, count, type, peer, comm, stream))
ncclResult_t ncclGroupStart() CMAX_NCCL_FORWARD(group_start, ())
ncclResult_t ncclGroupEnd() CMAX_NCCL_FORWARD(group_end, ())

}  // extern "C"
