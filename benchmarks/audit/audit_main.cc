// cmax-bench audit: software versions against advisories, fabric and tenant
// isolation. Flags are wired to the library in audit.h.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmarks/audit/audit.h"
#include "benchmarks/audit/refresh.h"
#include "common/atomic_file.h"
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

// `cmax-bench audit refresh`: 0 every document parsed, 1 some were skipped
// (each named on stderr), 2 usage, an unreadable directory or base table, or
// an unwritable output.
int RunRefresh(int argc, char** argv) {
  std::string from, out_path, base_path, today;
  ArgParser args("cmax-bench audit refresh --from DIR --out FILE [options]",
                 "Builds the advisory table from CSAF 2.0 advisories (NVIDIA) and OSV records "
                 "(GitHub, Go) in DIR, on top of a base table.");
  args.AddString("from", &from, "directory of advisory documents (*.json)");
  args.AddString("out", &out_path, "the table to write (YAML)");
  args.AddString("base", &base_path,
                 "table whose components, driver branches and other advisories are kept "
                 "(default: the installed table)");
  args.AddString("today", &today, "the generated date, YYYY-MM-DD (default: today, UTC)");
  if (auto s = args.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "audit refresh: %s\n", std::string(s.message()).c_str());
    return kExitCouldNotRun;
  }
  if (args.help_requested()) {
    std::fputs(args.Help().c_str(), stdout);
    return kExitPassed;
  }
  if (from.empty() || out_path.empty()) {
    std::fprintf(stderr, "audit refresh: --from DIR and --out FILE are required\n");
    return kExitCouldNotRun;
  }
  if (today.empty()) today = absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone());
  if (base_path.empty()) base_path = audit::DefaultAdvisoriesPath();
  auto base = audit::LoadAdvisories(base_path);
  if (!base.ok()) {
    std::fprintf(stderr, "audit refresh: base table: %s\n", std::string(base.status().message()).c_str());
    return kExitCouldNotRun;
  }
  auto result = audit::RefreshFromDirectory(from, *std::move(base), today);
  if (!result.ok()) {
    std::fprintf(stderr, "audit refresh: %s\n", std::string(result.status().message()).c_str());
    return kExitCouldNotRun;
  }
  for (const auto& why : result->skipped) std::fprintf(stderr, "audit refresh: skipped %s\n", why.c_str());
  const std::string text = audit::FormatAdvisoryTable(result->db);
  // What is written must read back: a table the audit cannot load is no table.
  if (auto check = audit::ParseAdvisories(text, out_path); !check.ok()) {
    std::fprintf(stderr, "audit refresh: the table does not parse back: %s\n",
                 std::string(check.status().message()).c_str());
    return kExitCouldNotRun;
  }
  if (auto s = WriteFileAtomically(out_path, text, 0644); !s.ok()) {
    std::fprintf(stderr, "audit refresh: %s\n", std::string(s.message()).c_str());
    return kExitCouldNotRun;
  }
  std::fprintf(stderr, "audit refresh: %zu documents read, %zu skipped, %zu advisories in %s\n",
               result->parsed.size(), result->skipped.size(), result->db.advisories.size(),
               out_path.c_str());
  return result->skipped.empty() ? kExitPassed : kExitFoundFailures;
}

}  // namespace

int RunAudit(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "refresh") return RunRefresh(argc - 1, argv + 1);
  std::string root = "/";
  std::string advisories;
  std::string tenancy;
  std::string forbidden;
  bool jsonl = false;
  int verbose = 0;
  std::string links;
  int64_t grace_days = 0;
  int64_t max_age_days = 30;
  SuiteFlags flags("audit", "cmax-bench");
  flags.Bind("advisories", &advisories);
  flags.Bind("tenancy", &tenancy);
  flags.Bind("forbidden", &forbidden);
  ArgParser& args = flags.extra();
  args.AddString("root", &root, "root of the system to audit (fixture trees; default /)");
  args.AddFlag("jsonl", &jsonl, "write records as JSON lines");
  args.AddCount("verbose", "v", &verbose,
                "-v: each finding's advisory (id, severity, CVEs) and links; -vv: why it matters "
                "and the evidence; -vvv: how to fix and the upgrade page");
  args.AddString("links", &links,
                 "auto, osc8 or plain: URLs as OSC 8 terminal hyperlinks or plain text (default "
                 "$CMAX_LINKS, else auto: OSC 8 when stdout is a terminal and TERM is not dumb)");
  args.AddInt("grace-days", &grace_days,
              "days after an advisory's publication during which a miss warns instead of failing "
              "(default 0)");
  args.AddInt("max-table-age-days", &max_age_days,
              "an advisory table generated longer ago than this is stale: a warning (default 30)");
  if (auto s = flags.ParseArgs(argc, argv); !s.ok()) {
    RecordWriter none("audit", nullptr);
    return CouldNotRun(none, false, "audit.usage", std::string(s.message()));
  }
  RecordWriter out("audit", jsonl ? stdout : nullptr);
  if (args.help_requested()) {
    std::fputs(args.Help().c_str(), stdout);
    return kExitPassed;
  }
  if (links.empty() && std::getenv("CMAX_LINKS") != nullptr) links = std::getenv("CMAX_LINKS");
  auto link_mode = audit::ParseLinkMode(links);
  if (!link_mode.ok()) {
    return CouldNotRun(out, jsonl, "audit.usage", std::string(link_mode.status().message()));
  }
  const bool tty = isatty(fileno(stdout)) == 1;
  audit::HumanOptions human;
  human.verbosity = verbose;
  human.hyperlinks = audit::UseHyperlinks(*link_mode, tty, std::getenv("TERM"));
  human.color = audit::UseHyperlinks(audit::LinkMode::kAuto, tty, std::getenv("TERM"));
  if (grace_days < 0 || max_age_days < 0) {
    return CouldNotRun(out, jsonl, "audit.usage",
                       "--grace-days and --max-table-age-days must not be negative");
  }
  audit::AuditOptions options;
  options.root = root;
  options.grace_days = static_cast<int>(grace_days);
  options.max_table_age_days = static_cast<int>(max_age_days);

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
    // Every version check still appears, UNKNOWN with this reason (never a
    // pass); the run as a whole could not be done.
    const std::string reason = std::string(db.status().message());
    audit::AdvisoryDb unusable;
    unusable.path = advisories;
    unusable.error = reason;
    audit::AuditReport report = audit::RunAuditChecks(options, unusable);
    if (jsonl) {
      // Could not run: findings only, each not measured (no inventory).
      report.versions.clear();
      report.kernel = audit::KernelInfo();
      audit::WriteRecords(report, out);
    } else {
      audit::WriteHuman(report, human, stdout);
    }
    return CouldNotRun(out, jsonl, "audit.advisories",
                       absl::StrCat("advisory file unusable, nothing checked: ", reason));
  }
  audit::AuditReport report = audit::RunAuditChecks(options, *db);
  if (jsonl) {
    audit::WriteRecords(report, out);
  } else {
    audit::WriteHuman(report, human, stdout);
  }
  return audit::ExitCodeFor(report) == 0 ? kExitPassed : kExitFoundFailures;
}

}  // namespace cmax::bench
