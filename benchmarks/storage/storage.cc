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
#include "common/args.h"
#include "common/record_io.h"
#include "common/subprocess.h"

namespace cmax::bench {

int RunStorage(int argc, char** argv) {
  storage::Config cfg;
  std::string pattern = "all";
  bool buffered = false, direct_flag = false;
  ArgParser args(
      "cmax-bench storage --path DIR [--pattern NAME|all] [options]",
      "Measures the storage under --path with fio: sequential and random reads and\n"
      "writes, metadata rates, checkpoint write and restore. Data is incompressible\n"
      "and non-repeating, every file is written before it is read, direct I/O is\n"
      "used where the file system allows it. The suite writes only inside\n"
      "<path>/cmax-storage-<node>-<pid>/ and removes it afterwards (also on\n"
      "SIGTERM/SIGINT) unless --keep is given.\n"
      "Patterns: seq-write, seq-read, rand-read, rand-write, metadata, checkpoint,\n"
      "restore, or all (a comma-separated list is accepted).\n"
      "Verification across runs: `--pattern seq-write --verify --keep` leaves the\n"
      "files; `--pattern seq-read --verify --reuse <that dir>` checks every block.\n"
      "Restore: `--pattern checkpoint --keep` on one node, then `--pattern restore\n"
      "--shard-from NODE` (or `next`: the next node by name with a kept shard) on\n"
      "another. Without --shard-from, restore reads this run's own checkpoint and\n"
      "says that the client cache may serve it.\n"
      "In a group task (scope barrier) every node lays out its files, waits at the\n"
      "rendezvous barrier storage/<pattern> and starts the measured run at its common\n"
      "instant; restore without --shard-from reads the shard of rank (rank+1) mod world.\n"
      "The node name (work directory, pairing) is $CMAX_NODE_NAME (set by the agent), else\n"
      "$CMAX_NODE, else the host name.");
  args.AddString("path", &cfg.path,
                 "directory to measure (required by hand; under the agent default "
                 "$CMAX_STORAGE_DIR, and only under its $CMAX_STORAGE_ROOTS, created there "
                 "when missing; never a system directory)");
  args.AddString("pattern", &pattern, "pattern(s) to run, or all (default all)");
  args.AddBytes("size", &cfg.size, "bytes per job and file (default 1G)");
  args.AddBytes("block-size", &cfg.block_size,
                "block size (default: 1M sequential, 4K random, 4M checkpoint/restore)");
  args.AddInt("queue-depth", &cfg.queue_depth, "I/O depth per job (default 16)");
  args.AddInt("jobs", &cfg.jobs, "parallel jobs, one file each (default 4)");
  args.AddDouble("duration", &cfg.duration_s,
                 "seconds per time-based pattern (default 30; seq/rand patterns)");
  args.AddFlag("direct", &direct_flag, "O_DIRECT where the file system allows it (default)");
  args.AddFlag("buffered", &buffered, "use the page cache (no O_DIRECT)");
  args.AddFlag("verify", &cfg.verify,
               "crc32c on every block; a bad block fails naming file and offset");
  args.AddInt("files", &cfg.metadata_files, "files per job for metadata (default 1000)");
  args.AddFlag("keep", &cfg.keep, "leave the work directory (for restore or --reuse)");
  args.AddString("reuse", &cfg.reuse, "use this kept cmax-storage-* directory under --path");
  args.AddString("shard-from", &cfg.shard_from,
                 "restore: read the shard kept by this node (or 'next')");
  args.AddFlag("jsonl", &cfg.jsonl, "write records as JSON lines");
  if (auto rc = ParseSuiteFlags(args, "storage", argc, argv)) return *rc;
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
