// The Open MPI backend of the host collective suite, for sites that launch
// through mpirun (or Slurm with PMIx). Built as its own library
// (cmax_collective_mpi) so nothing else links MPI; cmax-bench-cuda never
// does. Runs only under a launcher: a process without one of Open MPI's or
// PMIx's rank variables is refused (FAILED_PRECONDITION), never silently run
// as a group of one.
#ifndef CMAX_BENCHMARKS_COLLECTIVE_MPI_BACKEND_H_
#define CMAX_BENCHMARKS_COLLECTIVE_MPI_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "benchmarks/collective_common/backend.h"

namespace cmax::collective {

// Calls MPI_Init; the backend calls MPI_Finalize when destroyed.
absl::StatusOr<std::unique_ptr<Backend>> CreateMpiBackend();

}  // namespace cmax::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_MPI_BACKEND_H_
