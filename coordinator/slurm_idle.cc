#include "coordinator/slurm_idle.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "common/subprocess.h"
#include "coordinator/registry.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("slurm"); }

constexpr auto kTimeout = std::chrono::seconds(20);
constexpr size_t kMaxOutput = 16 << 20;  // a line a node and partition

std::string FirstLine(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  if (line.size() > 200) line.resize(200);
  return line;
}

}  // namespace

bool IsSlurmIdle(const std::string& state) { return state == "idle"; }

SlurmNodeStates ParseSinfo(const std::string& out) {
  SlurmNodeStates s;
  s.measured = true;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipWhitespace())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() != 2 || !IsValidNodeName(f[0]) || f[1].size() > 64) continue;
    auto [it, inserted] = s.states.emplace(f[0], f[1]);
    // Several partitions: idle only when every line says idle.
    if (!inserted && IsSlurmIdle(it->second) && !IsSlurmIdle(f[1])) it->second = f[1];
  }
  return s;
}

SlurmNodeStates QuerySinfo(const std::string& sinfo) {
  SlurmNodeStates s;
  auto r = RunCommand({sinfo, "-h", "-N", "-o", "%N %T"}, kTimeout, kMaxOutput);
  if (!r.ok()) {
    s.reason = absl::IsNotFound(r.status())
                   ? absl::StrCat("not measured: ", sinfo, " not found")
                   : absl::StrCat("not measured: ", sinfo, " could not start: ",
                                  r.status().message());
    return s;
  }
  if (r->timed_out) {
    s.reason = absl::StrCat("not measured: ", sinfo, " did not answer within ",
                            std::chrono::seconds(kTimeout).count(), " s");
    return s;
  }
  if (!r->exit.exited || r->exit.code != 0) {
    s.reason = absl::StrCat("not measured: ", sinfo, " failed (", r->exit.Describe(), "): ",
                            FirstLine(r->err.empty() ? r->out : r->err));
    return s;
  }
  return ParseSinfo(r->out);
}

SlurmIdleProbe::~SlurmIdleProbe() { Stop(); }

void SlurmIdleProbe::Ask(std::function<void(SlurmNodeStates)> done) {
  absl::MutexLock lock(&mu_);
  if (stop_) return;
  asks_.push_back(std::move(done));
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void SlurmIdleProbe::Loop() {
  for (;;) {
    std::function<void(SlurmNodeStates)> done;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_ || !asks_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      done = std::move(asks_.front());
      asks_.pop_front();
    }
    // Ask by name each time: Slurm installed (or removed) later is seen.
    SlurmNodeStates answer = QuerySinfo(sinfo_);
    if (!answer.measured) Log()->warn("schedules: {}", answer.reason);
    done(std::move(answer));
  }
}

void SlurmIdleProbe::Stop() {
  std::thread t;
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    asks_.clear();
    t.swap(thread_);
  }
  if (t.joinable()) t.join();
}

}  // namespace cmax::coordinator
