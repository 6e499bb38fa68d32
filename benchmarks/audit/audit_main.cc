// cmax-bench audit: software versions against advisories, fabric and tenant
// isolation. Flags are wired to the library in audit.h.
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "benchmarks/audit/audit.h"
#include "benchmarks/suite.h"
#include "common/allowed_files.h"
#include "common/suite_flags.h"

namespace cmax::bench {
namespace {

int CouldNotRun(RecordWriter& out, bool jsonl, const std::string& check_id,
                const std::string& reason) {
  std::fprintf(stderr, "audit: %s\n", reason.c_str());
  if (jsonl) {
    out.Log("error", reason);
    v1::Finding f;
    f.set_check_id(check_id);
    f.set_severity(v1::SEVERITY_WARN);
    f.set_not_measured(true);  // nothing was checked: never a pass nor a grade
    f.set_category("security");
    f.set_subject("node");
    f.set_title("not measured: the audit could not run");
    f.set_detail(reason);
    f.set_action("Fix the advisory file or the arguments and run the audit again.");
    out.Find(f);
  }
  return kExitCouldNotRun;
}

}  // namespace

int RunAudit(int argc, char** argv) {
  std::string root = "/";
  std::string advisories;
  std::string tenancy;
  std::string forbidden;
  bool jsonl = false;
  int verbose = 0;
  SuiteFlags flags("audit", "cmax-bench");
  flags.Bind("advisories", &advisories);
  flags.Bind("tenancy", &tenancy);
  flags.Bind("forbidden", &forbidden);
  ArgParser& args = flags.extra();
  args.AddString("root", &root, "root of the system to audit (fixture trees; default /)");
  args.AddFlag("jsonl", &jsonl, "write records as JSON lines");
  args.AddCount("verbose", "v", &verbose, "-v: advisory ids and links; -vv: description and fix");
  if (auto s = flags.ParseArgs(argc, argv); !s.ok()) {
    RecordWriter none("audit", nullptr);
    return CouldNotRun(none, false, "audit.usage", std::string(s.message()));
  }
  RecordWriter out("audit", jsonl ? stdout : nullptr);
  if (args.help_requested()) {
    std::fputs(args.Help().c_str(), stdout);
    return kExitPassed;
  }
  audit::AuditOptions options;
  options.root = root;
  if (tenancy == "shared") {
    options.tenancy = audit::Tenancy::kShared;
  } else if (tenancy == "single") {
    options.tenancy = audit::Tenancy::kSingle;
  } else if (!tenancy.empty()) {
    return CouldNotRun(out, jsonl, "audit.usage",
                       absl::StrCat("--tenancy must be shared or single, not '", tenancy, "'"));
  }
  if (!forbidden.empty()) {
    auto targets = audit::ParseForbidden(forbidden);
    if (!targets.ok()) {
      return CouldNotRun(out, jsonl, "audit.usage", std::string(targets.status().message()));
    }
    options.forbidden = *targets;
  }
  const bool given = !advisories.empty();
  if (advisories.empty()) advisories = audit::DefaultAdvisoriesPath();
  if (advisories.empty()) {
    return CouldNotRun(out, jsonl, "audit.advisories",
                       "no advisory file found (share/cmax/advisories.yaml next to the binary); "
                       "give one with --advisories");
  }
  absl::StatusOr<audit::AdvisoryDb> db;
  if (given) {
    // A plan may name this file and the suite runs as root: only where the
    // agent allows, bounded, and never quoted back (common/allowed_files.h).
    const auto allowed = DirsFromEnv(kAllowReadEnv);
    auto text = ReadPlanFile("advisories", advisories, allowed);
    if (!text.ok()) {
      db = text.status();
    } else {
      db = audit::ParseAdvisories(*text, advisories);
      // Under the agent (CMAX_ALLOW_READ set) the message reaches the
      // coordinator: line and column only. By hand, the parser's own words.
      if (!db.ok() && allowed.has_value()) {
        db = absl::InvalidArgumentError(
            ParseErrorWithoutContent("advisories", advisories, "advisory file", db.status()));
      }
    }
  } else {
    db = audit::LoadAdvisories(advisories);
  }
  if (!db.ok()) {
    return CouldNotRun(out, jsonl, "audit.advisories",
                       absl::StrCat("advisory file unusable, nothing checked: ",
                                    db.status().message()));
  }
  audit::AuditReport report = audit::RunAuditChecks(options, *db);
  if (jsonl) {
    audit::WriteRecords(report, out);
  } else {
    audit::WriteHuman(report, verbose, isatty(fileno(stdout)) == 1, stdout);
  }
  return audit::ExitCodeFor(report) == 0 ? kExitPassed : kExitFoundFailures;
}

}  // namespace cmax::bench
