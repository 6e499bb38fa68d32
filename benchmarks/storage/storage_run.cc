#include "benchmarks/storage/storage_run.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "benchmarks/storage/fs_probe.h"
#include "benchmarks/storage/work_dir.h"
#include "benchmarks/suite.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "common/sysroot.h"
#include "common/time_util.h"

namespace cmax::storage {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024 && u < 5) {
    b /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", b, units[u]);
}

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

bool IsPseudoFs(const std::string& type) {
  static const char* kPseudo[] = {"proc", "sysfs", "devpts", "cgroup", "cgroup2", "debugfs",
                                  "tracefs", "securityfs", "pstore", "bpf", "configfs",
                                  "mqueue", "fusectl", "binfmt_misc", "autofs", "devtmpfs"};
  for (const char* p : kPseudo) {
    if (type == p) return true;
  }
  return false;
}

bool FileSize(const std::string& path, int64_t* size) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *size = st.st_size;
  return true;
}

v1::Finding MakeFinding(const std::string& check_id, v1::Severity severity,
                        const std::string& subject, const std::string& title,
                        const std::string& detail) {
  v1::Finding f;
  f.set_check_id(check_id);
  f.set_severity(severity);
  f.set_category("storage");
  f.set_subject(subject);
  f.set_title(title);
  f.set_detail(detail);
  return f;
}

// Sleeps until `target` (unix ns, this host's clock) in steps of at most
// 100 ms so an interrupt is noticed; returns early when one arrives.
void SleepUntilUnixNs(int64_t target) {
  for (;;) {
    int64_t left = target - NowUnixNs();
    if (left <= 0 || InterruptSignal()) return;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 100000000)));
  }
}

}  // namespace

int StorageRun::CouldNotRun(const std::string& check_id, const std::string& title,
                            const std::string& detail) {
  std::fprintf(stderr, "storage: %s\n  %s\n", title.c_str(), detail.c_str());
  out_->Log("error", absl::StrCat("not measured: ", title, ": ", detail));
  v1::Finding f = MakeFinding(check_id, v1::SEVERITY_WARN, absl::StrCat("path:", cfg_.path),
                              title, absl::StrCat("storage not measured: ", detail));
  f.set_not_measured(true);  // could not run: never a pass nor a grade (record.proto)
  out_->Find(f);
  if (!work_.empty() && own_work_) {
    (void)RemoveTree(work_);
    work_.clear();
  }
  return bench::kExitCouldNotRun;
}

void StorageRun::DieInterrupted() {
  int sig = InterruptSignal();
  std::string what = "nothing to remove";
  if (!work_.empty() && !(cfg_.keep && !own_work_)) {
    absl::Status s = RemoveTree(work_);
    what = s.ok() ? absl::StrCat("removed ", work_)
                  : absl::StrCat("could not remove ", work_, ": ", s.message());
  }
  std::fprintf(stderr, "storage: interrupted by signal %d; fio stopped; %s\n", sig,
               what.c_str());
  out_->Log("warn", absl::StrCat("interrupted by signal ", sig, "; fio stopped; ", what));
  ReraiseInterrupt(sig);
}

absl::Status StorageRun::Probe() {
  auto base = ResolveBase(cfg_.path);
  if (!base.ok()) return base.status();
  base_ = *base;
  auto mount = MountOf(Sysroot("/"), base_);
  if (mount.ok()) {
    fs_type_ = mount->fs_type;
    mount_source_ = mount->source;
    mount_point_ = mount->mount_point;
  }
  auto magic = StatfsMagic(base_);
  if (magic.ok()) fs_magic_ = FsTypeFromMagic(*magic);
  if (fs_type_.empty()) fs_type_ = fs_magic_.empty() ? "unknown" : fs_magic_;
  if (IsPseudoFs(fs_type_) || fs_magic_ == "proc" || fs_magic_ == "sysfs") {
    return absl::FailedPreconditionError(absl::StrCat(
        "--path ", cfg_.path, " is on ", fs_type_,
        ", a pseudo file system that cannot hold the suite's files"));
  }
  storage_class_ = StorageClass(fs_type_, mount_source_);
  return absl::OkStatus();
}

int64_t StorageRun::BytesNeeded() const {
  auto has = [&](const std::string& p) {
    return std::find(cfg_.patterns.begin(), cfg_.patterns.end(), p) != cfg_.patterns.end();
  };
  int64_t need = 0;
  bool data = has("seq-write") || has("seq-read") || has("rand-read") || has("rand-write");
  if (data && cfg_.reuse.empty()) need += cfg_.size * cfg_.jobs;
  // A rank of a group of two or more restores another node's shard (PairShard).
  const char* world = std::getenv("CMAX_WORLD_SIZE");
  const bool paired = std::getenv("CMAX_RENDEZVOUS") && world && std::atoi(world) > 1;
  if (has("checkpoint") || (has("restore") && cfg_.shard_from.empty() && !paired)) {
    need += cfg_.size * cfg_.jobs;
  }
  if (has("metadata")) need += cfg_.metadata_files * cfg_.jobs * 4096;
  return need;
}

JobSpec StorageRun::SpecFor(const std::string& pattern) const {
  JobSpec s;
  s.pattern = pattern;
  // Not "<work>/data": fio runs in <work>, and a job named "data" whose name
  // is an existing entry of the current directory would use that entry as
  // its file (fio 3.33 does so) instead of data.<job>.<file>.
  s.dir = absl::StrCat(work_, "/files");
  s.size_bytes = cfg_.size;
  s.block_size = cfg_.block_size;
  s.queue_depth = static_cast<int>(cfg_.queue_depth);
  s.jobs = static_cast<int>(cfg_.jobs);
  s.duration_s = cfg_.duration_s;
  s.direct = direct_;
  s.engine = engine_;
  s.verify = cfg_.verify;
  s.bw_log = pattern != "metadata";
  s.bw_log_prefix = pattern;
  s.metadata_files = static_cast<int>(cfg_.metadata_files);
  if (pattern == "checkpoint" || pattern == "restore") s.dir = absl::StrCat(work_, "/checkpoint");
  if (pattern == "metadata") {
    for (int j = 0; j < s.jobs; ++j) s.metadata_dirs.push_back(absl::StrCat(work_, "/meta/", j));
  }
  return s;
}

std::map<std::string, std::string> StorageRun::Labels(const JobSpec& spec) const {
  std::map<std::string, std::string> l = {
      {"pattern", spec.pattern},
      {"block_size", absl::StrCat(spec.pattern == "metadata" ? 4096 : EffectiveBlockSize(spec))},
      {"queue_depth", absl::StrCat(spec.queue_depth)},
      {"jobs", absl::StrCat(spec.jobs)},
      {"direct", spec.direct ? "true" : "false"},
      {"engine", spec.pattern == "metadata" ? "filecreate/filestat/filedelete" : spec.engine},
      {"fs_type", fs_type_},
      {"mount_source", mount_source_},
      {"mount_point", mount_point_},
      {"storage_class", storage_class_},
      {"path", base_},
      {"size_bytes", absl::StrCat(spec.size_bytes)},
      {"host", cfg_.node},
      {"fio_version", fio_version_},
      {"verify", spec.verify ? "crc32c" : "none"},
      {"time_based", IsTimeBased(spec) ? "true" : "false"},
  };
  if (spec.engine == "psync" && spec.pattern != "metadata") l["effective_queue_depth"] = "1";
  return l;
}

StorageRun::Outcome StorageRun::CheckFioRun(const FioRun& run, const std::string& what,
                                            FioReport* report) {
  if (run.interrupted) DieInterrupted();
  std::string cmd = absl::StrCat(fio_, " --output-format=json ", run.job_path);
  std::vector<VerifyError> bad = ParseVerifyErrors(run.err);
  auto parsed = ParseFioJson(run.json);
  if (!bad.empty()) {
    for (size_t i = 0; i < bad.size() && i < 10; ++i) {
      v1::Finding f = MakeFinding(
          "storage.verify_failed", v1::SEVERITY_FAIL, absl::StrCat("path:", bad[i].file),
          absl::StrCat("corrupted or misplaced block in ", bad[i].file, " at offset ",
                       bad[i].offset),
          absl::StrCat(what, ": fio's crc32c check of a block read back failed"));
      f.add_evidence(bad[i].line);
      f.add_evidence(absl::StrCat("command: ", cmd));
      f.add_evidence(absl::StrCat("fio stderr (tail): ", Tail(run.err, 2000)));
      f.set_action("check the storage for silent corruption (controller, network, file system)");
      out_->Find(f);
      std::fprintf(stderr, "storage: FAIL verify: %s offset %lld (%s)\n", bad[i].file.c_str(),
                   static_cast<long long>(bad[i].offset), what.c_str());
    }
    ++failures_;
    return Outcome::kFailed;
  }
  if (run.timed_out) {
    v1::Finding f = MakeFinding("storage.fio_timeout", v1::SEVERITY_FAIL,
                                absl::StrCat("path:", base_),
                                absl::StrCat(what, ": fio did not finish in time"),
                                "fio was killed at its timeout; the storage may be hanging");
    f.add_evidence(absl::StrCat("command: ", cmd));
    f.add_evidence(absl::StrCat("fio stderr (tail): ", Tail(run.err, 2000)));
    out_->Find(f);
    ++failures_;
    return Outcome::kFailed;
  }
  if (!parsed.ok()) {
    std::string detail = absl::StrCat(what, ": fio ", run.exit.Describe(), ", ",
                                      parsed.status().message(), "; stderr: ",
                                      Tail(run.err, 1500));
    std::fprintf(stderr, "storage: %s\n", detail.c_str());
    v1::Finding f = MakeFinding("storage.fio_failed", v1::SEVERITY_WARN,
                                absl::StrCat("path:", base_),
                                absl::StrCat(what, " not measured: fio failed"), detail);
    f.set_not_measured(true);
    f.add_evidence(absl::StrCat("command: ", cmd));
    out_->Find(f);
    return Outcome::kCouldNotRun;
  }
  for (const FioJob& j : parsed->jobs) {
    if (j.error != 0 || !run.exit.exited || run.exit.code != 0) {
      v1::Finding f = MakeFinding(
          "storage.io_error", v1::SEVERITY_FAIL, absl::StrCat("path:", base_),
          absl::StrCat(what, ": fio reported an I/O error"),
          absl::StrCat("job ", j.name, " error ", j.error, " (", strerror(j.error),
                       "), fio ", run.exit.Describe()));
      f.add_evidence(absl::StrCat("command: ", cmd));
      f.add_evidence(absl::StrCat("fio stderr (tail): ", Tail(run.err, 2000)));
      out_->Find(f);
      std::fprintf(stderr, "storage: FAIL %s: fio job %s error %d; %s\n", what.c_str(),
                   j.name.c_str(), j.error, Tail(run.err, 500).c_str());
      ++failures_;
      return Outcome::kFailed;
    }
  }
  *report = std::move(*parsed);
  return Outcome::kOk;
}

StorageRun::Outcome StorageRun::Layout(const JobSpec& spec, const std::string& what) {
  std::string text = LayoutJobFile(spec);
  out_->Artifact(absl::StrCat(spec.pattern, "-layout.fio"), "text/plain", text);
  out_->Progress(spec.pattern, 0, absl::StrCat("laying out ", spec.jobs, " x ",
                                               HumanBytes(spec.size_bytes), " (", what, ")"));
  int64_t bytes = spec.size_bytes * spec.jobs;
  auto run = RunFio(fio_, work_, absl::StrCat(spec.pattern, "-layout"), text,
                    std::chrono::seconds(120 + bytes / 10000000));
  if (!run.ok()) {
    CouldNotRun("storage.fio_failed", "fio could not be started", std::string(run.status().message()));
    return Outcome::kCouldNotRun;
  }
  FioReport report;
  return CheckFioRun(*run, absl::StrCat(spec.pattern, " layout"), &report);
}

StorageRun::Outcome StorageRun::Measure(const JobSpec& spec, const std::string& what) {
  std::string text = MeasuredJobFile(spec);
  out_->Artifact(absl::StrCat(spec.pattern, ".fio"), "text/plain", text);
  out_->Progress(spec.pattern, 0, absl::StrCat("measuring ", what));
  int64_t limit = IsTimeBased(spec)
                      ? static_cast<int64_t>(spec.duration_s) + 120
                      : 120 + spec.size_bytes * spec.jobs / 10000000 *
                                  (spec.verify ? 2 : 1);
  if (spec.pattern == "metadata") limit = 120 + spec.metadata_files * spec.jobs / 100;
  if (auto s = SyncStart(spec.pattern); !s.ok()) {
    std::fprintf(stderr, "storage: %s not measured: %s\n", spec.pattern.c_str(),
                 std::string(s.message()).c_str());
    v1::Finding f = MakeFinding("storage.barrier_failed", v1::SEVERITY_WARN,
                                absl::StrCat("path:", base_),
                                absl::StrCat(spec.pattern, " not measured: no common start"),
                                absl::StrCat("rendezvous barrier storage/", spec.pattern, ": ",
                                             s.message()));
    f.set_not_measured(true);
    out_->Find(f);
    return Outcome::kCouldNotRun;
  }
  if (InterruptSignal()) DieInterrupted();
  auto run = RunFio(fio_, work_, spec.pattern, text, std::chrono::seconds(limit));
  if (!run.ok()) {
    CouldNotRun("storage.fio_failed", "fio could not be started", std::string(run.status().message()));
    return Outcome::kCouldNotRun;
  }
  // The measured phase runs from the (common) start instant to fio's exit;
  // the totals' start_unix_ns / end_unix_ns labels say the same.
  run->start_unix_ns = times_.start;
  times_.end = run->end_unix_ns;
  EmitTimes(spec.pattern);
  FioReport report;
  Outcome o = CheckFioRun(*run, spec.pattern, &report);
  if (o != Outcome::kOk) return o;
  if (spec.pattern == "metadata") {
    EmitMetadata(spec, report);
  } else {
    Emit(spec, *run, report);
  }
  out_->Progress(spec.pattern, 1, "done");
  return Outcome::kOk;
}

void StorageRun::Emit(const JobSpec& spec, const FioRun& run, const FioReport& report) {
  const bool reads = IsReadPattern(spec.pattern);
  std::map<std::string, std::string> base = Labels(spec);
  base["op"] = reads ? "read" : "write";
  if (spec.pattern == "restore") {
    base["shard_from"] = restore_from_.empty() ? cfg_.node : restore_from_;
    base["shard_dir"] = spec.dir;
    if (!restore_from_rank_.empty()) base["shard_from_rank"] = restore_from_rank_;
    if (restore_from_.empty()) base["cache_note"] = "client cache may serve this read";
  }
  double sum_bw = 0, sum_iops = 0, max_p50 = 0, max_p99 = 0, max_p999 = 0;
  int64_t bytes = 0, max_runtime_ms = 0;
  bool have_pct = false;
  std::string lat_kind;
  for (size_t i = 0; i < report.jobs.size(); ++i) {
    const FioJob& j = report.jobs[i];
    const DirStats& d = reads ? j.read : j.write;
    auto l = base;
    l["job"] = absl::StrCat(i);
    out_->Measure("storage_bandwidth_mbps", d.bw_bytes / 1e6, "MB/s", l);
    out_->Measure("storage_iops", d.iops, "IOPS", l);
    if (d.have_percentiles) {
      l["latency"] = d.latency_kind;
      out_->Measure("storage_lat_p50_us", d.p50_us, "us", l);
      out_->Measure("storage_lat_p99_us", d.p99_us, "us", l);
      out_->Measure("storage_lat_p99_9_us", d.p99_9_us, "us", l);
      have_pct = true;
      lat_kind = d.latency_kind;
      max_p50 = std::max(max_p50, d.p50_us);
      max_p99 = std::max(max_p99, d.p99_us);
      max_p999 = std::max(max_p999, d.p99_9_us);
    }
    sum_bw += d.bw_bytes;
    sum_iops += d.iops;
    bytes += d.io_bytes;
    max_runtime_ms = std::max(max_runtime_ms, j.job_runtime_ms);
  }
  auto total = base;
  total["job"] = "all";
  total["start_unix_ns"] = absl::StrCat(run.start_unix_ns);
  total["end_unix_ns"] = absl::StrCat(run.end_unix_ns);
  total["io_bytes"] = absl::StrCat(bytes);
  double total_mbps = sum_bw / 1e6;
  const bool once = spec.pattern == "checkpoint" || spec.pattern == "restore";
  if (once && max_runtime_ms > 0) {
    // One pass over the shards: the node's figure is every byte over the
    // slowest job's time (to durability, for the checkpoint).
    total_mbps = static_cast<double>(bytes) / (max_runtime_ms / 1e3) / 1e6;
    total["method"] = "bytes of all jobs / slowest job's runtime";
  } else {
    total["method"] = "sum of the jobs' bandwidths";
  }
  // Per-second bandwidth (fio logs with Unix timestamps): the judge sums
  // nodes over the seconds in which all of them were active.
  std::vector<std::string> logs;
  for (int j = 1; j <= spec.jobs; ++j) {
    std::ifstream in(absl::StrCat(work_, "/", spec.bw_log_prefix, "_bw.", j, ".log"));
    if (!in) continue;
    std::ostringstream ss;
    ss << in.rdbuf();
    logs.push_back(ss.str());
  }
  if (auto series = SumBwLogs(logs); series.ok()) {
    total["bw_series_mbps"] = FormatSeries(series->mbps);
    total["bw_series_start_unix_ms"] = absl::StrCat(series->start_unix_ms);
    total["bw_series_step_ms"] = absl::StrCat(series->step_ms);
  }
  out_->Measure("storage_bandwidth_mbps", total_mbps, "MB/s", total);
  out_->Measure("storage_iops", sum_iops, "IOPS", total);
  if (have_pct) {
    total["latency"] = lat_kind;
    total["latency_total"] = "highest job percentile (upper bound of the merged percentile)";
    out_->Measure("storage_lat_p50_us", max_p50, "us", total);
    out_->Measure("storage_lat_p99_us", max_p99, "us", total);
    out_->Measure("storage_lat_p99_9_us", max_p999, "us", total);
  }
  Row row{spec.pattern, base["op"], total_mbps, sum_iops, max_p50, max_p99, max_p999, ""};
  if (spec.pattern == "checkpoint") {
    out_->Measure("storage_checkpoint_seconds", max_runtime_ms / 1e3, "s", total);
    row.extra = absl::StrFormat("%.2f s to durable", max_runtime_ms / 1e3);
  } else if (spec.pattern == "restore") {
    out_->Measure("storage_restore_seconds", max_runtime_ms / 1e3, "s", total);
    row.extra = absl::StrFormat("%.2f s, shard of %s", max_runtime_ms / 1e3,
                                base["shard_from"]);
  }
  rows_.push_back(row);
}

void StorageRun::EmitMetadata(const JobSpec& spec, const FioReport& report) {
  // fio accounts the file engines' operations as reads.
  for (const char* op : {"create", "stat", "delete"}) {
    double iops = 0, p50 = 0, p99 = 0, p999 = 0;
    int n = 0;
    for (const FioJob& j : report.jobs) {
      if (j.name != op) continue;
      auto l = Labels(spec);
      l["op"] = op;
      l["job"] = absl::StrCat(n);
      l["files_per_job"] = absl::StrCat(spec.metadata_files);
      out_->Measure("storage_iops", j.read.iops, "ops/s", l);
      if (j.read.have_percentiles) {
        l["latency"] = j.read.latency_kind;
        out_->Measure("storage_lat_p50_us", j.read.p50_us, "us", l);
        out_->Measure("storage_lat_p99_us", j.read.p99_us, "us", l);
        out_->Measure("storage_lat_p99_9_us", j.read.p99_9_us, "us", l);
        p50 = std::max(p50, j.read.p50_us);
        p99 = std::max(p99, j.read.p99_us);
        p999 = std::max(p999, j.read.p99_9_us);
      }
      iops += j.read.iops;
      ++n;
    }
    auto l = Labels(spec);
    l["op"] = op;
    l["job"] = "all";
    l["files_per_job"] = absl::StrCat(spec.metadata_files);
    out_->Measure("storage_iops", iops, "ops/s", l);
    l["latency_total"] = "highest job percentile (upper bound of the merged percentile)";
    out_->Measure("storage_lat_p50_us", p50, "us", l);
    out_->Measure("storage_lat_p99_us", p99, "us", l);
    out_->Measure("storage_lat_p99_9_us", p999, "us", l);
    rows_.push_back({"metadata", op, -1, iops, p50, p99, p999, ""});
  }
}

absl::Status StorageRun::FindShard(std::string* dir, int* jobs, int64_t* size) {
  struct Candidate {
    std::string dir;
    int64_t mtime = 0;
  };
  std::map<std::string, Candidate> by_node;
  DIR* d = opendir(base_.c_str());
  if (!d) return absl::FailedPreconditionError(absl::StrCat("cannot list ", base_));
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    std::string node = NodeOfWorkDir(name);
    if (node.empty()) continue;
    std::string path = absl::StrCat(base_, "/", name);
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    int64_t ignored;
    if (!FileSize(absl::StrCat(path, "/checkpoint/shard.0.0"), &ignored)) continue;
    if (path == work_) continue;  // this run's own directory
    Candidate& c = by_node[node];
    if (st.st_mtime >= c.mtime) c = {path, st.st_mtime};
  }
  closedir(d);
  std::string target = cfg_.shard_from;
  if (target == "next") {
    // Pairing without a coordinator: the next node by name (cyclic) among
    // those that kept a shard, never this node.
    target.clear();
    for (const auto& [node, c] : by_node) {
      if (node > cfg_.node) {
        target = node;
        break;
      }
    }
    if (target.empty()) {
      for (const auto& [node, c] : by_node) {
        if (node != cfg_.node) {
          target = node;
          break;
        }
      }
    }
    if (target.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--shard-from next: no other node kept a checkpoint shard under ", base_,
          " (run --pattern checkpoint --keep on the other nodes first)"));
    }
  }
  auto it = by_node.find(target);
  if (it == by_node.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no kept checkpoint shard of node '", target, "' under ", base_, " (expected ", base_,
        "/", kWorkDirPrefix, target, "-<pid>/checkpoint/shard.0.0 from --pattern checkpoint "
        "--keep)"));
  }
  auto own = CheckOwnDir(base_, it->second.dir);
  if (!own.ok()) return own.status();
  std::string ckpt = absl::StrCat(*own, "/checkpoint");
  if (auto s = CheckNoSymlinks(*own); !s.ok()) return s;
  int n = 0;
  int64_t first = -1;
  for (;; ++n) {
    int64_t sz = 0;
    if (!FileSize(absl::StrCat(ckpt, "/shard.", n, ".0"), &sz)) break;
    if (first < 0) first = sz;
    if (sz != first) {
      return absl::FailedPreconditionError(
          absl::StrCat("shards in ", ckpt, " differ in size (incomplete checkpoint?)"));
    }
  }
  if (cfg_.verify && access(absl::StrCat(ckpt, "/.cmax-verify").c_str(), F_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--verify: the shard in ", ckpt, " was written without --verify (no crc32c headers)"));
  }
  restore_from_ = target;
  *dir = ckpt;
  *jobs = n;
  *size = first;
  return absl::OkStatus();
}

StorageRun::Outcome StorageRun::RunPattern(const std::string& pattern) {
  JobSpec spec = SpecFor(pattern);
  if (IsDataPattern(pattern)) {
    mkdir(spec.dir.c_str(), 0700);
    int64_t bs = EffectiveBlockSize(spec);
    // With --reuse the files are read as they were kept: never rewritten.
    bool relayout = cfg_.verify && cfg_.reuse.empty() && layout_block_size_ != bs;
    if (!data_laid_out_ || relayout) {
      Outcome o = Layout(spec, "every block written before it is read");
      if (o != Outcome::kOk) return o;
      data_laid_out_ = true;
      layout_block_size_ = bs;
    }
    Outcome o = Measure(spec, pattern);
    if (o == Outcome::kOk && !IsReadPattern(pattern)) layout_block_size_ = bs;
    return o;
  }
  if (pattern == "metadata") {
    mkdir(absl::StrCat(work_, "/meta").c_str(), 0700);
    for (const auto& d : spec.metadata_dirs) mkdir(d.c_str(), 0700);
    return Measure(spec, "file create, stat and delete");
  }
  if (pattern == "checkpoint") {
    mkdir(spec.dir.c_str(), 0700);
    // A checkpoint is new files: start from none.
    for (int j = 0; j < spec.jobs; ++j) unlink(absl::StrCat(spec.dir, "/shard.", j, ".0").c_str());
    Outcome o = Measure(spec, "checkpoint write to durability");
    if (o != Outcome::kOk) return o;
    checkpoint_written_ = true;
    if (cfg_.verify) {
      auto run = RunFio(fio_, work_, "checkpoint-verify", VerifyJobFile(spec),
                        std::chrono::seconds(120 + spec.size_bytes * spec.jobs / 10000000));
      if (!run.ok()) return Outcome::kCouldNotRun;
      FioReport report;
      o = CheckFioRun(*run, "checkpoint read-back check", &report);
      if (o != Outcome::kOk) return o;
      std::ofstream(absl::StrCat(spec.dir, "/.cmax-verify")) << "crc32c\n";
    }
    return Outcome::kOk;
  }
  // restore
  if (rv_ && rv_->world_size() > 1 && cfg_.shard_from.empty()) {
    if (auto s = PairShard(); !s.ok()) {
      std::fprintf(stderr, "storage: restore not measured: %s\n", std::string(s.message()).c_str());
      v1::Finding f = MakeFinding("storage.restore_no_shard", v1::SEVERITY_WARN,
                                  absl::StrCat("path:", base_), "restore not measured",
                                  absl::StrCat("pairing through the rendezvous: ", s.message()));
      f.set_not_measured(true);
      out_->Find(f);
      return Outcome::kCouldNotRun;
    }
  }
  if (!cfg_.shard_from.empty()) {
    std::string dir;
    int jobs = 0;
    int64_t size = 0;
    if (auto s = FindShard(&dir, &jobs, &size); !s.ok()) {
      std::fprintf(stderr, "storage: restore not measured: %s\n", std::string(s.message()).c_str());
      v1::Finding f = MakeFinding("storage.restore_no_shard", v1::SEVERITY_WARN,
                                  absl::StrCat("path:", base_), "restore not measured",
                                  std::string(s.message()));
      f.set_not_measured(true);
      out_->Find(f);
      return Outcome::kCouldNotRun;
    }
    spec.dir = dir;
    spec.jobs = jobs;
    spec.size_bytes = size;
    out_->Log("info", absl::StrCat("restore reads the shard of node ", restore_from_, " in ", dir,
                                   " (", jobs, " x ", HumanBytes(size), ")"));
    return Measure(spec, absl::StrCat("restore of node ", restore_from_, "'s shard"));
  }
  if (!checkpoint_written_) {
    mkdir(spec.dir.c_str(), 0700);
    Outcome o = Layout(spec, "a shard to restore, written by this node");
    if (o != Outcome::kOk) return o;
    checkpoint_written_ = true;
  }
  v1::Finding f = MakeFinding(
      "storage.restore_local_shard", v1::SEVERITY_INFO, absl::StrCat("path:", base_),
      "client cache may serve this read",
      "restore read the shard this node wrote itself (no --shard-from); under the coordinator "
      "each node reads another node's shard (--shard-from NODE or next)");
  out_->Find(f);
  notes_.push_back("restore read this node's own shard: client cache may serve this read");
  return Measure(spec, "restore of this node's own shard");
}

absl::Status StorageRun::JoinGroup() {
  const char* address = std::getenv("CMAX_RENDEZVOUS");
  if (address == nullptr || *address == '\0') {
    return absl::FailedPreconditionError("not a rank of a group task");
  }
  auto client = RendezvousClient::FromEnvironment();
  if (!client.ok()) return client.status();
  rv_ = std::move(*client);
  // The slowest node's layout sets when the others may start: allow it at
  // 10 MB/s, within the rendezvous' limit of 10 minutes per request.
  barrier_timeout_s_ = std::min<int64_t>(600, 120 + BytesNeeded() / 10000000);
  CMAX_RETURN_IF_ERROR(rv_->Set(absl::StrCat("storage/node/", rv_->rank()), cfg_.node));
  out_->Log("info", absl::StrCat("rank ", rv_->rank(), " of ", rv_->world_size(), " in group ",
                                 rv_->place().group, ": every pattern starts at its barrier"));
  return absl::OkStatus();
}

absl::Status StorageRun::SyncStart(const std::string& pattern) {
  times_.ready = NowUnixNs();
  if (!rv_) {
    times_.target = times_.start = times_.ready;
    return absl::OkStatus();
  }
  times_.synced = true;
  auto start = rv_->Barrier(absl::StrCat("storage/", pattern), absl::Seconds(barrier_timeout_s_));
  if (!start.ok()) return start.status();
  times_.target = *start;
  SleepUntilUnixNs(*start);
  times_.start = NowUnixNs();
  return absl::OkStatus();
}

absl::Status StorageRun::PairShard() {
  const int peer = (rv_->rank() + 1) % rv_->world_size();
  auto node = rv_->Get(absl::StrCat("storage/node/", peer), absl::Seconds(barrier_timeout_s_));
  if (!node.ok()) {
    return absl::Status(node.status().code(),
                        absl::StrCat("node name of rank ", peer, ": ", node.status().message()));
  }
  if (*node == cfg_.node) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", peer, " runs on this node (", cfg_.node, "): no other node's shard to read"));
  }
  cfg_.shard_from = *node;
  restore_from_rank_ = absl::StrCat(peer);
  out_->Log("info", absl::StrCat("restore: rank ", rv_->rank(), " reads the shard of rank ", peer,
                                 " (node ", *node, ")"));
  return absl::OkStatus();
}

void StorageRun::EmitTimes(const std::string& pattern) {
  std::map<std::string, std::string> l = {{"pattern", pattern}, {"host", cfg_.node}};
  if (rv_) {
    l["barrier"] = absl::StrCat("storage/", pattern);
    l["rank"] = absl::StrCat(rv_->rank());
    l["world_size"] = absl::StrCat(rv_->world_size());
    l["target_unix_ns"] = absl::StrCat(times_.target);
  } else {
    l["barrier"] = "none";
  }
  out_->Measure("storage_prepare_ns", static_cast<double>(times_.prepare), "ns", l);
  out_->Measure("storage_ready_ns", static_cast<double>(times_.ready), "ns", l);
  out_->Measure("storage_start_ns", static_cast<double>(times_.start), "ns", l);
  out_->Measure("storage_end_ns", static_cast<double>(times_.end), "ns", l);
  if (rv_) {
    notes_.push_back(absl::StrFormat(
        "%s: prepared in %.3f s, waited %.3f s at the barrier, started %.3f ms after its instant",
        pattern, (times_.ready - times_.prepare) / 1e9, (times_.start - times_.ready) / 1e9,
        (times_.start - times_.target) / 1e6));
  }
}

void StorageRun::Cleanup() {
  if (work_.empty()) return;
  if (cfg_.keep) {
    out_->Log("info", absl::StrCat("kept ", work_, " (--keep)"));
    notes_.push_back(absl::StrCat("kept ", work_));
    std::fprintf(stderr, "storage: kept %s\n", work_.c_str());
    return;
  }
  absl::Status s = RemoveTree(work_);
  if (!s.ok()) {
    out_->Log("error", absl::StrCat("could not remove ", work_, ": ", s.message()));
    std::fprintf(stderr, "storage: could not remove %s: %s\n", work_.c_str(),
                 std::string(s.message()).c_str());
  }
}

void StorageRun::PrintTable() const {
  if (cfg_.jsonl) return;
  std::printf("storage on %s (%s, %s, source %s), node %s, fio %s\n", base_.c_str(),
              fs_type_.c_str(), storage_class_.c_str(), mount_source_.c_str(),
              cfg_.node.c_str(), fio_version_.c_str());
  std::printf("%-11s %-6s %12s %12s %10s %10s %10s %-9s %-6s %s\n", "pattern", "op", "MB/s",
              "IOPS", "p50 us", "p99 us", "p99.9 us", "engine", "direct", "");
  for (const Row& r : rows_) {
    std::string mbps = r.mbps < 0 ? "-" : absl::StrFormat("%.1f", r.mbps);
    std::string engine = r.pattern == "metadata" ? "file*" : engine_;
    std::printf("%-11s %-6s %12s %12.0f %10.1f %10.1f %10.1f %-9s %-6s %s\n", r.pattern.c_str(),
                r.op.c_str(), mbps.c_str(), r.iops, r.p50, r.p99, r.p999, engine.c_str(),
                r.pattern == "metadata" ? "-" : (direct_ ? "yes" : "no"), r.extra.c_str());
  }
  for (const auto& n : notes_) std::printf("note: %s\n", n.c_str());
  if (failures_) std::printf("FAILED: %d problem(s), see the findings above\n", failures_);
}

int StorageRun::Run() {
  InstallInterruptHandlers();
  fio_ = FindExecutable("fio");
  if (fio_.empty()) {
    return CouldNotRun("storage.fio_missing", "fio not found: install the fio package",
                       absl::StrCat("no fio on PATH (", std::getenv("PATH") ? std::getenv("PATH") : "",
                                    "); nothing was measured"));
  }
  if (auto v = RunCommand({fio_, "--version"}, std::chrono::seconds(10)); v.ok()) {
    fio_version_ = std::string(absl::StripAsciiWhitespace(v->out));
  }
  if (auto s = Probe(); !s.ok()) {
    return CouldNotRun("storage.path_unusable", "cannot use --path", std::string(s.message()));
  }
  if (cfg_.reuse.empty()) {
    int64_t need = BytesNeeded();
    int64_t margin = 64 * kMiB + need / 20;
    auto free_bytes = FreeBytes(base_);
    if (!free_bytes.ok()) {
      return CouldNotRun("storage.path_unusable", "cannot use --path",
                         std::string(free_bytes.status().message()));
    }
    if (static_cast<uint64_t>(need + margin) > *free_bytes) {
      return CouldNotRun(
          "storage.not_enough_space", "not enough free space",
          absl::StrFormat("the run needs %s (%lld bytes: --size %s x --jobs %lld per file set, "
                          "plus a margin of %s) but %s has %s (%llu bytes) free on %s",
                          HumanBytes(need + margin), static_cast<long long>(need + margin),
                          HumanBytes(cfg_.size), static_cast<long long>(cfg_.jobs),
                          HumanBytes(margin), base_, HumanBytes(*free_bytes),
                          static_cast<unsigned long long>(*free_bytes), fs_type_));
    }
  }
  if (InterruptSignal()) DieInterrupted();
  if (cfg_.reuse.empty()) {
    auto dir = CreateWorkDir(base_, cfg_.node);
    if (!dir.ok()) {
      return CouldNotRun("storage.path_unusable", "cannot write under --path",
                         std::string(dir.status().message()));
    }
    work_ = *dir;
    own_work_ = true;
  } else {
    auto dir = CheckOwnDir(base_, cfg_.reuse);
    if (!dir.ok()) {
      return CouldNotRun("storage.symlink_refused", "cannot reuse that directory",
                         std::string(dir.status().message()));
    }
    if (auto s = CheckNoSymlinks(*dir); !s.ok()) {
      return CouldNotRun("storage.symlink_refused", "symbolic link in the work directory",
                         std::string(s.message()));
    }
    for (int j = 0; j < cfg_.jobs; ++j) {
      int64_t sz = 0;
      std::string f = absl::StrCat(*dir, "/files/data.", j, ".0");
      if (!FileSize(f, &sz) || sz < cfg_.size) {
        return CouldNotRun("storage.reuse_mismatch", "cannot reuse that directory",
                           absl::StrCat(f, " is missing or smaller than --size ", cfg_.size,
                                        " (use the --size and --jobs of the run that kept it)"));
      }
    }
    work_ = *dir;
    data_laid_out_ = true;
  }
  if (InterruptSignal()) DieInterrupted();

  direct_ = cfg_.want_direct;
  if (direct_) {
    std::string why;
    if (!ProbeDirectIo(work_, &why)) {
      direct_ = false;
      v1::Finding f = MakeFinding(
          "storage.direct_io_unsupported", v1::SEVERITY_INFO, absl::StrCat("path:", base_),
          absl::StrCat("direct I/O not supported on ", fs_type_, ", buffered used"),
          absl::StrCat(why, "; reads may be served from the page cache"));
      out_->Find(f);
      notes_.push_back(absl::StrCat("direct I/O not supported on ", fs_type_, ", buffered used"));
    }
  }
  std::string why;
  engine_ = ProbeIoEngine(&why);
  if (engine_ != "io_uring") {
    out_->Find(MakeFinding("storage.io_uring_unavailable", v1::SEVERITY_INFO,
                           absl::StrCat("path:", base_), "io_uring unavailable, psync used",
                           absl::StrCat(why, "; queue depth is 1 with psync")));
    notes_.push_back(absl::StrCat("io_uring unavailable (", why, "), psync used"));
  }
  out_->Log("info", absl::StrFormat(
                        "path %s: %s (%s, statfs %s) from %s on %s; engine %s, direct %s; work "
                        "directory %s; fio %s",
                        base_, fs_type_, storage_class_, fs_magic_, mount_source_, mount_point_,
                        engine_, direct_ ? "yes" : "no", work_, fio_version_));

  if (auto s = JoinGroup(); !s.ok() && !absl::IsFailedPrecondition(s)) {
    return CouldNotRun("storage.rendezvous_failed", "cannot reach the task group's rendezvous",
                       absl::StrCat(s.message(), " (a barrier run without a common start "
                                                 "would not measure the nodes together)"));
  }
  bool could_not_run = false;
  for (const std::string& p : cfg_.patterns) {
    if (InterruptSignal()) DieInterrupted();
    if (auto s = CheckNoSymlinks(work_); !s.ok()) {
      CouldNotRun("storage.symlink_refused", "symbolic link in the work directory",
                  std::string(s.message()));
      return bench::kExitCouldNotRun;
    }
    times_ = PatternTimes{};
    times_.prepare = NowUnixNs();
    Outcome o = RunPattern(p);
    if (InterruptSignal()) DieInterrupted();
    if (rv_ && !times_.synced) {
      // This rank could not prepare or measure: still pass the barrier so
      // the other ranks are not held until its timeout.
      (void)SyncStart(p);
    }
    if (o == Outcome::kCouldNotRun) could_not_run = true;
  }
  Cleanup();
  PrintTable();
  if (failures_ > 0) return bench::kExitFoundFailures;
  if (could_not_run) return bench::kExitCouldNotRun;
  return bench::kExitPassed;
}

}  // namespace cmax::storage
