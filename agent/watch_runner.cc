#include "agent/watch_runner.h"

#include <csignal>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/record_io.h"

namespace cmax::agent {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("watch"); }

constexpr int64_t kMaxUnacked = 2000;  // records in flight per epoch
constexpr absl::Duration kMaxBackoff = absl::Seconds(60);
constexpr absl::Duration kHealthyLife = absl::Minutes(10);

// Appends one record line to a spool whose writer is gone, on a line of its
// own even when the writer died mid-line.
void AppendRecord(const std::string& path, const v1::Record& record) {
  bool needs_newline = false;
  {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (in && in.tellg() > 0) {
      in.seekg(-1, std::ios::end);
      needs_newline = in.get() != '\n';
    }
  }
  std::ofstream out(path, std::ios::app | std::ios::binary);
  if (needs_newline) out << '\n';
  out << RecordToJsonLine(record) << '\n';
}

v1::Record LogRecord(const std::string& level, const std::string& message) {
  v1::Record r;
  r.mutable_log()->set_level(level);
  r.mutable_log()->set_message(message);
  r.mutable_log()->set_suite("watch");
  r.set_time_unix_ns(absl::ToUnixNanos(absl::Now()));
  return r;
}

}  // namespace

WatchRunner::WatchRunner(WatchOptions options, Outbox* outbox)
    : options_(std::move(options)), outbox_(outbox) {}

WatchRunner::~WatchRunner() { Stop(); }

std::vector<std::string> WatchRunner::Argv(const WatchOptions& o, const std::string& binary) {
  std::vector<std::string> argv = {binary, "--jsonl",
                                   "--interval", absl::StrCat(o.interval_s),
                                   "--gpu-interval", absl::StrCat(o.gpu_interval_s),
                                   "--fs-full-percent", absl::StrCat(o.fs_full_percent),
                                   "--filesystems", absl::StrJoin(o.filesystems, ",")};
  if (!o.services.empty()) {
    argv.push_back("--services");
    argv.push_back(absl::StrJoin(o.services, ","));
  }
  if (!o.root.empty() && o.root != "/") {
    argv.push_back("--root");
    argv.push_back(o.root);
  }
  return argv;
}

std::string WatchRunner::SpoolPath(const std::string& epoch) const {
  return absl::StrCat(options_.work_dir, "/watch/", epoch, ".jsonl");
}

void WatchRunner::Start() {
  std::error_code ec;
  std::filesystem::create_directories(options_.work_dir + "/watch", ec);
  absl::MutexLock lock(&mu_);
  // Spools of earlier agent processes: ended, sent again from seq 0.
  for (const auto& entry : std::filesystem::directory_iterator(options_.work_dir + "/watch", ec)) {
    std::string name = entry.path().filename().string();
    if (!absl::EndsWith(name, ".jsonl")) continue;
    std::string epoch = name.substr(0, name.size() - 6);
    Epoch& e = epochs_[epoch];
    e.tailer = std::make_unique<SpoolTailer>(entry.path().string());
    e.ended = true;
  }
  thread_ = std::thread([this] { Loop(); });
}

void WatchRunner::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  if (child_) {
    child_->SignalGroup(SIGTERM);
    child_->Wait();
    child_.reset();
  }
}

void WatchRunner::OnConnected(uint64_t generation) {
  absl::MutexLock lock(&mu_);
  generation_ = generation;
  connected_ = true;
  for (auto& [epoch, e] : epochs_) {
    if (absl::Status s = e.tailer->Seek(e.acked); !s.ok()) Log()->warn("{}", std::string(s.message()));
  }
}

void WatchRunner::HandleAck(const std::string& epoch, int64_t next_seq) {
  absl::MutexLock lock(&mu_);
  auto it = epochs_.find(epoch);
  if (it != epochs_.end() && next_seq > it->second.acked) it->second.acked = next_seq;
}

WatchStats WatchRunner::Stats() const {
  absl::MutexLock lock(&mu_);
  WatchStats s;
  s.running = child_ != nullptr;
  s.starts = starts_;
  for (const auto& [epoch, e] : epochs_) s.unacked_records += e.tailer->next_seq() - e.acked;
  return s;
}

void WatchRunner::Loop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      Superintend(absl::Now());
      SendSome();
      DropDelivered();
    }
    absl::SleepFor(options_.tick);
  }
}

void WatchRunner::Superintend(absl::Time now) {
  if (child_) {
    ExitInfo info;
    if (!child_->Poll(&info)) return;
    child_.reset();
    Epoch& e = epochs_[current_];
    std::string tail = TailOfFile(SpoolPath(current_) + ".stderr", 2048);
    AppendRecord(SpoolPath(current_),
                 LogRecord("error", absl::StrCat("cmax-watch ended (", info.Describe(), ")",
                                                 tail.empty() ? "" : ": ", tail)));
    e.ended = true;
    if (now - child_started_ >= kHealthyLife) backoff_ = absl::Seconds(2);
    restart_at_ = now + backoff_;
    Log()->warn("cmax-watch ended ({}); starting it again in {}", info.Describe(),
                absl::FormatDuration(backoff_));
    backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  }
  if (now >= restart_at_) StartChild(now);
}

void WatchRunner::StartChild(absl::Time now) {
  current_ = absl::StrCat(options_.boot_id, "-", starts_ + 1);
  const std::string spool = SpoolPath(current_);
  Epoch& e = epochs_[current_];
  e.tailer = std::make_unique<SpoolTailer>(spool);
  const std::string binary = options_.bench_dir + "/cmax-watch";
  SpawnOptions spawn;
  spawn.argv = Argv(options_, binary);
  spawn.stdout_path = spool;
  spawn.stderr_path = spool + ".stderr";
  auto child = Subprocess::Spawn(spawn);
  ++starts_;
  if (!child.ok()) {
    e.ended = true;
    restart_at_ = now + kMaxBackoff;
    if (missing_said_) return;
    missing_said_ = true;
    v1::Record r;
    v1::Finding* f = r.mutable_finding();
    f->set_check_id("watch.agent");
    f->set_category("reliability");
    f->set_subject("node");
    f->set_title("this node is not watched between runs");
    f->set_detail(absl::StrCat("cmax-watch could not start: ", child.status().message()));
    f->set_action("install cmax-watch beside cmax-agent (the cmax-bench package has it)");
    f->set_suite("watch");
    f->set_not_measured(true);
    r.set_time_unix_ns(absl::ToUnixNanos(now));
    AppendRecord(spool, r);
    Log()->error("{}", f->detail());
    return;
  }
  child_ = std::move(*child);
  child_started_ = now;
  Log()->info("watching this node: {} (epoch {})", absl::StrJoin(spawn.argv, " "), current_);
}

void WatchRunner::SendSome() {
  if (!connected_ || !outbox_->HasRoom(generation_)) return;
  for (auto& [epoch, e] : epochs_) {
    if (e.tailer->next_seq() - e.acked >= kMaxUnacked) continue;
    auto entries = e.tailer->Read(options_.max_batch_records, 1 << 20, e.ended);
    if (!entries.ok()) {
      Log()->warn("{}", std::string(entries.status().message()));
      continue;
    }
    if (entries->empty()) continue;
    v1::AgentMessage m;
    v1::WatchBatch* batch = m.mutable_watch();
    batch->set_epoch(epoch);
    for (SpoolEntry& entry : *entries) {
      v1::WatchRecord* w = batch->add_records();
      w->set_seq(entry.seq);
      *w->mutable_record() = std::move(entry.record);
    }
    if (!outbox_->Send(generation_, std::move(m))) {
      connected_ = false;  // resent from the acked seq after the next connect
      return;
    }
  }
}

void WatchRunner::DropDelivered() {
  for (auto it = epochs_.begin(); it != epochs_.end();) {
    Epoch& e = it->second;
    if (!e.ended || (it->first == current_ && child_)) {
      ++it;
      continue;
    }
    auto lines = CountSpoolLines(e.tailer->path());
    if (!lines.ok() || e.acked < *lines) {
      ++it;
      continue;
    }
    std::error_code ec;
    std::filesystem::remove(e.tailer->path(), ec);
    std::filesystem::remove(e.tailer->path() + ".stderr", ec);
    it = epochs_.erase(it);
  }
}

}  // namespace cmax::agent
