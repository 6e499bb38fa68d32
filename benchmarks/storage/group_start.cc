// The storage suite as a rank of a group task: joining the rendezvous and
// publishing this rank's node name (JoinGroup), and the common start of a
// pattern's measured run at the instant its barrier storage/<pattern>
// returns (SyncStart).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "benchmarks/storage/storage_run.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace cmax::storage {
namespace {

// Sleeps until `target` (unix ns, this host's clock) in steps of at most
// 100 ms so an interrupt is noticed; returns early when one arrives.
void SleepUntilUnixNs(int64_t target) {
  for (;;) {
    int64_t left = target - NowUnixNs();
    if (left <= 0 || InterruptSignal()) return;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 100000000)));
  }
}

}  // namespace

absl::Status StorageRun::JoinGroup() {
  const char* address = std::getenv("CMAX_RENDEZVOUS");
  if (address == nullptr || *address == '\0') {
    return absl::FailedPreconditionError("not a rank of a group task");
  }
  auto client = RendezvousClient::FromEnvironment();
  if (!client.ok()) return client.status();
  rv_ = std::move(*client);
  // The slowest node's layout sets when the others may start: allow it at
  // 10 MB/s, within the rendezvous' limit of 10 minutes per request.
  barrier_timeout_s_ = std::min<int64_t>(600, 120 + BytesNeeded() / 10000000);
  CMAX_RETURN_IF_ERROR(rv_->Set(absl::StrCat("storage/node/", rv_->rank()), cfg_.node));
  out_->Log("info", absl::StrCat("rank ", rv_->rank(), " of ", rv_->world_size(), " in group ",
                                 rv_->place().group, ": every pattern starts at its barrier"));
  return absl::OkStatus();
}

absl::Status StorageRun::SyncStart(const std::string& pattern) {
  times_.ready = NowUnixNs();
  if (!rv_) {
    times_.target = times_.start = times_.ready;
    return absl::OkStatus();
  }
  times_.synced = true;
  auto start = rv_->Barrier(absl::StrCat("storage/", pattern), absl::Seconds(barrier_timeout_s_));
  if (!start.ok()) return start.status();
  times_.target = *start;
  SleepUntilUnixNs(*start);
  times_.start = NowUnixNs();
  return absl::OkStatus();
}


}  // namespace cmax::storage
