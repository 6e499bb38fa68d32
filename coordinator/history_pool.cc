#include "coordinator/history_pool.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("coordinator"); }

}  // namespace

HistoryPool::HistoryPool(Options options) : options_(std::move(options)) {}

HistoryPool::~HistoryPool() { Stop(); }

void HistoryPool::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return;
  started_ = true;
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    threads_.emplace_back([this] {
      // No setpriority here: the packaged unit's seccomp filter
      // (SystemCallFilter=~@resources) kills the daemon on it (SIGSYS).
      pthread_setname_np(pthread_self(), "cmax-history");
      Work();
    });
  }
}

void HistoryPool::Stop() {
  std::vector<std::shared_ptr<Job>> left;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [key, job] : in_flight_) job->cancelled = true;
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
  {
    absl::MutexLock lock(&mu_);
    for (auto& [key, job] : in_flight_) left.push_back(job);
    queue_.clear();
  }
  for (auto& job : left) Answer(job, absl::UnavailableError("the coordinator is stopping"));
}

uint64_t HistoryPool::Submit(const std::string& key, Query query, Done done) {
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || stopping_) {
      refused = absl::UnavailableError("the coordinator's history queries are not running");
    } else {
      auto it = in_flight_.find(key);
      if (it != in_flight_.end() && !it->second->cancelled) {
        const uint64_t ticket = next_ticket_++;
        it->second->waiters.emplace(ticket, std::move(done));
        tickets_.emplace(ticket, it->second);
        ++counts_.shared;
        return ticket;
      }
      // Room: a thread that is free, or a place in the queue.
      const int idle = std::max(1, options_.threads) - counts_.running;
      if (static_cast<int>(queue_.size()) >= std::max(0, options_.max_queued) + idle) {
        ++counts_.busy;
        refused = absl::ResourceExhaustedError(absl::StrCat(
            "busy, retry: ", counts_.running, " history queries running and ", queue_.size(),
            " waiting, the most this coordinator takes at once (--history-threads, "
            "--history-queue); ask again in a few seconds"));
      } else {
        auto job = std::make_shared<Job>();
        job->key = key;
        job->query = std::move(query);
        const uint64_t ticket = next_ticket_++;
        job->waiters.emplace(ticket, std::move(done));
        tickets_.emplace(ticket, job);
        // A cancelled one with this key still running finishes on its own.
        in_flight_[key] = job;
        queue_.push_back(std::move(job));
        return ticket;
      }
    }
  }
  done(refused);
  return 0;
}

bool HistoryPool::Abandon(uint64_t ticket) {
  absl::MutexLock lock(&mu_);
  auto it = tickets_.find(ticket);
  if (it == tickets_.end()) return false;
  std::shared_ptr<Job> job = it->second;
  tickets_.erase(it);
  job->waiters.erase(ticket);
  if (!job->waiters.empty()) return true;
  if (auto f = in_flight_.find(job->key); f != in_flight_.end() && f->second == job) {
    in_flight_.erase(f);
  }
  if (job->running) {
    job->cancelled = true;  // the worker stops at its next check
  } else {
    std::erase(queue_, job);
    ++counts_.dropped;
  }
  return true;
}

HistoryPool::Counts HistoryPool::counts() const {
  absl::MutexLock lock(&mu_);
  Counts c = counts_;
  c.queued = static_cast<int>(queue_.size());
  return c;
}

void HistoryPool::Work() {
  std::unique_ptr<Store> reader;
  for (;;) {
    std::shared_ptr<Job> job;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      job->running = true;
      ++counts_.run;
      ++counts_.running;
    }
    Result result = absl::UnknownError("no answer");
    if (!reader) {
      auto r = Store::OpenReader(options_.db_path);
      if (r.ok()) {
        reader = std::move(*r);
      } else {
        Log()->error("history query thread: {}", r.status().ToString());
        result = r.status();
      }
    }
    if (reader) {
      Job* raw = job.get();
      result = job->query(*reader, [raw] { return raw->cancelled.load(); });
    }
    {
      absl::MutexLock lock(&mu_);
      --counts_.running;
      if (job->cancelled && job->waiters.empty()) ++counts_.cancelled;
      if (stopping_ && !result.ok()) {
        result = absl::UnavailableError("the coordinator is stopping");
      }
    }
    Answer(job, result);
  }
}

void HistoryPool::Answer(const std::shared_ptr<Job>& job, const Result& result) {
  std::map<uint64_t, Done> waiters;
  {
    absl::MutexLock lock(&mu_);
    waiters.swap(job->waiters);
    for (const auto& [ticket, done] : waiters) tickets_.erase(ticket);
    if (auto f = in_flight_.find(job->key); f != in_flight_.end() && f->second == job) {
      in_flight_.erase(f);
    }
  }
  for (auto& [ticket, done] : waiters) done(result);
}

}  // namespace cmax::coordinator
