// cmax-bench monitoring: flags, the scraper (loopback or --scrape-file), output.
#include <sys/stat.h>

#include <cstdio>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "benchmarks/monitoring/monitoring.h"
#include "benchmarks/suite.h"
#include "common/record_io.h"
#include "common/suite_flags.h"
#include "common/sysroot.h"

namespace cmax::bench {

int RunMonitoring(int argc, char** argv) {
  monitoring::Options o;
  std::string exporters = "dcgm:9400,node:9100";
  std::string scrape_files;
  bool jsonl = false;
  SuiteFlags flags("monitoring", "cmax-bench");
  flags.Bind("exporters", &exporters);
  ArgParser& args = flags.extra();
  args.AddFlag("jsonl", &jsonl, "write cmax.v1.Record JSON lines instead of a table");
  args.AddString("root", &o.root, "system root to read /etc, /sys and /var under (default /)");
  args.AddString("scrape-file", &scrape_files,
                 "NAME=PATH[,NAME=PATH]: read these exporters' text from files instead of "
                 "127.0.0.1 (saved scrapes, fixtures)");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  RecordWriter out("monitoring", jsonl ? stdout : nullptr);
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "monitoring: %s\n", why.c_str());
    out.NotMeasured("monitoring.not_measured", "monitoring", "node",
                    "not measured: the monitoring suite could not run", why,
                    "correct the arguments (cmax-bench monitoring --help)");
    return kExitCouldNotRun;
  };
  if (!args.positional().empty()) return fail("unexpected argument '" + args.positional()[0] + "'");
  if (exporters.empty()) exporters = "dcgm:9400,node:9100";
  auto parsed = monitoring::ParseExporters(exporters);
  if (!parsed.ok()) return fail(std::string(parsed.status().message()));
  o.exporters = *parsed;
  struct stat st;
  if (o.root.empty() || stat(o.root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return fail(absl::StrCat("root '", o.root, "' is not a directory; nothing measured"));
  }
  std::map<std::string, std::string> files;
  for (absl::string_view item : absl::StrSplit(scrape_files, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.first.empty() || kv.second.empty()) {
      return fail(absl::StrCat("--scrape-file: '", item, "' is not NAME=PATH"));
    }
    files[kv.first] = kv.second;
  }
  o.scrape = [files](const monitoring::Exporter& e) -> absl::StatusOr<std::string> {
    if (auto it = files.find(e.name); it != files.end()) return Sysroot("/").Read(it->second);
    return monitoring::ScrapeLoopback(e.port, 5000);
  };
  return orchestration::WriteChecks(monitoring::RunChecks(o), jsonl, out) != 0
             ? kExitFoundFailures
             : kExitPassed;
}

}  // namespace cmax::bench
