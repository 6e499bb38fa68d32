// RemediationRunner against fake systemctl / nvidia-smi / journalctl /
// nvidia-bug-report.sh scripts that log their argv, one line a call, to
// <scratch>/calls.log and print and exit as each test wants.
#include "agent/remediation_actions.h"

#include <sys/stat.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "agent/outbox.h"
#include "tests/agent/test_util.h"
#include "tests/scratch_dir.h"

namespace {

namespace v1 = cmax::v1;
using cmax::agent::RemediationRunner;
using cmax::agent::testing::ReadFile;
using cmax::agent::testing::WaitFor;
using cmax::testing::ScratchDir;
using cmax::testing::WriteFileWithMode;

constexpr std::chrono::milliseconds kWait{10000};

// Keeps what was sent while up; refuses (as a dead stream does) while down.
class FakeOutbox : public cmax::agent::Outbox {
 public:
  bool Send(uint64_t generation, v1::AgentMessage message) override {
    absl::MutexLock lock(&mu_);
    if (!up_ || generation != generation_) return false;
    if (on_send_) on_send_(message);
    messages_.push_back(std::move(message));
    return true;
  }
  bool HasRoom(uint64_t generation) const override {
    absl::MutexLock lock(&mu_);
    return up_ && generation == generation_;
  }
  void SetUp(bool up, uint64_t generation) {
    absl::MutexLock lock(&mu_);
    up_ = up;
    generation_ = generation;
  }
  void OnSend(std::function<void(const v1::AgentMessage&)> f) {
    absl::MutexLock lock(&mu_);
    on_send_ = std::move(f);
  }
  std::vector<v1::RemediationResult> Results() const {
    absl::MutexLock lock(&mu_);
    std::vector<v1::RemediationResult> out;
    for (const auto& m : messages_) {
      if (m.has_remediation()) out.push_back(m.remediation());
    }
    return out;
  }
  // The result of (incident, step), once one was sent.
  std::optional<v1::RemediationResult> Find(const std::string& incident, int step) const {
    for (const auto& r : Results()) {
      if (r.incident_id() == incident && r.step() == step) return r;
    }
    return std::nullopt;
  }

 private:
  mutable absl::Mutex mu_;
  bool up_ = true;
  uint64_t generation_ = 1;
  std::function<void(const v1::AgentMessage&)> on_send_;
  std::vector<v1::AgentMessage> messages_;
};

// A scratch dir with fake programs whose calls go to calls.log.
struct Fakes {
  ScratchDir dir;
  std::string Log() const { return dir.path + "/calls.log"; }
  std::string Calls() const { return ReadFile(Log()); }
  std::string Path(const std::string& name) const { return dir.path + "/" + name; }
  // Writes an executable `name` that logs "name arg1 arg2 ..." and then
  // runs `body` (sh).
  std::string Write(const std::string& name, const std::string& body) const {
    std::string script =
        "#!/bin/sh\n{ printf '%s' '" + name +
        "'; for a in \"$@\"; do printf ' %s' \"$a\"; done; printf '\\n'; } >> '" + Log() +
        "'\n" + body + "\n";
    WriteFileWithMode(Path(name), script, 0755);
    return Path(name);
  }
  RemediationRunner::Options Options() const {
    RemediationRunner::Options o;
    o.systemctl = Path("systemctl");
    o.nvidia_smi = Path("nvidia-smi");
    o.journalctl = Path("journalctl");
    o.nvidia_bug_report = Path("nvidia-bug-report.sh");  // absent unless written
    o.allowed_units = {"nvidia-fabricmanager.service", "nvidia-persistenced.service"};
    o.gpu_count = 8;
    o.work_dir = dir.path + "/work";
    o.reboot_grace = std::chrono::milliseconds(0);
    return o;
  }
};

v1::RemediationAction Action(v1::RemediationActionKind kind, int step = 1) {
  v1::RemediationAction a;
  a.set_incident_id("inc-2026-12-07:n1.7");
  a.set_step(step);
  a.set_kind(kind);
  a.set_reason("Xid 79 on GPU 3");
  return a;
}

v1::RemediationAction Restart(const std::string& unit, int step = 1) {
  auto a = Action(v1::REMEDIATION_RESTART_UNIT, step);
  a.set_unit(unit);
  return a;
}

v1::RemediationAction Reset(int gpu, int step = 1) {
  auto a = Action(v1::REMEDIATION_RESET_GPU, step);
  a.set_gpu_index(gpu);
  return a;
}

// Posts `action` and waits for its result.
v1::RemediationResult PostAndWait(RemediationRunner& runner, FakeOutbox& outbox,
                                  const v1::RemediationAction& action) {
  runner.Post(1, action);
  std::optional<v1::RemediationResult> r;
  REQUIRE(WaitFor(
      [&] { return (r = outbox.Find(action.incident_id(), action.step())).has_value(); },
      kWait));
  return *r;
}

std::string SystemctlBody(const std::string& state = "active") {
  return "if [ \"$1\" = is-active ]; then echo " + state + "; [ " + state +
         " = active ] || exit 3; fi\nexit 0";
}

}  // namespace

TEST_CASE(
    "remediation_actions: unit names and incident ids are checked like systemd does",
    "[remediation]") {
  using cmax::agent::ValidateIncidentId;
  using cmax::agent::ValidateUnitName;
  CHECK(ValidateUnitName("nvidia-fabricmanager.service").ok());
  CHECK(ValidateUnitName("getty@tty1.service").ok());
  CHECK(ValidateUnitName("dev-disk-by\\x2duuid-1.device").ok());
  CHECK(ValidateUnitName("nvidia-persistenced.socket").ok());
  CHECK_FALSE(ValidateUnitName("").ok());
  CHECK_FALSE(ValidateUnitName("a;b.service").ok());
  CHECK_FALSE(ValidateUnitName("--now").ok());
  CHECK_FALSE(ValidateUnitName("-x.service").ok());
  CHECK_FALSE(ValidateUnitName("foo").ok());
  CHECK_FALSE(ValidateUnitName("foo.exe").ok());
  CHECK_FALSE(ValidateUnitName(".service").ok());
  CHECK_FALSE(ValidateUnitName("getty@.service").ok());
  CHECK_FALSE(ValidateUnitName("a@b@c.service").ok());
  CHECK_FALSE(ValidateUnitName("a b.service").ok());
  CHECK_FALSE(ValidateUnitName("a/b.service").ok());
  CHECK_FALSE(ValidateUnitName(std::string(250, 'a') + ".service").ok());

  CHECK(ValidateIncidentId("inc-1").ok());
  CHECK(ValidateIncidentId("n1:2026-12-07T15:00:00.5_x").ok());
  CHECK(ValidateIncidentId(std::string(64, 'a')).ok());
  CHECK_FALSE(ValidateIncidentId(std::string(65, 'a')).ok());
  CHECK_FALSE(ValidateIncidentId("").ok());
  CHECK_FALSE(ValidateIncidentId(".").ok());
  CHECK_FALSE(ValidateIncidentId("..").ok());
  CHECK_FALSE(ValidateIncidentId("../etc").ok());
  CHECK_FALSE(ValidateIncidentId("a b").ok());
  CHECK_FALSE(ValidateIncidentId("a\nb").ok());
}

TEST_CASE("remediation_actions: options with a bad allowed unit are refused at startup",
          "[remediation]") {
  RemediationRunner::Options o;
  o.work_dir = "/tmp";
  CHECK(RemediationRunner::CheckOptions(o).ok());
  o.allowed_units = {"ok.service", "bad;unit.service"};
  auto s = RemediationRunner::CheckOptions(o);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.message()), Catch::Contains("--remediation-units"));
}

TEST_CASE("remediation_actions: restart of an allowed unit runs restart then is-active",
          "[remediation]") {
  Fakes fakes;
  fakes.Write("systemctl", SystemctlBody());
  FakeOutbox outbox;
  RemediationRunner runner(fakes.Options(), &outbox);
  auto r = PostAndWait(runner, outbox, Restart("nvidia-fabricmanager.service"));
  CHECK(r.ok());
  CHECK(r.incident_id() == "inc-2026-12-07:n1.7");
  CHECK(r.step() == 1);
  CHECK(fakes.Calls() ==
        "systemctl restart -- nvidia-fabricmanager.service\n"
        "systemctl is-active -- nvidia-fabricmanager.service\n");
  CHECK_THAT(r.message(),
             Catch::Contains("restart -- nvidia-fabricmanager.service: exit 0"));
  CHECK_THAT(r.message(), Catch::Contains("state \"active\""));
  CHECK(r.started_unix_ns() > 0);
  CHECK(r.ended_unix_ns() >= r.started_unix_ns());
}

TEST_CASE("remediation_actions: a unit that does not come back active is not ok",
          "[remediation]") {
  Fakes fakes;
  fakes.Write("systemctl", SystemctlBody("failed"));
  FakeOutbox outbox;
  RemediationRunner runner(fakes.Options(), &outbox);
  auto r = PostAndWait(runner, outbox, Restart("nvidia-persistenced.service"));
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.message(), Catch::Contains("state \"failed\""));
  CHECK_THAT(r.message(), Catch::Contains("exit 3"));
}

TEST_CASE("remediation_actions: a failing command gives ok false with its stderr tail",
          "[remediation]") {
  Fakes fakes;
  fakes.Write(
      "systemctl",
      "echo 'Job for nvidia-fabricmanager.service failed because the control process "
      "exited with error code.' >&2\nexit 1");
  FakeOutbox outbox;
  RemediationRunner runner(fakes.Options(), &outbox);
  auto r = PostAndWait(runner, outbox, Restart("nvidia-fabricmanager.service"));
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.message(),
             Catch::Contains("systemctl restart -- nvidia-fabricmanager.service"));
  CHECK_THAT(r.message(), Catch::Contains("exit 1"));
  CHECK_THAT(r.stderr_tail(),
             Catch::Contains("Job for nvidia-fabricmanager.service failed"));
  // No is-active after a failed restart.
  CHECK(fakes.Calls() == "systemctl restart -- nvidia-fabricmanager.service\n");
}

TEST_CASE("remediation_actions: the stderr tail keeps the last 2 KiB as valid UTF-8",
          "[remediation]") {
  Fakes fakes;
  // 5000 bytes of 'x', a byte that is not UTF-8, then the line that matters.
  fakes.Write(
      "nvidia-smi",
      "head -c 5000 /dev/zero | tr '\\000' x >&2\nprintf '\\377 GPU 00000000:1B:00.0 is "
      "in use\\n' >&2\nexit 255");
  FakeOutbox outbox;
  RemediationRunner runner(fakes.Options(), &outbox);
  auto r = PostAndWait(runner, outbox, Reset(2));
  CHECK_FALSE(r.ok());
  CHECK(r.stderr_tail().size() <= 2048);
  CHECK_THAT(r.stderr_tail(), Catch::EndsWith("? GPU 00000000:1B:00.0 is in use\n"));
  CHECK_THAT(r.message(), Catch::Contains("nvidia-smi --gpu-reset -i 2: exit 255"));
}

TEST_CASE("remediation_actions: refused actions run nothing and say why",
          "[remediation]") {
  Fakes fakes;
  fakes.Write("systemctl", SystemctlBody());
  fakes.Write("nvidia-smi", "exit 0");
  bool busy = false;
  auto options = fakes.Options();
  options.busy = [&busy] { return busy; };
  FakeOutbox outbox;
  RemediationRunner runner(options, &outbox);

  struct Case {
    v1::RemediationAction action;
    absl::StatusCode code;
    std::string reason;
    bool busy;
  };
  auto bad_id = Restart("nvidia-fabricmanager.service", 20);
  bad_id.set_incident_id("../../etc");
  std::vector<Case> cases = {
      {Restart("sshd.service", 10), absl::StatusCode::kPermissionDenied,
       "unit sshd.service is not in --remediation-units", false},
      {Restart("a;b.service", 11), absl::StatusCode::kInvalidArgument, "character",
       false},
      {Restart("--now", 12), absl::StatusCode::kInvalidArgument, "must start with",
       false},
      {Reset(8, 13), absl::StatusCode::kOutOfRange, "GPU index 8 is not in [0, 8)",
       false},
      {Reset(-1, 14), absl::StatusCode::kOutOfRange, "GPU index -1", false},
      {Reset(0, 15), absl::StatusCode::kFailedPrecondition, "a task is running", true},
      {Action(v1::REMEDIATION_REBOOT, 16), absl::StatusCode::kFailedPrecondition,
       "a task is running", true},
      {Action(v1::REMEDIATION_ACTION_UNSPECIFIED, 17), absl::StatusCode::kInvalidArgument,
       "unknown remediation kind 0", false},
  };
  for (const auto& c : cases) {
    INFO(c.action.ShortDebugString());
    busy = c.busy;
    auto s = runner.Validate(c.action);
    CHECK(s.code() == c.code);
    CHECK_THAT(std::string(s.message()), Catch::Contains(c.reason));
    runner.Post(1, c.action);
    auto r = outbox.Find(c.action.incident_id(), c.action.step());
    REQUIRE(r.has_value());  // a refusal is sent from Post itself
    CHECK_FALSE(r->ok());
    CHECK_THAT(r->message(), Catch::StartsWith("refused: "));
    CHECK_THAT(r->message(), Catch::Contains(c.reason));
  }
  busy = false;
  runner.Post(1, bad_id);
  auto results = outbox.Results();
  REQUIRE(results.size() == cases.size() + 1);
  CHECK(results.back().incident_id().empty());  // not echoed: it was invalid
  CHECK(results.back().step() == 20);
  CHECK_THAT(results.back().message(), Catch::Contains("incident id"));
  CHECK(runner.PendingCount() == 0);
  CHECK_FALSE(std::filesystem::exists(fakes.Log()));
}

TEST_CASE("remediation_actions: with no allowed units every restart is refused",
          "[remediation]") {
  Fakes fakes;
  fakes.Write("systemctl", SystemctlBody());
  auto options = fakes.Options();
  options.allowed_units.clear();
  FakeOutbox outbox;
  RemediationRunner runner(options, &outbox);
  auto s = runner.Validate(Restart("nvidia-fabricmanager.service"));
  CHECK(s.code() == absl::StatusCode::kPermissionDenied);
  CHECK(std::string(s.message()) ==
        "unit nvidia-fabricmanager.service is not in --remediation-units");
  runner.Post(1, Restart("nvidia-fabricmanager.service"));
  REQUIRE(outbox.Results().size() == 1);
  CHECK_FALSE(outbox.Results()[0].ok());
  CHECK_FALSE(std::filesystem::exists(fakes.Log()));
}

TEST_CASE("remediation_actions: a GPU reset runs nvidia-smi on that index",
          "[remediation]") {
  Fakes fakes;
  fakes.Write("nvidia-smi",
              "echo 'GPU 00000000:1B:00.0 was successfully reset.'\nexit 0");
  FakeOutbox outbox;
  auto options = fakes.Options();
  options.busy = [] { return false; };
  RemediationRunner runner(options, &outbox);
  auto r = PostAndWait(runner, outbox, Reset(7));
  CHECK(r.ok());
  CHECK(fakes.Calls() == "nvidia-smi --gpu-reset -i 7\n");
  CHECK(r.message() == fakes.Path("nvidia-smi") + " --gpu-reset -i 7: exit 0");
}

TEST_CASE("remediation_actions: reboot is reported as requested before it runs",
          "[remediation]") {
  Fakes fakes;
  fakes.Write("systemctl", "exit 0");
  FakeOutbox outbox;
  // Each send is logged beside the fake's calls, so the order shows.
  std::string log = fakes.Log();
  outbox.OnSend([log](const v1::AgentMessage& m) {
    std::ofstream(log, std::ios::app) << "sent " << m.remediation().message() << "\n";
  });
  RemediationRunner runner(fakes.Options(), &outbox);
  auto r = PostAndWait(runner, outbox, Action(v1::REMEDIATION_REBOOT));
  CHECK(r.ok());
  CHECK_THAT(r.message(), Catch::StartsWith("reboot requested"));
  REQUIRE(WaitFor([&] { return runner.PendingCount() == 0; }, kWait));
  CHECK(fakes.Calls() == "sent reboot requested: " + fakes.Path("systemctl") +
                             " start reboot.target --job-mode=replace-irreversibly --no-block\n"
                             "systemctl start reboot.target --job-mode=replace-irreversibly "
                             "--no-block\n");
  CHECK(outbox.Results().size() == 1);  // no second result when the request worked
}

TEST_CASE("remediation_actions: a reboot request that fails sends a second result",
          "[remediation]") {
  Fakes fakes;
  fakes.Write("systemctl", "echo 'Access denied' >&2\nexit 1");
  FakeOutbox outbox;
  RemediationRunner runner(fakes.Options(), &outbox);
  runner.Post(1, Action(v1::REMEDIATION_REBOOT));
  REQUIRE(WaitFor([&] { return outbox.Results().size() == 2; }, kWait));
  auto results = outbox.Results();
  CHECK(results[0].ok());
  CHECK_FALSE(results[1].ok());
  CHECK_THAT(results[1].message(), Catch::StartsWith("reboot failed: "));
  CHECK_THAT(results[1].stderr_tail(), Catch::Contains("Access denied"));
}

TEST_CASE("remediation_actions: collect returns both journal excerpts", "[remediation]") {
  Fakes fakes;
  fakes.Write(
      "journalctl",
      "if [ \"$1\" = -k ]; then\n"
      "  echo '2026-12-07T15:00:01+0000 n1 kernel: NVRM: Xid (PCI:0000:1b:00): 79, "
      "pid=0, GPU has fallen off the bus.'\n"
      "else\n"
      "  echo '2026-12-07T15:00:02+0000 n1 nv-fabricmanager[812]: request to query "
      "NVSwitch device information failed'\n"
      "fi\nexit 0");
  FakeOutbox outbox;
  RemediationRunner runner(fakes.Options(), &outbox);

  SECTION("without nvidia-bug-report.sh") {
    auto r = PostAndWait(runner, outbox, Action(v1::REMEDIATION_COLLECT));
    CHECK(r.ok());
    REQUIRE(r.artifacts_size() == 2);
    CHECK(r.artifacts(0).name() == "kernel-log.txt");
    CHECK_THAT(r.artifacts(0).content(), Catch::Contains("GPU has fallen off the bus"));
    CHECK_FALSE(r.artifacts(0).truncated());
    CHECK(r.artifacts(1).name() == "journal.txt");
    CHECK_THAT(r.artifacts(1).content(),
               Catch::Contains("NVSwitch device information failed"));
    CHECK_THAT(r.message(),
               Catch::Contains("nvidia-bug-report.sh not found: not collected"));
    CHECK(fakes.Calls() ==
          "journalctl -k --since -15min --no-pager -o short-iso\n"
          "journalctl --since -15min --no-pager -p warning -o short-iso\n");
  }
  SECTION("with nvidia-bug-report.sh: its path and size, not the file") {
    fakes.Write(
        "nvidia-bug-report.sh",
        "[ \"$1\" = --output-file ] || exit 2\nhead -c 1000 /dev/zero > \"$2.gz\"\n"
        "echo 'nvidia-bug-report.sh will now collect information' >&2\nexit 0");
    auto r = PostAndWait(runner, outbox, Action(v1::REMEDIATION_COLLECT));
    CHECK(r.ok());
    CHECK(r.artifacts_size() == 2);
    std::string path =
        fakes.dir.path + "/work/remediation/inc-2026-12-07:n1.7/nvidia-bug-report.log";
    CHECK_THAT(fakes.Calls(),
               Catch::Contains("nvidia-bug-report.sh --output-file " + path + "\n"));
    CHECK_THAT(r.message(), Catch::Contains("wrote " + path + ".gz (1000 bytes)"));
    CHECK_THAT(r.stderr_tail(), Catch::Contains("will now collect"));
  }
}

TEST_CASE("remediation_actions: a journal excerpt over 256 KiB is capped and says so",
          "[remediation]") {
  Fakes fakes;
  fakes.Write("journalctl", "head -c 300000 /dev/zero | tr '\\000' k\nexit 0");
  FakeOutbox outbox;
  RemediationRunner runner(fakes.Options(), &outbox);
  auto r = PostAndWait(runner, outbox, Action(v1::REMEDIATION_COLLECT));
  REQUIRE(r.artifacts_size() == 2);
  for (const auto& a : r.artifacts()) {
    CHECK(a.content().size() == 256 * 1024);
    CHECK(a.truncated());
  }
  CHECK_THAT(r.message(), Catch::Contains("capped at 256 KiB"));
}

TEST_CASE(
    "remediation_actions: a result made while the stream is down is resent on connect",
    "[remediation]") {
  Fakes fakes;
  fakes.Write("systemctl", SystemctlBody());
  FakeOutbox outbox;
  outbox.SetUp(false, 1);
  RemediationRunner runner(fakes.Options(), &outbox);
  runner.Post(1, Restart("nvidia-fabricmanager.service", 3));
  REQUIRE(WaitFor([&] { return runner.UnsentCount() == 1 && runner.PendingCount() == 0; },
                  kWait));
  CHECK(outbox.Results().empty());
  outbox.SetUp(true, 2);
  runner.OnConnected(2);
  CHECK(runner.UnsentCount() == 0);
  auto r = outbox.Find("inc-2026-12-07:n1.7", 3);
  REQUIRE(r.has_value());
  CHECK(r->ok());
}

TEST_CASE("remediation_actions: one at a time with a bounded queue", "[remediation]") {
  Fakes fakes;
  // restart waits (at most 10 s) for the test to create "release".
  fakes.Write("systemctl",
              "if [ \"$1\" = restart ]; then i=0; while [ ! -e '" +
                  fakes.Path("release") +
                  "' ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; fi\n" +
                  SystemctlBody());
  auto options = fakes.Options();
  options.max_queued = 1;
  FakeOutbox outbox;
  RemediationRunner runner(options, &outbox);
  runner.Post(1, Restart("nvidia-fabricmanager.service", 1));
  REQUIRE(
      WaitFor([&] { return fakes.Calls().find("restart") != std::string::npos; }, kWait));
  runner.Post(1, Restart("nvidia-persistenced.service", 2));  // queued
  runner.Post(1, Restart("nvidia-persistenced.service", 3));  // one too many
  auto third = outbox.Find("inc-2026-12-07:n1.7", 3);
  REQUIRE(third.has_value());
  CHECK_FALSE(third->ok());
  CHECK_THAT(third->message(), Catch::Contains("already queued"));
  CHECK(runner.PendingCount() == 2);
  WriteFileWithMode(fakes.Path("release"), "", 0644);
  REQUIRE(WaitFor([&] { return outbox.Results().size() == 3; }, kWait));
  CHECK(outbox.Find("inc-2026-12-07:n1.7", 1)->ok());
  CHECK(outbox.Find("inc-2026-12-07:n1.7", 2)->ok());
  CHECK(fakes.Calls() ==
        "systemctl restart -- nvidia-fabricmanager.service\n"
        "systemctl is-active -- nvidia-fabricmanager.service\n"
        "systemctl restart -- nvidia-persistenced.service\n"
        "systemctl is-active -- nvidia-persistenced.service\n");
}

TEST_CASE("remediation_actions: a queued reset is checked again when it starts",
          "[remediation]") {
  Fakes fakes;
  fakes.Write("systemctl",
              "if [ \"$1\" = restart ]; then i=0; while [ ! -e '" +
                  fakes.Path("release") +
                  "' ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; fi\n" +
                  SystemctlBody());
  fakes.Write("nvidia-smi", "exit 0");
  std::atomic<bool> busy{false};
  auto options = fakes.Options();
  options.busy = [&busy] { return busy.load(); };
  FakeOutbox outbox;
  RemediationRunner runner(options, &outbox);
  runner.Post(1, Restart("nvidia-fabricmanager.service", 1));
  REQUIRE(
      WaitFor([&] { return fakes.Calls().find("restart") != std::string::npos; }, kWait));
  runner.Post(1, Reset(0, 2));  // accepted: nothing runs yet
  CHECK(outbox.Results().empty());
  busy = true;  // a task starts before the reset's turn comes
  WriteFileWithMode(fakes.Path("release"), "", 0644);
  REQUIRE(WaitFor([&] { return outbox.Results().size() == 2; }, kWait));
  auto reset = outbox.Find("inc-2026-12-07:n1.7", 2);
  REQUIRE(reset.has_value());
  CHECK_FALSE(reset->ok());
  CHECK_THAT(reset->message(), Catch::Contains("a task is running"));
  CHECK(fakes.Calls().find("nvidia-smi") == std::string::npos);
}

TEST_CASE("remediation_actions: a command past its time limit is stopped and not ok",
          "[remediation]") {
  Fakes fakes;
  fakes.Write("nvidia-smi", "sleep 30");
  auto options = fakes.Options();
  options.reset_timeout = std::chrono::milliseconds(300);
  FakeOutbox outbox;
  RemediationRunner runner(options, &outbox);
  auto start = std::chrono::steady_clock::now();
  auto r = PostAndWait(runner, outbox, Reset(1));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.message(), Catch::Contains("--gpu-reset -i 1: timed out after 300 ms"));
}

TEST_CASE("remediation_actions: a missing program is reported, not run",
          "[remediation]") {
  Fakes fakes;  // no fake nvidia-smi written
  FakeOutbox outbox;
  RemediationRunner runner(fakes.Options(), &outbox);
  auto r = PostAndWait(runner, outbox, Reset(1));
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.message(), Catch::Contains("not started (not found: "));
}
