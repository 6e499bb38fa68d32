#include "coordinator/slurm_drain.h"

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/subprocess.h"
#include "coordinator/registry.h"
#include "coordinator/remediation/fence.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("slurm"); }

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

std::string SlurmReason(const std::string& run_id, const std::string& reason) {
  return remediation::SanitizeSlurmReason(absl::StrCat("cmax ", run_id, ": ", reason));
}

SlurmDrainer::~SlurmDrainer() { Stop(); }

void SlurmDrainer::Drain(const std::string& run_id,
                         std::vector<std::pair<std::string, std::string>> failed_nodes) {
  if (failed_nodes.empty()) return;
  absl::MutexLock lock(&mu_);
  threads_.emplace_back([this, run_id, nodes = std::move(failed_nodes)] {
    for (const auto& [node, reason] : nodes) DrainOne(run_id, node, reason);
  });
}

void SlurmDrainer::DrainOne(const std::string& run_id, const std::string& node,
                            const std::string& reason) {
  if (!IsValidNodeName(node)) {
    Log()->warn("run {}: not draining '{}': not a node name Slurm could have", run_id, node);
    return;
  }
  constexpr auto kTimeout = std::chrono::seconds(20);
  auto shown = RunCommand({scontrol_, "show", "node", node, "-o"}, kTimeout, 64 << 10);
  if (!shown.ok() || !shown->exit.exited || shown->exit.code != 0 ||
      !absl::StartsWith(shown->out, "NodeName=")) {
    Log()->warn("run {}: not draining {}: Slurm does not know it ({})", run_id, node,
                shown.ok() ? FirstLine(shown->err.empty() ? shown->out : shown->err)
                           : std::string(shown.status().message()));
    return;
  }
  const size_t state = shown->out.find(" State=");
  if (state != std::string::npos &&
      shown->out.substr(state, shown->out.find(' ', state + 1) - state).find("DRAIN") !=
          std::string::npos) {
    Log()->info("run {}: {} is drained already: left as it is", run_id, node);
    return;
  }
  const std::string why = SlurmReason(run_id, reason);
  auto r = RunCommand({scontrol_, "update", absl::StrCat("NodeName=", node), "State=DRAIN",
                       absl::StrCat("Reason=", why)},
                      kTimeout, 64 << 10);
  if (!r.ok() || !r->exit.exited || r->exit.code != 0) {
    Log()->error("run {}: scontrol update NodeName={} State=DRAIN failed: {}", run_id, node,
                 r.ok() ? FirstLine(r->err) : std::string(r.status().message()));
    return;
  }
  Log()->warn("run {}: drained {} in Slurm: {}", run_id, node, why);
}

void SlurmDrainer::Stop() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
}

}  // namespace cmax::coordinator
