// Validation of an assignment, before the agent spawns anything for it:
// task id and group syntax, the suite in the catalog and its binary on this
// node, the catalog's re-validation of the arguments (the coordinator checked
// the same declaration), the plan's environment, ranks, and for launcher
// mpirun its peers, its options and an installed mpirun. Which failures mean
// "could not run" (exit 2) and which "rejected" (exit -1) is decided here
// (IsCouldNotRun). Plan paths are checked separately (plan_paths.h).
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/executor.h"
#include "agent/executor_internal.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "common/suite_catalog.h"

namespace cmax::agent {
namespace {

bool IsTaskIdChar(char ch) {
  return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
         ch == '-';
}

}  // namespace

// ^[A-Za-z0-9_.-]{1,128}$
bool ValidTaskId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), IsTaskIdChar);
}

bool IsCouldNotRun(const absl::Status& status) {
  return absl::IsNotFound(status) || absl::IsFailedPrecondition(status);
}

absl::Status ValidateAssignment(const v1::TaskAssignment& a,
                                const std::string& bench_dir) {
  if (!ValidTaskId(a.task_id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("task id '", a.task_id().substr(0, 200),
                     "' does not match ^[A-Za-z0-9_.-]{1,128}$"));
  }
  if (a.attempt() < 0) return absl::InvalidArgumentError("negative attempt");
  const SuiteInfo* suite = FindSuite(a.suite());
  if (suite == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown suite '", a.suite().substr(0, 200), "'"));
  }
  std::vector<std::string> args(a.args().begin(), a.args().end());
  const std::string binary_name = SuiteBinary(*suite, args);
  std::string binary = absl::StrCat(bench_dir, "/", binary_name);
  if (access(binary.c_str(), X_OK) != 0) {
    // The cause first, in words the same for every suite of that binary
    // (the task names its suite already), so the scorecard groups them:
    // "cmax-bench-cuda is missing" once, not once per GPU suite
    // (reports/coverage.h, NotRatedHeadline).
    return absl::NotFoundError(
        absl::StrCat(binary_name, " is missing: ", binary, " is not an executable file"));
  }
  if (absl::Status s = ValidateSuiteArgs(*suite, args); !s.ok()) {
    // The coordinator checked these against the same declaration; a refusal
    // here means the two disagree (versions), so the suite cannot run.
    return absl::FailedPreconditionError(s.message());
  }
  for (const auto& [name, value] : a.env()) {
    CMAX_RETURN_IF_ERROR(ValidateSuiteEnv(name, value));
  }
  if (a.timeout_seconds() < 0) return absl::InvalidArgumentError("negative timeout");
  if (!a.group().empty() && !ValidTaskId(a.group())) {
    return absl::InvalidArgumentError("group name is not a valid task id");
  }
  const bool mpirun = a.launcher() == "mpirun";
  if (!a.launcher().empty() && a.launcher() != "agents" && !mpirun) {
    return absl::InvalidArgumentError(absl::StrCat(
        "launcher '", a.launcher().substr(0, 64), "' is not supported by this agent"));
  }
  if (!mpirun) {
    for (const std::string& arg : args) {
      if (absl::StartsWith(arg, "--mpirun-")) {
        return absl::InvalidArgumentError(absl::StrCat(
            arg.substr(2, arg.find('=') - 2), " applies to launcher mpirun only"));
      }
    }
  } else {
    // One assignment to the group's first node: peers in rank order, each
    // running local_world_size ranks (see docs/mpirun.md).
    if (a.group().empty()) {
      return absl::InvalidArgumentError("launcher mpirun needs a group task");
    }
    if (a.peer_addresses_size() == 0) {
      return absl::InvalidArgumentError("launcher mpirun: no peer addresses");
    }
    for (int i = 0; i < a.peer_addresses_size(); ++i) {
      const std::string& p = a.peer_addresses(i);
      bool ok = !p.empty() && p.size() <= 253 && p[0] != '-' &&
                std::all_of(p.begin(), p.end(), [](char ch) {
                  return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '.' ||
                         ch == ':' || ch == '-' || ch == '_';
                });
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "launcher mpirun: peer ", i, " has no usable address ('", p.substr(0, 64), "')"));
      }
    }
    if (a.local_world_size() < 1 ||
        a.world_size() != a.local_world_size() * a.peer_addresses_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "launcher mpirun: world size ", a.world_size(), " is not ", a.peer_addresses_size(),
          " nodes x ", a.local_world_size(), " ranks"));
    }
    std::vector<std::string> rest;
    CMAX_RETURN_IF_ERROR(MpirunOptionArgs(args, &rest).status());
    if (FindExecutable("mpirun").empty()) {
      return absl::NotFoundError(
          "launcher mpirun: mpirun is not installed on this node (Open MPI, package "
          "openmpi-bin)");
    }
    return absl::OkStatus();
  }
  if (a.ranks_size() > 0) {
    if (a.world_size() < 1)
      return absl::InvalidArgumentError("ranks given with world_size < 1");
    if (a.local_world_size() < a.ranks_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "local_world_size ", a.local_world_size(), " < ", a.ranks_size(), " ranks"));
    }
    std::set<int32_t> seen;
    for (const v1::RankAssignment& r : a.ranks()) {
      if (r.rank() < 0 || r.rank() >= a.world_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", r.rank(), " outside world size ", a.world_size()));
      }
      if (r.local_rank() < 0 || r.local_rank() >= a.local_world_size()) {
        return absl::InvalidArgumentError(absl::StrCat("local rank ", r.local_rank(),
                                                       " outside local world size ",
                                                       a.local_world_size()));
      }
      if (!seen.insert(r.rank()).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", r.rank(), " given twice"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace cmax::agent
