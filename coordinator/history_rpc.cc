#include "coordinator/history_rpc.h"

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/service.h"

namespace cmax::coordinator {
namespace {

class HistoryReactor final : public grpc::ServerUnaryReactor {
 public:
  HistoryReactor(CoordinatorCore* core, v1::GetHistoryResponse* response)
      : core_(core), state_(std::make_shared<State>()) {
    state_->reactor = this;
    state_->response = response;
  }

  void Begin(const v1::GetHistoryRequest& request) {
    // Only `state` is touched after QueryHistory: an answer may finish the
    // call (and OnDone delete this) before it returns.
    std::shared_ptr<State> state = state_;
    const uint64_t ticket = core_->QueryHistory(
        request, [state](absl::StatusOr<v1::GetHistoryResponse> r) { Answer(*state, std::move(r)); });
    bool abandon = false;
    {
      absl::MutexLock lock(&state->mu);
      state->ticket = ticket;
      abandon = ticket != 0 && state->cancelled;
    }
    if (abandon && core_->AbandonHistory(ticket)) {
      Answer(*state, absl::CancelledError("the call was cancelled"));
    }
  }

  void OnCancel() override {
    uint64_t ticket = 0;
    {
      absl::MutexLock lock(&state_->mu);
      state_->cancelled = true;
      ticket = state_->ticket;
    }
    if (ticket != 0 && core_->AbandonHistory(ticket)) {
      Answer(*state_, absl::CancelledError("the call was cancelled"));
    }
  }

  void OnDone() override { delete this; }

 private:
  struct State {
    absl::Mutex mu;
    HistoryReactor* reactor = nullptr;          // valid until finished
    v1::GetHistoryResponse* response = nullptr;  // the call's
    uint64_t ticket ABSL_GUARDED_BY(mu) = 0;
    bool cancelled ABSL_GUARDED_BY(mu) = false;
    bool finished ABSL_GUARDED_BY(mu) = false;
  };

  // Finishes the call once; later answers are ignored.
  static void Answer(State& state, absl::StatusOr<v1::GetHistoryResponse> result) {
    {
      absl::MutexLock lock(&state.mu);
      if (state.finished) return;
      state.finished = true;
    }
    if (!result.ok()) {
      state.reactor->Finish(ToGrpc(result.status()));
      return;
    }
    *state.response = std::move(*result);
    state.reactor->Finish(grpc::Status::OK);
  }

  CoordinatorCore* core_;
  std::shared_ptr<State> state_;
};

}  // namespace

grpc::ServerUnaryReactor* NewHistoryReactor(CoordinatorCore* core,
                                            const v1::GetHistoryRequest& request,
                                            v1::GetHistoryResponse* response) {
  auto* reactor = new HistoryReactor(core, response);
  reactor->Begin(request);
  return reactor;
}

}  // namespace cmax::coordinator
