// The gloo backend of the host collective suite: Debian's libgloo, TCP
// transport, its store backed by the group's rendezvous (RendezvousStore).
// all_reduce, all_gather, alltoall and broadcast are gloo's own collectives;
// reduce_scatter (gloo only has an in-place halving-doubling variant with
// its own output layout) and sendrecv are rings of gloo point-to-point
// transfers written here, moving the same bytes nccl-tests' definitions
// assume ((n-1)/n of the data per rank for reduce_scatter).
#ifndef CMAX_BENCHMARKS_COLLECTIVE_GLOO_BACKEND_H_
#define CMAX_BENCHMARKS_COLLECTIVE_GLOO_BACKEND_H_

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "benchmarks/collective_common/backend.h"

namespace cmax::collective {

struct GlooConfig {
  // Network interface to listen on (GLOO_SOCKET_IFNAME), else the address or
  // host name `address`, else this host's name.
  std::string iface;
  std::string address;
  std::chrono::milliseconds timeout{300000};
};

// Joins the group: the rendezvous from the environment (CMAX_RENDEZVOUS,
// CMAX_RANK, CMAX_WORLD_SIZE), or a group of one when the process is not a
// rank of a group task. UNAVAILABLE when a peer cannot be reached,
// FAILED_PRECONDITION for a bad configuration.
absl::StatusOr<std::unique_ptr<Backend>> CreateGlooBackend(const GlooConfig& config);

}  // namespace cmax::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_GLOO_BACKEND_H_
