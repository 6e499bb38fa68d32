// Storage through fio (benchmarks/storage): honest data, direct I/O where
// allowed; with scope barrier every node starts its measured phase at once.
#include "common/suite_declaration.h"

#include "absl/strings/str_cat.h"

namespace cmax::suites::storage {

using v1::SCOPE_BARRIER;
using v1::SCOPE_NODE;

namespace {

// "storage:<pattern> <op>": one bar chart per pattern and operation, a bar
// per node (its total over jobs, job=all), the aggregate in the note.
bool StorageChart(const v1::Measurement& m, const std::string&, const std::string&,
                  ChartNames* out) {
  if (ChartLabel(m, "job") != "all") return false;
  const std::string pattern = ChartLabel(m, "pattern");
  const std::string op = ChartLabel(m, "op");
  out->id = absl::StrCat("storage:", pattern, " ", op);
  out->title = absl::StrCat("Storage ", pattern, " (", op, ") per node");
  return true;
}

}  // namespace

SuiteInfo Declaration() {
  return {
    .name = "storage",
    .binary = "cmax-bench",
    .category = "storage",
    .help = "storage bandwidth, IOPS, latency, metadata, checkpoint and restore through fio",
    .details =
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
        "$CMAX_NODE, else the host name.\n"
        "A group's figures are aggregated over the window in which all its nodes were\n"
        "active. More: benchmarks/storage/README.md.",
    .scopes = {SCOPE_NODE, SCOPE_BARRIER},
    .default_timeout_s = 3600,
    .exclusive = true,
    .params =
        {
            {.name = "path", .type = ParamType::kPath, .help = "directory to measure (required by hand; under the agent default $CMAX_STORAGE_DIR, and only under its $CMAX_STORAGE_ROOTS, created there when missing; never a system directory)",
             .path_use = ParamSpec::PathUse::kStorageDir},
            {.name = "pattern", .type = ParamType::kEnumList, .help = "pattern(s) to run, or all (default all)",
             .choices = {"seq-write", "seq-read", "rand-read", "rand-write", "metadata",
                         "checkpoint", "restore", "all"}},
            {.name = "size", .type = ParamType::kBytes, .help = "bytes per job and file (default 1G)",
             .min = 4096, .max = 1e15},
            {.name = "block-size", .type = ParamType::kBytes, .help = "block size (default: 1M sequential, 4K random, 4M checkpoint/restore)",
             .min = 512, .max = 1 << 30},
            {.name = "queue-depth", .type = ParamType::kInt, .help = "I/O depth per job (default 16)",
             .min = 1, .max = 4096},
            {.name = "jobs", .type = ParamType::kInt, .help = "parallel jobs, one file each (default 4)",
             .min = 1, .max = 1024},
            {.name = "duration", .type = ParamType::kNumber,
             .help = "seconds per time-based pattern (default 30; seq/rand patterns)", .min = 1, .max = 86400},
            {.name = "files", .type = ParamType::kInt, .help = "files per job for metadata (default 1000)",
             .min = 1, .max = 10000000},
            {.name = "direct", .type = ParamType::kFlag, .help = "O_DIRECT where the file system allows it (default)"},
            {.name = "buffered", .type = ParamType::kFlag, .help = "use the page cache (no O_DIRECT)"},
            {.name = "verify", .type = ParamType::kFlag, .help = "crc32c on every block; a bad block fails naming file and offset"},
            {.name = "keep", .type = ParamType::kFlag,
             .help = "leave the files (a checkpoint for another node's restore)"},
            {.name = "shard-from", .type = ParamType::kToken,
             .help = "restore: the node whose kept shard to read, or 'next'"},
        },
    // job: one fio job's figure ("0", "1", ...) and the node's total ("all").
    .metrics =
        {
            // Identical clients of one file system differ by 10-20% from
            // run to run (page cache, the server's other clients, a loaded
            // host): a node is a storage outlier (fleet judge, straggler)
            // only 25% off the median, in bandwidth, IOPS and metadata rate.
            // Only nodes' totals are compared: the jobs of one node share
            // its disk and client, and one job below its siblings is fio's
            // scheduling, not the node (a loaded 3-node run failed a node
            // on one slow job while its total was in line).
            {.name = "storage_bandwidth_mbps", .unit = "MB/s", .fleet = true,
             .fleet_group_keys = {"pattern", "op", "job"}, .fleet_min_margin = 0.25,
             .fleet_totals_only = true,
             .help = "fio bandwidth of one pattern and operation, per job and in all",
             .chart = {.kind = ChartKind::kPerSubject, .names = StorageChart,
                       .labels = {"job", "pattern", "op"},
                       .family = "Storage per pattern per node",
                       .family_needs = "storage_bandwidth_mbps (job=all)",
                       .total_note = true}},
            // Every other metric the suite writes (the declarations test reads them all).
            {.name = "storage_iops", .unit = "IOPS", .better = MetricBetter::kHigher,
             .fleet_min_margin = 0.25,
             .help = "I/O operations a second of the data patterns"},
            {.name = "storage_metadata_ops", .unit = "ops/s", .better = MetricBetter::kHigher,
             .fleet_min_margin = 0.25,
             .help = "file creates, stats or deletes a second (the metadata pattern, per op)"},
            {.name = "storage_lat_p50_us", .unit = "us", .better = MetricBetter::kLower,
             .help = "median completion latency"},
            {.name = "storage_lat_p99_us", .unit = "us", .better = MetricBetter::kLower,
             .help = "99th percentile completion latency"},
            {.name = "storage_lat_p99_9_us", .unit = "us", .better = MetricBetter::kLower,
             .help = "99.9th percentile completion latency"},
            {.name = "storage_checkpoint_seconds", .unit = "s", .better = MetricBetter::kLower,
             .help = "time to write the checkpoint to durability"},
            {.name = "storage_restore_seconds", .unit = "s", .better = MetricBetter::kLower,
             .help = "time to read a checkpoint shard back"},
            {.name = "storage_prepare_ns", .unit = "ns", .better = MetricBetter::kNeither,
             .help = "when the node began preparing the pattern (unix ns, its clock)"},
            {.name = "storage_ready_ns", .unit = "ns", .better = MetricBetter::kNeither,
             .help = "when the node was ready to start (unix ns)"},
            {.name = "storage_start_ns", .unit = "ns", .better = MetricBetter::kNeither,
             .help = "when the node started the pattern (unix ns)"},
            {.name = "storage_end_ns", .unit = "ns", .better = MetricBetter::kNeither,
             .help = "when the node ended the pattern (unix ns)"},
        },
  };
}

}  // namespace cmax::suites::storage
