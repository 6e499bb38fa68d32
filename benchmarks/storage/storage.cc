// storage: fio-driven storage measurements with honest data (see fio_job.h),
// the file system and mount source of --path, and a safe work directory.
//
//   cmax-bench storage --path DIR [--pattern NAME[,NAME...]|all] [--size BYTES]
//       [--block-size B] [--queue-depth Q] [--jobs J] [--duration S]
//       [--direct|--buffered] [--verify] [--files N] [--keep] [--reuse DIR]
//       [--shard-from NODE|next] [--jsonl]
//
// Exit codes: 0 measured; 1 measured and found failures (a block failed
// verification, fio reported an I/O error); 2 could not run (no fio, a path
// it cannot write, not enough free space, a symbolic link, usage).
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/allowed_files.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/storage/fio_job.h"
#include "benchmarks/storage/fio_result.h"
#include "benchmarks/storage/fio_runner.h"
#include "benchmarks/storage/fs_probe.h"
#include "benchmarks/storage/storage_run.h"
#include "benchmarks/storage/work_dir.h"
#include "benchmarks/suite.h"
#include "common/suite_flags.h"
#include "common/record_io.h"
#include "common/subprocess.h"

namespace cmax::bench {

int RunStorage(int argc, char** argv) {
  storage::Config cfg;
  std::string pattern = "all";
  bool buffered = false, direct_flag = false;
  SuiteFlags flags("storage", "cmax-bench", "--path DIR [--pattern NAME|all] [options]");
  flags.Bind("path", &cfg.path);
  flags.Bind("pattern", &pattern);
  flags.Bind("size", &cfg.size);
  flags.Bind("block-size", &cfg.block_size);
  flags.Bind("queue-depth", &cfg.queue_depth);
  flags.Bind("jobs", &cfg.jobs);
  flags.Bind("duration", &cfg.duration_s);
  flags.Bind("direct", &direct_flag);
  flags.Bind("buffered", &buffered);
  flags.Bind("verify", &cfg.verify);
  flags.Bind("files", &cfg.metadata_files);
  flags.Bind("keep", &cfg.keep);
  flags.Bind("shard-from", &cfg.shard_from);
  flags.extra().AddString("reuse", &cfg.reuse,
                          "use this kept cmax-storage-* directory under --path");
  flags.extra().AddFlag("jsonl", &cfg.jsonl, "write records as JSON lines");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  if (buffered && direct_flag) {
    std::fprintf(stderr, "storage: --direct and --buffered exclude each other\n");
    return kExitCouldNotRun;
  }
  cfg.want_direct = !buffered;
  if (pattern == "all") {
    cfg.patterns = storage::AllPatterns();
  } else {
    for (absl::string_view p : absl::StrSplit(pattern, ',', absl::SkipEmpty())) {
      std::string name(p);
      if (!storage::IsPattern(name)) {
        std::fprintf(stderr, "storage: unknown pattern '%s' (known: %s, all)\n", name.c_str(),
                     absl::StrJoin(storage::AllPatterns(), ", ").c_str());
        return kExitCouldNotRun;
      }
      if (std::find(cfg.patterns.begin(), cfg.patterns.end(), name) == cfg.patterns.end()) {
        cfg.patterns.push_back(name);
      }
    }
  }
  if (cfg.path.empty()) {
    // Run by the agent: its own storage dir (CMAX_STORAGE_DIR, the first of
    // its --storage-roots, by default <work-dir>/storage).
    if (const char* d = std::getenv(kStorageDirEnv); d && *d) cfg.path = d;
  }
  if (cfg.path.empty()) {
    std::fprintf(stderr, "storage: --path DIR is required (under the agent it defaults to "
                         "the agent's storage dir)\n");
    return kExitCouldNotRun;
  }
  if (cfg.size <= 0 || cfg.jobs < 1 || cfg.jobs > 1024 || cfg.queue_depth < 1 ||
      cfg.queue_depth > 4096 || cfg.duration_s < 0 || cfg.block_size < 0 ||
      cfg.metadata_files < 1) {
    std::fprintf(stderr,
                 "storage: --size, --jobs (1..1024), --queue-depth (1..4096), --files must be "
                 "positive and --duration, --block-size not negative\n");
    return kExitCouldNotRun;
  }
  if (!cfg.shard_from.empty() &&
      std::find(cfg.patterns.begin(), cfg.patterns.end(), "restore") == cfg.patterns.end()) {
    std::fprintf(stderr, "storage: --shard-from only applies to --pattern restore\n");
    return kExitCouldNotRun;
  }
  const char* node = std::getenv("CMAX_NODE_NAME");
  if (node == nullptr || *node == '\0') node = std::getenv("CMAX_NODE");
  if (node && *node) {
    cfg.node = node;
  } else {
    char host[HOST_NAME_MAX + 1] = {};
    gethostname(host, sizeof(host) - 1);
    cfg.node = host;
  }
  RecordWriter out("storage", cfg.jsonl ? stdout : nullptr);
  storage::StorageRun run(cfg, &out);
  return run.Run();
}

}  // namespace cmax::bench
