#include "agent/remediation_actions.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/subprocess.h"
#include "common/systemd_unit.h"

namespace cmax::agent {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("remediation"); }

constexpr size_t kMaxIncidentId = 64;
constexpr size_t kStderrTail = 2048;
constexpr size_t kJournalCap = 256 * 1024;
constexpr char kSince[] = "-15min";

// systemd's unit types: any of them may be restarted if listed.
constexpr absl::string_view kUnitTypes[] = {"service",   "socket", "device", "mount",
                                            "automount", "swap",   "target", "path",
                                            "timer",     "slice",  "scope"};

// `text` with every byte that is not part of valid UTF-8 replaced by '?'
// (proto3 string fields must hold valid UTF-8; stderr may not be).
std::string ValidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (ok && len > 1) {
      uint32_t cp = c & (0xFF >> (len + 1));
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (text[i + k] & 0x3F);
      static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok) {
      out.append(text.data() + i, len);
      i += len;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

// The last `max` bytes of `text`, as valid UTF-8.
std::string Tail(absl::string_view text, size_t max) {
  if (text.size() > max) {
    text.remove_prefix(text.size() - max);
    // Skip continuation bytes cut from their lead byte.
    while (!text.empty() && (static_cast<unsigned char>(text[0]) & 0xC0) == 0x80) {
      text.remove_prefix(1);
    }
  }
  return ValidUtf8(text);
}

// How the argv reads to a person: arguments with spaces or quotes quoted.
std::string CommandLine(const std::vector<std::string>& argv) {
  std::vector<std::string> parts;
  for (const auto& a : argv) {
    if (a.empty() || a.find_first_of(" \t\"'\\") != std::string::npos) {
      parts.push_back(absl::StrCat("\"", a, "\""));
    } else {
      parts.push_back(a);
    }
  }
  return ValidUtf8(absl::StrJoin(parts, " "));
}

// "CMD: exit 0", "CMD: timed out after 60 s (signal 15 (SIGTERM))",
// "CMD: not started (not found: systemctl)".
std::string Outcome(const std::vector<std::string>& argv,
                    const absl::StatusOr<CommandResult>& run,
                    std::chrono::milliseconds timeout) {
  std::string line = CommandLine(argv);
  if (!run.ok())
    return absl::StrCat(line, ": not started (", run.status().message(), ")");
  if (run->timed_out) {
    std::string limit = timeout.count() % 1000 == 0
                            ? absl::StrCat(timeout.count() / 1000, " s")
                            : absl::StrCat(timeout.count(), " ms");
    return absl::StrCat(line, ": timed out after ", limit, " (", run->exit.Describe(),
                        ")");
  }
  return absl::StrCat(line, ": ", run->exit.Describe());
}

bool Succeeded(const absl::StatusOr<CommandResult>& run) {
  return run.ok() && !run->timed_out && run->exit.exited && run->exit.code == 0;
}

std::chrono::milliseconds Remaining(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1000));
}

}  // namespace

absl::Status ValidateUnitName(absl::string_view name) {
  return CheckSystemdUnitName(name, kUnitTypes);
}

absl::Status ValidateIncidentId(absl::string_view id) {
  if (id.empty() || id.size() > kMaxIncidentId) {
    return absl::InvalidArgumentError(
        absl::StrCat("incident id must be 1 to ", kMaxIncidentId, " characters"));
  }
  for (char c : id) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' &&
        c != ':' && c != '.') {
      return absl::InvalidArgumentError(
          "incident id may hold only letters, digits, '-', '_', ':' and '.'");
    }
  }
  if (id == "." || id == "..")
    return absl::InvalidArgumentError("incident id is . or ..");
  return absl::OkStatus();
}

RemediationRunner::RemediationRunner(Options options, Outbox* outbox)
    : options_(std::move(options)), outbox_(outbox) {
  worker_ = std::thread([this] { WorkerLoop(); });
}

RemediationRunner::~RemediationRunner() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    queue_.clear();
  }
  worker_.join();
}

absl::Status RemediationRunner::CheckOptions(const Options& options) {
  for (const auto& unit : options.allowed_units) {
    absl::Status s = ValidateUnitName(unit);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--remediation-units: ", s.message()));
    }
  }
  if (options.gpu_count < 0) return absl::InvalidArgumentError("gpu_count < 0");
  if (options.work_dir.empty())
    return absl::InvalidArgumentError("remediation needs a work dir");
  return absl::OkStatus();
}

bool RemediationRunner::WorkReady() const { return stopping_ || !queue_.empty(); }

bool RemediationRunner::Busy() const { return options_.busy && options_.busy(); }

absl::Status RemediationRunner::Validate(const v1::RemediationAction& action) const {
  absl::Status id = ValidateIncidentId(action.incident_id());
  if (!id.ok()) return id;
  switch (action.kind()) {
    case v1::REMEDIATION_COLLECT:
      return absl::OkStatus();
    case v1::REMEDIATION_RESTART_UNIT: {
      absl::Status unit = ValidateUnitName(action.unit());
      if (!unit.ok()) return unit;
      if (std::find(options_.allowed_units.begin(), options_.allowed_units.end(),
                    action.unit()) == options_.allowed_units.end()) {
        return absl::PermissionDeniedError(
            absl::StrCat("unit ", action.unit(), " is not in --remediation-units"));
      }
      return absl::OkStatus();
    }
    case v1::REMEDIATION_RESET_GPU:
      if (action.gpu_index() < 0 || action.gpu_index() >= options_.gpu_count) {
        return absl::OutOfRangeError(absl::StrCat("GPU index ", action.gpu_index(),
                                                  " is not in [0, ", options_.gpu_count,
                                                  ") on this node"));
      }
      if (Busy()) {
        return absl::FailedPreconditionError(
            "a task is running on this node: no GPU reset");
      }
      return absl::OkStatus();
    case v1::REMEDIATION_REBOOT:
      if (Busy())
        return absl::FailedPreconditionError("a task is running on this node: no reboot");
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown remediation kind ", static_cast<int>(action.kind())));
  }
}

v1::RemediationResult RemediationRunner::Refused(const v1::RemediationAction& action,
                                                 const absl::Status& why) const {
  v1::RemediationResult result;
  // The id goes back as sent only when valid; otherwise it could be anything.
  if (ValidateIncidentId(action.incident_id()).ok())
    result.set_incident_id(action.incident_id());
  result.set_step(action.step());
  result.set_ok(false);
  result.set_message(ValidUtf8(absl::StrCat("refused: ", why.message())));
  int64_t now = options_.clock.NowNs();
  result.set_started_unix_ns(now);
  result.set_ended_unix_ns(now);
  return result;
}

void RemediationRunner::Post(uint64_t generation, v1::RemediationAction action) {
  {
    absl::MutexLock lock(&mu_);
    generation_ = std::max(generation_, generation);
  }
  absl::Status valid = Validate(action);
  if (valid.ok()) {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      valid = absl::UnavailableError("the agent is stopping");
    } else if (queue_.size() >= options_.max_queued) {
      valid = absl::ResourceExhaustedError(
          absl::StrCat(queue_.size(), " remediation steps already queued"));
    } else {
      Log()->info("incident {} step {}: queued {}", action.incident_id(), action.step(),
                  v1::RemediationActionKind_Name(action.kind()));
      queue_.push_back(Job{std::move(action)});
      return;
    }
  }
  // Only checked values are logged (never the action's free-text reason).
  Log()->warn(
      "incident {} step {}: refused: {}",
      ValidateIncidentId(action.incident_id()).ok() ? action.incident_id() : "(invalid)",
      action.step(), std::string(valid.message()));
  Deliver(Refused(action, valid));
}

void RemediationRunner::OnConnected(uint64_t generation) {
  absl::MutexLock lock(&mu_);
  generation_ = std::max(generation_, generation);
  size_t sent = 0;
  while (!unsent_.empty()) {
    v1::AgentMessage message;
    *message.mutable_remediation() = unsent_.front();
    if (!outbox_->Send(generation_, std::move(message))) break;
    unsent_.pop_front();
    ++sent;
  }
  if (sent > 0) Log()->info("resent {} remediation result(s)", sent);
}

void RemediationRunner::Deliver(v1::RemediationResult result) {
  absl::MutexLock lock(&mu_);
  // Older results first, so the coordinator sees the steps in order.
  while (!unsent_.empty()) {
    v1::AgentMessage message;
    *message.mutable_remediation() = unsent_.front();
    if (!outbox_->Send(generation_, std::move(message))) break;
    unsent_.pop_front();
  }
  if (unsent_.empty()) {
    v1::AgentMessage message;
    *message.mutable_remediation() = result;
    if (outbox_->Send(generation_, std::move(message))) return;
  }
  if (unsent_.size() >= options_.max_unsent) {
    Log()->warn(
        "dropping the unsent result of incident {} step {}: {} results kept already",
        unsent_.front().incident_id(), unsent_.front().step(), unsent_.size());
    unsent_.pop_front();
  }
  unsent_.push_back(std::move(result));
}

size_t RemediationRunner::UnsentCount() const {
  absl::MutexLock lock(&mu_);
  return unsent_.size();
}

size_t RemediationRunner::PendingCount() const {
  absl::MutexLock lock(&mu_);
  return queue_.size() + (running_ ? 1 : 0);
}

void RemediationRunner::WorkerLoop() {
  for (;;) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      running_ = false;
      mu_.Await(absl::Condition(this, &RemediationRunner::WorkReady));
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    // Checked again: a task may have started since Post.
    absl::Status valid = Validate(job.action);
    if (!valid.ok()) {
      Log()->warn("incident {} step {}: refused at start: {}", job.action.incident_id(),
                  job.action.step(), std::string(valid.message()));
      Deliver(Refused(job.action, valid));
      continue;
    }
    v1::RemediationResult result = Run(job.action);
    if (job.action.kind() == v1::REMEDIATION_REBOOT && result.ok())
      continue;  // sent already
    Deliver(std::move(result));
  }
}

v1::RemediationResult RemediationRunner::Run(const v1::RemediationAction& action) {
  v1::RemediationResult result;
  result.set_incident_id(action.incident_id());
  result.set_step(action.step());
  result.set_started_unix_ns(options_.clock.NowNs());
  switch (action.kind()) {
    case v1::REMEDIATION_RESTART_UNIT:
      RunRestart(action, &result);
      break;
    case v1::REMEDIATION_RESET_GPU:
      RunReset(action, &result);
      break;
    case v1::REMEDIATION_REBOOT:
      RunReboot(action, &result);
      break;
    case v1::REMEDIATION_COLLECT:
      RunCollect(action, &result);
      break;
    default:
      break;  // Validate refused it
  }
  if (result.ended_unix_ns() == 0) result.set_ended_unix_ns(options_.clock.NowNs());
  auto log = result.ok() ? spdlog::level::info : spdlog::level::warn;
  Log()->log(log, "incident {} step {}: {}", action.incident_id(), action.step(),
             result.message());
  return result;
}

void RemediationRunner::RunRestart(const v1::RemediationAction& action,
                                   v1::RemediationResult* result) {
  const std::vector<std::string> restart = {options_.systemctl, "restart", "--",
                                            action.unit()};
  auto run = RunCommand(restart, options_.restart_timeout, 64 * 1024);
  std::string message = Outcome(restart, run, options_.restart_timeout);
  if (run.ok()) result->set_stderr_tail(Tail(run->err, kStderrTail));
  if (!Succeeded(run)) {
    result->set_ok(false);
    result->set_message(message);
    return;
  }
  const std::vector<std::string> check = {options_.systemctl, "is-active", "--",
                                          action.unit()};
  auto state = RunCommand(check, options_.restart_timeout, 4096);
  std::string active =
      state.ok() ? std::string(absl::StripAsciiWhitespace(state->out)) : std::string();
  absl::StrAppend(&message, "; ", Outcome(check, state, options_.restart_timeout));
  if (state.ok()) {
    absl::StrAppend(&message, ", state \"", ValidUtf8(active.substr(0, 64)), "\"");
    if (!state->err.empty()) result->set_stderr_tail(Tail(state->err, kStderrTail));
  }
  result->set_ok(state.ok() && !state->timed_out && active == "active");
  result->set_message(message);
}

void RemediationRunner::RunReset(const v1::RemediationAction& action,
                                 v1::RemediationResult* result) {
  const std::vector<std::string> argv = {options_.nvidia_smi, "--gpu-reset", "-i",
                                         std::to_string(action.gpu_index())};
  auto run = RunCommand(argv, options_.reset_timeout, 64 * 1024);
  result->set_ok(Succeeded(run));
  result->set_message(Outcome(argv, run, options_.reset_timeout));
  if (run.ok()) {
    // nvidia-smi says why it refused on stdout as often as on stderr.
    result->set_stderr_tail(Tail(run->err.empty() ? run->out : run->err, kStderrTail));
  }
}

void RemediationRunner::RunReboot(const v1::RemediationAction& action,
                                  v1::RemediationResult* result) {
  // Straight to PID 1 (as root, over its private socket): `systemctl
  // reboot` asks logind first, which refuses a caller without CAP_SYS_BOOT,
  // and the agent's unit keeps that capability out of its bounding set
  // (docs/remediation-agent.md). The node is fenced and idle (checked).
  const std::vector<std::string> argv = {options_.systemctl, "start", "reboot.target",
                                         "--job-mode=replace-irreversibly", "--no-block"};
  if (FindExecutable(options_.systemctl).empty()) {
    result->set_ok(false);
    result->set_message(absl::StrCat(
        CommandLine(argv), ": not started (not found: ", options_.systemctl, ")"));
    return;
  }
  // The result goes out first: once systemd starts stopping units, this
  // agent may not get to send anything.
  v1::RemediationResult requested = *result;
  requested.set_ok(true);
  requested.set_message(absl::StrCat("reboot requested: ", CommandLine(argv)));
  requested.set_ended_unix_ns(options_.clock.NowNs());
  Log()->warn("incident {} step {}: requesting a reboot", action.incident_id(),
              action.step());
  Deliver(requested);
  if (options_.reboot_grace.count() > 0)
    std::this_thread::sleep_for(options_.reboot_grace);
  auto run = RunCommand(argv, options_.reboot_timeout, 64 * 1024);
  if (Succeeded(run)) {
    *result = requested;
    return;
  }
  // The request failed after "requested" went out: a second result for the
  // same step says so.
  result->set_ok(false);
  result->set_message(
      absl::StrCat("reboot failed: ", Outcome(argv, run, options_.reboot_timeout)));
  if (run.ok()) result->set_stderr_tail(Tail(run->err, kStderrTail));
}

void RemediationRunner::RunCollect(const v1::RemediationAction& action,
                                   v1::RemediationResult* result) {
  const auto deadline = std::chrono::steady_clock::now() + options_.collect_timeout;
  struct Excerpt {
    const char* name;
    std::vector<std::string> argv;
  };
  const Excerpt excerpts[] = {
      {"kernel-log.txt",
       {options_.journalctl, "-k", "--since", kSince, "--no-pager", "-o", "short-iso"}},
      {"journal.txt",
       {options_.journalctl, "--since", kSince, "--no-pager", "-p", "warning", "-o",
        "short-iso"}},
  };
  std::vector<std::string> lines;
  std::string err;
  bool ok = true;
  for (const auto& e : excerpts) {
    auto timeout = Remaining(deadline);
    // One byte past the cap tells a capped excerpt from one of exactly 256 KiB.
    auto run = RunCommand(e.argv, timeout, kJournalCap + 1);
    lines.push_back(Outcome(e.argv, run, timeout));
    if (!Succeeded(run)) ok = false;
    if (!run.ok()) continue;
    if (!run->err.empty()) absl::StrAppend(&err, run->err);
    v1::Artifact* artifact = result->add_artifacts();
    artifact->set_name(e.name);
    artifact->set_media_type("text/plain");
    artifact->set_suite("remediation");
    bool capped = run->out.size() > kJournalCap;
    artifact->set_content(capped ? run->out.substr(0, kJournalCap) : run->out);
    artifact->set_truncated(capped);
    if (capped) absl::StrAppend(&lines.back(), ", capped at 256 KiB");
  }
  if (FindExecutable(options_.nvidia_bug_report).empty()) {
    lines.push_back("nvidia-bug-report.sh not found: not collected");
  } else {
    std::string dir =
        absl::StrCat(options_.work_dir, "/remediation/", action.incident_id());
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::string path = absl::StrCat(dir, "/nvidia-bug-report.log");
    const std::vector<std::string> argv = {options_.nvidia_bug_report, "--output-file",
                                           path};
    if (ec) {
      lines.push_back(absl::StrCat(CommandLine(argv), ": not started (", dir, ": ",
                                   ec.message(), ")"));
      ok = false;
    } else {
      auto timeout = Remaining(deadline);
      auto run = RunCommand(argv, timeout, 64 * 1024);
      std::string line = Outcome(argv, run, timeout);
      if (!Succeeded(run)) ok = false;
      if (run.ok() && !run->err.empty()) absl::StrAppend(&err, run->err);
      // The script gzips its output where it can, adding ".gz".
      for (const std::string& p : {absl::StrCat(path, ".gz"), path}) {
        struct stat st;
        if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
          absl::StrAppend(&line, ", wrote ", p, " (", static_cast<int64_t>(st.st_size),
                          " bytes)");
          break;
        }
      }
      lines.push_back(line);
    }
  }
  result->set_ok(ok);
  result->set_message(absl::StrJoin(lines, "; "));
  result->set_stderr_tail(Tail(err, kStderrTail));
}

}  // namespace cmax::agent
