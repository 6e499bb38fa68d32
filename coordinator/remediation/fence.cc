#include "coordinator/remediation/fence.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "coordinator/remediation/fence_internal.h"

namespace cmax::remediation {
namespace {

using internal::CheckNodeName;
using internal::RunFenceCommand;

constexpr size_t kMaxOutput = 64 << 10;
constexpr size_t kErrTail = 512;

std::shared_ptr<spdlog::logger> Log() { return GetLogger("fence"); }

// The value of " Key=" in a `scontrol show node -o` line, up to the next space.
std::string SlurmField(const std::string& line, const std::string& key) {
  const std::string tag = absl::StrCat(" ", key, "=");
  const size_t at = line.find(tag);
  if (at == std::string::npos) return "";
  const size_t begin = at + tag.size();
  return line.substr(begin, line.find(' ', begin) - begin);
}

// Reason= runs to the end of its "[user@time]" stamp (it holds spaces); the
// stamp is dropped. Without a stamp it ends before the next " Key=".
std::string SlurmReasonField(const std::string& line) {
  const size_t at = line.find(" Reason=");
  if (at == std::string::npos) return "";
  const std::string rest(
      absl::StripTrailingAsciiWhitespace(absl::string_view(line).substr(at + 8)));
  const size_t stamp = rest.find(" [");
  if (stamp != std::string::npos && rest.find(']', stamp) != std::string::npos) {
    return rest.substr(0, stamp);
  }
  for (size_t i = rest.find(' '); i != std::string::npos; i = rest.find(' ', i + 1)) {
    const size_t eq = rest.find('=', i);
    const size_t sp = rest.find(' ', i + 1);
    if (eq != std::string::npos && (sp == std::string::npos || eq < sp) &&
        i + 1 < rest.size() &&
        absl::ascii_isupper(static_cast<unsigned char>(rest[i + 1]))) {
      return rest.substr(0, i);
    }
  }
  return rest == "(null)" || rest == "None" ? "" : rest;
}

// DRAIN, DOWN or FAIL among State='s '+'-joined words ("IDLE+DRAIN", "DOWN*").
bool SlurmStateFenced(const std::string& state) {
  for (absl::string_view word : absl::StrSplit(state, '+')) {
    while (!word.empty() &&
           !absl::ascii_isalpha(static_cast<unsigned char>(word.back()))) {
      word.remove_suffix(1);
    }
    if (word == "DRAIN" || word == "DRAINED" || word == "DRAINING" || word == "DOWN" ||
        word == "FAIL" || word == "FAILING") {
      return true;
    }
  }
  return false;
}

FenceState SlurmStateOf(const std::string& line) {
  const std::string state = SlurmField(line, "State");
  const std::string reason = SlurmReasonField(line);
  FenceState fs;
  fs.detail = reason.empty() ? absl::StrCat("State=", state)
                             : absl::StrCat("State=", state, " Reason=", reason);
  if (!SlurmStateFenced(state)) return fs;
  fs.holder = absl::StartsWith(reason, kSlurmReasonMarker) ? FenceHolder::kCmax
                                                           : FenceHolder::kOperator;
  fs.detail = reason.empty() ? absl::StrCat("State=", state) : reason;
  return fs;
}

}  // namespace

namespace internal {
namespace {

std::string Tail(const std::string& s) {
  std::string t(absl::StripAsciiWhitespace(s));
  return t.size() <= kErrTail ? t : absl::StrCat("...", t.substr(t.size() - kErrTail));
}

}  // namespace

// Runs argv; its stdout when it exits 0. Errors name the command and the
// tail of its stderr (or stdout, when stderr is empty).
absl::StatusOr<std::string> RunFenceCommand(const std::vector<std::string>& argv,
                                            std::chrono::milliseconds timeout,
                                            size_t max_output) {
  const std::string cmd = absl::StrJoin(argv, " ");
  auto r = RunCommand(argv, timeout, max_output);
  if (!r.ok()) {
    return absl::UnavailableError(
        absl::StrCat(cmd, ": cannot run: ", r.status().message()));
  }
  if (r->timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(cmd, ": no answer in ", timeout.count(), " ms: ", Tail(r->err)));
  }
  if (!r->exit.exited || r->exit.code != 0) {
    const std::string why = Tail(r->err.empty() ? r->out : r->err);
    const bool missing =
        absl::StrContains(why, "not found") || absl::StrContains(why, "NotFound");
    const std::string msg = absl::StrCat(cmd, ": ", r->exit.Describe(), ": ", why);
    return missing ? absl::NotFoundError(msg) : absl::UnavailableError(msg);
  }
  return std::move(r->out);
}

absl::Status CheckNodeName(const std::string& node) {
  if (IsFenceableNodeName(node)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("'", absl::CHexEscape(absl::string_view(node).substr(0, 80)),
                   "' is not a node name to fence"));
}

}  // namespace internal

std::string FenceState::Describe() const {
  switch (holder) {
    case FenceHolder::kCmax:
      return absl::StrCat("fenced by cmax: ", detail);
    case FenceHolder::kOperator:
      return absl::StrCat("held by operator: ", detail);
    case FenceHolder::kNone:
      break;
  }
  return detail.empty() ? "not fenced" : absl::StrCat("not fenced: ", detail);
}

std::string SanitizeSlurmReason(std::string_view text) {
  std::string out;
  for (char c : text) {
    const bool plain = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == ' ' ||
                       c == ':' || c == '.' || c == '_' || c == '/' || c == '+' ||
                       c == '-';
    if (plain) out += c;
    if (out.size() >= 100) break;
  }
  return out;
}

bool IsFenceableNodeName(std::string_view node) {
  if (node.empty() || node.size() > 253) return false;
  if (!absl::ascii_isalnum(static_cast<unsigned char>(node.front()))) return false;
  for (char c : node) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
          c == '-')) {
      return false;
    }
  }
  return true;
}

bool IsHeldByOperator(const absl::Status& status) {
  return status.code() == absl::StatusCode::kAlreadyExists &&
         absl::StartsWith(status.message(), "held by operator");
}

// --- Slurm ---

SlurmFencer::SlurmFencer(std::string scontrol, std::chrono::milliseconds timeout)
    : scontrol_(std::move(scontrol)), timeout_(timeout) {}

absl::StatusOr<std::string> SlurmFencer::Scontrol(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {scontrol_};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunFenceCommand(argv, timeout_, kMaxOutput);
}

absl::StatusOr<FenceState> SlurmFencer::Inspect(const std::string& node) {
  CMAX_RETURN_IF_ERROR(CheckNodeName(node));
  CMAX_ASSIGN_OR_RETURN(std::string out, Scontrol({"show", "node", node, "-o"}));
  const std::string line = out.substr(0, out.find('\n'));
  if (!absl::StartsWith(line, absl::StrCat("NodeName=", node, " "))) {
    return absl::NotFoundError(absl::StrCat("scontrol show node ", node,
                                            " -o: not that node: ", line.substr(0, 200)));
  }
  return SlurmStateOf(line);
}

absl::Status SlurmFencer::Fence(const std::string& node, const std::string& reason) {
  CMAX_ASSIGN_OR_RETURN(FenceState state, Inspect(node));
  if (state.holder == FenceHolder::kCmax) return absl::OkStatus();
  if (state.holder == FenceHolder::kOperator) {
    return absl::AlreadyExistsError(absl::StrCat("held by operator: ", state.detail));
  }
  const std::string why = SanitizeSlurmReason(absl::StrCat(kSlurmReasonMarker, reason));
  CMAX_RETURN_IF_ERROR(Scontrol({"update", absl::StrCat("NodeName=", node), "State=DRAIN",
                                 absl::StrCat("Reason=", why)})
                           .status());
  Log()->warn("drained {} in Slurm: {}", node, why);
  return absl::OkStatus();
}

absl::Status SlurmFencer::Lift(const std::string& node) {
  CMAX_ASSIGN_OR_RETURN(FenceState state, Inspect(node));
  if (state.holder == FenceHolder::kNone) return absl::OkStatus();
  if (state.holder == FenceHolder::kOperator) {
    return absl::FailedPreconditionError(
        absl::StrCat("drained by someone else: ", state.detail));
  }
  CMAX_RETURN_IF_ERROR(
      Scontrol({"update", absl::StrCat("NodeName=", node), "State=RESUME"}).status());
  Log()->info("resumed {} in Slurm (was: {})", node, state.detail);
  return absl::OkStatus();
}

// --- None ---

absl::StatusOr<FenceState> NoFencer::Inspect(const std::string& node) {
  CMAX_RETURN_IF_ERROR(CheckNodeName(node));
  return FenceState{FenceHolder::kNone, "fence is none"};
}

absl::Status NoFencer::Fence(const std::string& node, const std::string& reason) {
  CMAX_RETURN_IF_ERROR(CheckNodeName(node));
  Log()->info("{} not fenced: fence is none ({})", node, reason);
  return absl::OkStatus();
}

absl::Status NoFencer::Lift(const std::string& node) { return CheckNodeName(node); }

std::unique_ptr<Fencer> MakeFencer(const Policy& policy, const std::string& scontrol,
                                   const std::string& kubectl) {
  switch (policy.fence) {
    case FenceKind::kSlurm:
      return std::make_unique<SlurmFencer>(scontrol);
    case FenceKind::kKubernetes:
      return std::make_unique<KubeFencer>(kubectl, policy.kubeconfig, policy.taint);
    case FenceKind::kNone:
      break;
  }
  return std::make_unique<NoFencer>();
}

}  // namespace cmax::remediation
