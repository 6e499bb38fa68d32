// The web view's data from the coordinator's core: each answer is a
// snapshot the core thread makes (CoordinatorCore::Snapshot*: Post and
// wait), waiting at most the timeout given; history comes from the history
// threads instead (SnapshotHistory), and a request that gives up leaves
// its query. Remediation incidents are the core's GetRemediation answer.
#include "coordinator/await_on_core.h"
#include "coordinator/core.h"
#include "coordinator/web/web_server.h"

namespace cmax::coordinator::web {
namespace {

class CoreWebSource : public WebSource {
 public:
  CoreWebSource(CoordinatorCore* core, absl::Duration timeout)
      : core_(core), timeout_(timeout) {}
  absl::StatusOr<v1::ListAgentsResponse> Agents() override {
    return core_->SnapshotAgents(timeout_);
  }
  absl::StatusOr<v1::ListRunsResponse> Runs(int limit) override {
    return core_->SnapshotRuns(limit, timeout_);
  }
  absl::StatusOr<v1::GetRunResponse> Run(const std::string& run_id) override {
    return core_->SnapshotRun(run_id, timeout_);
  }
  absl::StatusOr<v1::GetHistoryResponse> History(const std::string& node) override {
    return core_->SnapshotHistory(node, timeout_);
  }
  absl::StatusOr<v1::RemediationStatus> Remediation(const std::string& node) override {
    CoordinatorCore* core = core_;
    return AwaitOnCore<v1::RemediationStatus>(
        core_,
        [core, node]() -> absl::StatusOr<v1::RemediationStatus> {
          v1::GetRemediationRequest request;
          request.set_node(node);
          request.set_include_closed(true);
          return core->HandleGetRemediation(request);
        },
        timeout_);
  }

 private:
  CoordinatorCore* core_;
  absl::Duration timeout_;
};

}  // namespace

std::unique_ptr<WebSource> MakeCoreWebSource(CoordinatorCore* core,
                                             absl::Duration timeout) {
  return std::make_unique<CoreWebSource>(core, timeout);
}

}  // namespace cmax::coordinator::web
