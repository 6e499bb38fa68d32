// The rank side of a group task's rendezvous (see coordinator/rendezvous.h).
// Suites link this; it speaks to the rank's agent, which relays to the
// coordinator. No gRPC here.
//
// Wire format to the agent: one JSON line per request, a cmax.v1.
// RendezvousRequest with op, key, value, timeout_ms and rank (the agent fills
// request_id and group); one JSON line per reply, a cmax.v1.RendezvousReply.
// Over TCP (mpirun launcher, ranks on other nodes) the first line is the
// task's secret: {"secret": "..."}.
//
// Environment (set by the agent for every rank):
//   CMAX_RENDEZVOUS          unix:/path/to/socket or tcp://host:port
//   CMAX_RENDEZVOUS_SECRET   tcp only
//   CMAX_GROUP, CMAX_RANK, CMAX_WORLD_SIZE, CMAX_LOCAL_RANK, CMAX_LOCAL_WORLD_SIZE
// Under mpirun the place comes from Open MPI (OMPI_COMM_WORLD_RANK, _SIZE,
// _LOCAL_RANK, _LOCAL_SIZE) or Slurm (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID) when the CMAX_ variables are absent.
//
// A request may carry the client's own request_id; the agent echoes it in
// the reply (it replaces it with an agent-unique id on the way up). A reply
// with request_id 0 is about the connection (bad secret, oversized line).
// Errors map to codes: DEADLINE_EXCEEDED (timed out), FAILED_PRECONDITION
// (unknown or ended group, rank not launched here), INVALID_ARGUMENT (limits,
// malformed request), UNAVAILABLE (agent or coordinator unreachable).
//
// Thread-compatible: one request at a time per client.
#ifndef CMAX_COMMON_RENDEZVOUS_CLIENT_H_
#define CMAX_COMMON_RENDEZVOUS_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cmax {

struct GroupPlace {
  std::string group;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
};

class RendezvousClient {
 public:
  // FAILED_PRECONDITION when the process is not a rank of a group task
  // (no CMAX_RENDEZVOUS); UNAVAILABLE when the agent cannot be reached.
  static absl::StatusOr<std::unique_ptr<RendezvousClient>> FromEnvironment();
  static absl::StatusOr<std::unique_ptr<RendezvousClient>> Connect(const std::string& address,
                                                                   const GroupPlace& place,
                                                                   const std::string& secret);
  ~RendezvousClient();

  const GroupPlace& place() const { return place_; }
  int rank() const { return place_.rank; }
  int world_size() const { return place_.world_size; }

  // Errors carry the coordinator's reason (oversized value, unknown group...).
  absl::Status Set(const std::string& key, const std::string& value);
  // Waits until the key exists, up to `timeout`: DEADLINE_EXCEEDED then.
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration timeout);
  // Waits until every rank arrived. Returns the instant the group should
  // start, in this host's clock (unix ns): sleep until then to start together.
  absl::StatusOr<int64_t> Barrier(const std::string& name, absl::Duration timeout);

 private:
  RendezvousClient(int fd, GroupPlace place) : fd_(fd), place_(std::move(place)) {}
  absl::StatusOr<std::string> Call(const std::string& op, const std::string& key,
                                   const std::string& value, absl::Duration timeout);
  int fd_;
  GroupPlace place_;
  std::string buffer_;
  uint64_t next_id_ = 0;
};

}  // namespace cmax

#endif  // CMAX_COMMON_RENDEZVOUS_CLIENT_H_
