// The storage suite end to end: the real cmax-bench binary with fio on small
// temporary directories (8-16 MiB files, 1 s phases).
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "benchmarks/storage/work_dir.h"
#include "common/subprocess.h"
#include "tests/benchmarks/suite_run.h"

using namespace std::chrono_literals;

namespace {

std::string Bench() { return std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench"; }

bool HaveFio() { return !cmax::FindExecutable("fio").empty(); }

std::string TempDir() {
  char dir[] = "/tmp/cmax-storage-test-XXXXXX";
  REQUIRE(mkdtemp(dir));
  return dir;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  return out;
}

using cmax::testing::SuiteRun;

// Output captured up to 64 MiB (RunCommand keeps 1 MiB by default).
SuiteRun Run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "storage");
  return cmax::testing::RunSuite("cmax-bench", args, 300s, env, 64 << 20);
}

// The job=all measurement of `metric` for `pattern` (and op, when given).
const cmax::v1::Measurement* Total(const SuiteRun& r, const std::string& pattern,
                                   const std::string& metric, const std::string& op = "") {
  for (const auto& rec : r.records) {
    if (!rec.has_measurement()) continue;
    const auto& m = rec.measurement();
    const auto& l = m.labels();
    if (m.metric() == metric && l.at("pattern") == pattern && l.at("job") == "all" &&
        (op.empty() || l.at("op") == op)) {
      return &m;
    }
  }
  return nullptr;
}

// The value of a per-pattern instant (storage_start_ns, ...), or -1.
double Instant(const SuiteRun& r, const std::string& pattern, const std::string& metric,
               std::string* barrier = nullptr) {
  for (const auto& rec : r.records) {
    if (!rec.has_measurement() || rec.measurement().metric() != metric) continue;
    const auto& l = rec.measurement().labels();
    if (l.count("pattern") && l.at("pattern") == pattern) {
      if (barrier) *barrier = l.count("barrier") ? l.at("barrier") : "";
      return rec.measurement().value();
    }
  }
  return -1;
}

bool HasFinding(const SuiteRun& r, const std::string& check_id, std::string* text = nullptr) {
  for (const auto& rec : r.records) {
    if (rec.has_finding() && rec.finding().check_id() == check_id) {
      if (text) {
        *text = rec.finding().title() + " | " + rec.finding().detail();
        for (const auto& e : rec.finding().evidence()) *text += " | " + e;
      }
      return true;
    }
  }
  return false;
}

void CheckPercentiles(const SuiteRun& r, const std::string& pattern, const std::string& op = "") {
  auto* p50 = Total(r, pattern, "storage_lat_p50_us", op);
  auto* p99 = Total(r, pattern, "storage_lat_p99_us", op);
  auto* p999 = Total(r, pattern, "storage_lat_p99_9_us", op);
  REQUIRE(p50);
  REQUIRE(p99);
  REQUIRE(p999);
  CHECK(p50->value() > 0);
  CHECK(p50->value() <= p99->value());
  CHECK(p99->value() <= p999->value());
}

}  // namespace

TEST_CASE("every pattern on a temporary directory gives sane records", "[storage][fio]") {
  if (!HaveFio()) {
    FAIL("fio is not installed (deploy/install-deps.sh installs it)");
  }
  std::string base = TempDir();
  auto r = Run({"--path", base, "--pattern", "all", "--size", "8M", "--jobs", "2",
                "--duration", "1", "--files", "50", "--queue-depth", "4", "--jsonl"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  for (const char* p : {"seq-write", "seq-read", "rand-read", "rand-write", "checkpoint",
                        "restore"}) {
    INFO(p);
    auto* bw = Total(r, p, "storage_bandwidth_mbps");
    auto* iops = Total(r, p, "storage_iops");
    REQUIRE(bw);
    REQUIRE(iops);
    CHECK(bw->value() > 0);
    CHECK(iops->value() > 0);
    CHECK(bw->unit() == "MB/s");
    CheckPercentiles(r, p);
    const auto& l = bw->labels();
    for (const char* key : {"block_size", "queue_depth", "jobs", "direct", "engine", "fs_type",
                            "mount_source", "storage_class", "start_unix_ns", "end_unix_ns"}) {
      CHECK(l.count(key) == 1);
    }
    int64_t start = 0, end = 0;
    REQUIRE(absl::SimpleAtoi(l.at("start_unix_ns"), &start));
    REQUIRE(absl::SimpleAtoi(l.at("end_unix_ns"), &end));
    CHECK(start < end);
    CHECK(l.at("jobs") == "2");
    CHECK(l.at("fs_type") != "");
    // Bytes / second agree with what fio moved in the measured window (a
    // rough cross-check of the unit: MB/s = 1e6 B/s).
    double bytes = 0;
    REQUIRE(absl::SimpleAtod(l.at("io_bytes"), &bytes));
    CHECK(bytes > 0);
    CHECK(bw->value() * 1e6 * ((end - start) / 1e9) >= bytes * 0.3);
    // Standalone: the phase's instants, no barrier (ready = start), and the
    // judge's start/end labels are the same instants.
    std::string barrier;
    double prepare = Instant(r, p, "storage_prepare_ns", &barrier);
    double ready = Instant(r, p, "storage_ready_ns");
    double started = Instant(r, p, "storage_start_ns");
    double ended = Instant(r, p, "storage_end_ns");
    CHECK(barrier == "none");
    CHECK(prepare > 0);
    CHECK(prepare <= ready);
    CHECK(ready == started);
    CHECK(started < ended);
    CHECK(std::abs(started - static_cast<double>(start)) < 1e4);
    CHECK(std::abs(ended - static_cast<double>(end)) < 1e4);
  }
  for (const char* op : {"create", "stat", "delete"}) {
    INFO(op);
    auto* ops = Total(r, "metadata", "storage_metadata_ops", op);
    REQUIRE(ops);
    CHECK(ops->value() > 0);
    CHECK(ops->unit() == "ops/s");
    // Data patterns only: storage_iops is one unit, IOPS.
    CHECK(Total(r, "metadata", "storage_iops", op) == nullptr);
    CheckPercentiles(r, "metadata", op);
  }
  CHECK(Total(r, "checkpoint", "storage_checkpoint_seconds") != nullptr);
  auto* restore = Total(r, "restore", "storage_restore_seconds");
  REQUIRE(restore);
  CHECK(restore->labels().at("cache_note") == "client cache may serve this read");
  CHECK(HasFinding(r, "storage.restore_local_shard"));
  // The job files are kept as artifacts so anyone can rerun them.
  std::set<std::string> artifacts;
  for (const auto& rec : r.records) {
    if (rec.has_artifact()) {
      artifacts.insert(rec.artifact().name());
      CHECK(rec.artifact().media_type() == "text/plain");
    }
  }
  CHECK(artifacts.count("seq-read.fio") == 1);
  CHECK(artifacts.count("seq-write-layout.fio") == 1);
  CHECK(artifacts.count("metadata.fio") == 1);
  CHECK(Entries(base).empty());  // the work directory is gone
  rmdir(base.c_str());
}

TEST_CASE("verify (crc32c) finds a block corrupted between write and read", "[storage][fio]") {
  if (!HaveFio()) {
    FAIL("fio is not installed");
  }
  std::string base = TempDir();
  auto w = Run({"--path", base, "--pattern", "seq-write", "--verify", "--keep", "--size", "8M",
                "--jobs", "1", "--jsonl"});
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  auto kept = Entries(base);
  REQUIRE(kept.size() == 1);
  std::string dir = base + "/" + kept[0];
  std::string file = dir + "/files/data.0.0";

  // An intact file passes.
  auto ok = Run({"--path", base, "--pattern", "seq-read", "--verify", "--reuse", dir, "--keep",
                 "--size", "8M", "--jobs", "1", "--jsonl"});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK_FALSE(HasFinding(ok, "storage.verify_failed"));

  {  // 64 bytes inside the third 1 MiB block
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(f);
    f.seekp(2 * (1 << 20) + 4000);
    std::string junk(64, '\x5a');
    f.write(junk.data(), junk.size());
  }
  auto bad = Run({"--path", base, "--pattern", "seq-read", "--verify", "--reuse", dir, "--size",
                  "8M", "--jobs", "1", "--jsonl"});
  INFO(bad.err);
  CHECK(bad.exit_code == 1);
  std::string text;
  REQUIRE(HasFinding(bad, "storage.verify_failed", &text));
  INFO(text);
  CHECK(absl::StrContains(text, file));
  CHECK(absl::StrContains(text, "offset 2097152"));
  CHECK(Entries(base).empty());  // removed without --keep
  rmdir(base.c_str());
}

TEST_CASE("a path it cannot write is refused and nothing is left", "[storage][fio]") {
  if (!HaveFio()) {
    FAIL("fio is not installed");
  }
  auto before = Entries("/proc");
  auto r = Run({"--path", "/proc", "--pattern", "seq-write", "--size", "8M", "--jobs", "1"});
  CHECK(r.exit_code == 2);
  CHECK(absl::StrContains(r.err, "/proc"));
  for (const auto& e : Entries("/proc")) CHECK_FALSE(absl::StartsWith(e, "cmax-storage-"));

  auto missing = Run({"--path", "/nonexistent-cmax-dir", "--pattern", "seq-write"});
  CHECK(missing.exit_code == 2);
  CHECK(absl::StrContains(missing.err, "/nonexistent-cmax-dir"));
}

TEST_CASE("symbolic links out of the work directory are refused", "[storage][fio]") {
  if (!HaveFio()) {
    FAIL("fio is not installed");
  }
  std::string base = TempDir();
  std::string outside = TempDir();
  std::string victim = outside + "/data.0.0";
  std::ofstream(victim) << std::string(16 << 20, 'v');
  // 1. A reused "work directory" that is a link to somewhere else.
  REQUIRE(symlink(outside.c_str(), (base + "/cmax-storage-evil-1").c_str()) == 0);
  auto r = Run({"--path", base, "--pattern", "seq-read", "--reuse",
                base + "/cmax-storage-evil-1", "--size", "8M", "--jobs", "1"});
  CHECK(r.exit_code == 2);
  CHECK(absl::StrContains(r.err, "symbolic link"));
  // 2. A link planted inside a real work directory.
  std::string dir = base + "/cmax-storage-evil-2";
  REQUIRE(mkdir(dir.c_str(), 0700) == 0);
  REQUIRE(mkdir((dir + "/files").c_str(), 0700) == 0);
  REQUIRE(symlink(victim.c_str(), (dir + "/files/data.0.0").c_str()) == 0);
  r = Run({"--path", base, "--pattern", "seq-write", "--reuse", dir, "--size", "8M", "--jobs",
           "1"});
  CHECK(r.exit_code == 2);
  CHECK(absl::StrContains(r.err, "symbolic link"));
  CHECK(absl::StrContains(r.err, victim));
  // The target is untouched and the suite created nothing.
  std::ifstream in(victim, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == std::string(16 << 20, 'v'));
  auto entries = Entries(base);
  CHECK(entries.size() == 2);  // the test's own two entries
  cmax::storage::RemoveTree(base).IgnoreError();
  cmax::storage::RemoveTree(outside).IgnoreError();
}

TEST_CASE("a size beyond the free space is refused with the figures", "[storage][fio]") {
  if (!HaveFio()) {
    FAIL("fio is not installed");
  }
  std::string base = TempDir();
  auto r = Run({"--path", base, "--pattern", "seq-write", "--size", "900T", "--jobs", "4",
                "--jsonl"});
  CHECK(r.exit_code == 2);
  CHECK(absl::StrContains(r.err, "not enough free space"));
  CHECK(absl::StrContains(r.err, "free"));
  CHECK(absl::StrContains(r.err, "TiB"));
  CHECK(HasFinding(r, "storage.not_enough_space"));
  for (const auto& rec : r.records) CHECK_FALSE(rec.has_measurement());
  CHECK(Entries(base).empty());
  rmdir(base.c_str());
}

TEST_CASE("SIGTERM mid-run stops fio and removes the work directory", "[storage][fio]") {
  if (!HaveFio()) {
    FAIL("fio is not installed");
  }
  std::string base = TempDir();
  cmax::SpawnOptions opts;
  opts.argv = {Bench(), "storage", "--path", base, "--pattern", "seq-read", "--size", "16M",
               "--jobs", "1", "--duration", "60"};
  auto child = cmax::Subprocess::Spawn(opts);
  REQUIRE(child.ok());
  // Wait for the measured phase: its job file appears in the work directory.
  bool measuring = false;
  for (int i = 0; i < 300 && !measuring; ++i) {
    for (const auto& e : Entries(base)) {
      struct stat st;
      if (stat((base + "/" + e + "/seq-read.fio").c_str(), &st) == 0) measuring = true;
    }
    std::this_thread::sleep_for(50ms);
  }
  REQUIRE(measuring);
  std::this_thread::sleep_for(300ms);
  auto start = std::chrono::steady_clock::now();
  kill((*child)->pid(), SIGTERM);
  cmax::ExitInfo info = (*child)->Wait();
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK_FALSE(info.exited);
  CHECK(info.signal == SIGTERM);
  CHECK(Entries(base).empty());
  rmdir(base.c_str());
}

TEST_CASE("without fio on PATH the suite exits 2 and says why", "[storage]") {
  std::string base = TempDir();
  auto r = Run({"--path", base, "--pattern", "seq-read", "--jsonl"}, {{"PATH", "/nonexistent"}});
  CHECK(r.exit_code == 2);
  CHECK(absl::StrContains(r.err, "fio not found: install the fio package"));
  std::string text;
  CHECK(HasFinding(r, "storage.fio_missing", &text));
  CHECK(absl::StrContains(text, "not measured"));
  for (const auto& rec : r.records) CHECK_FALSE(rec.has_measurement());
  CHECK(Entries(base).empty());
  rmdir(base.c_str());
}

TEST_CASE("a rank whose rendezvous cannot be reached does not measure unsynchronised",
          "[storage][fio]") {
  if (!HaveFio()) {
    FAIL("fio is not installed (deploy/install-deps.sh installs it)");
  }
  std::string base = TempDir();
  auto r = Run({"--path", base, "--pattern", "seq-write", "--size", "8M", "--jobs", "1",
                "--duration", "1", "--jsonl"},
               {{"CMAX_RENDEZVOUS", "unix:" + base + "/no-such-socket"}, {"CMAX_RANK", "0"},
                {"CMAX_WORLD_SIZE", "2"}, {"CMAX_GROUP", "g"}});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  std::string text;
  CHECK(HasFinding(r, "storage.rendezvous_failed", &text));
  CHECK(absl::StrContains(text, "common start"));
  for (const auto& rec : r.records) CHECK_FALSE(rec.has_measurement());
  CHECK(Entries(base).empty());
  rmdir(base.c_str());
}
