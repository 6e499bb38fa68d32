// The coordinator core's export (the gRPC Export call, `cmaxctl export`): the
// run is looked up on the core thread (HandleExport), then its stored records
// are read on the export thread through that thread's own read-only store
// connection, which sees what is committed while the core thread goes on
// with its rounds (ExportLoop), as the scorecard thread reads them for a
// scorecard (core_report.cc). The gRPC adapter never opens the store.
#include "coordinator/core.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/time_util.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("coordinator"); }

// Every stored record of `run_id` from `reader`; UNAVAILABLE when `stopping`
// turns true during the scan (checked now and then, so a stop does not wait
// for a long one).
absl::StatusOr<std::vector<v1::ExportedRecord>> ScanForExport(
    Store* reader, const std::string& run_id, const std::function<bool()>& stopping) {
  std::vector<v1::ExportedRecord> records;
  bool aborted = false;
  int64_t scanned = 0;
  auto s = reader->ScanRecords(run_id, [&](const v1::ExportedRecord& r) {
    records.push_back(r);
    if ((++scanned & 0xffff) == 0 && stopping()) {
      aborted = true;
      return false;
    }
    return true;
  });
  if (aborted) {
    return absl::UnavailableError(
        absl::StrCat("the coordinator stopped while it read run ", run_id, "'s records"));
  }
  if (!s.ok()) return s;
  return records;
}

}  // namespace

void CoordinatorCore::HandleExport(const std::string& run_id, ExportDone done) {
  auto run = HandleGetRun(run_id);
  if (!run.ok()) {
    done(run.status());
    return;
  }
  if (const int64_t dropped = run->run().records_dropped_unix_ns(); dropped > 0) {
    done(absl::FailedPreconditionError(absl::StrCat(
        "run ", run_id, "'s records were dropped on ", FormatRfc3339(dropped),
        " (cmax-coordinator --keep-runs-for); its scorecard stays: cmaxctl report ", run_id)));
    return;
  }
  if (!export_thread_.joinable()) {
    // No started core (tests calling the handlers directly): read in place,
    // through a read-only connection all the same.
    auto reader = Store::OpenReader(db_path_);
    if (!reader.ok()) {
      done(reader.status());
      return;
    }
    done(ScanForExport(reader->get(), run_id, [] { return false; }));
    return;
  }
  absl::MutexLock lock(&export_mu_);
  export_jobs_.push_back({run_id, std::move(done)});
}

void CoordinatorCore::ExportLoop() {
  std::unique_ptr<Store> reader;
  auto stopping = [this] {
    absl::MutexLock lock(&export_mu_);
    return export_stop_;
  };
  for (;;) {
    ExportJob job;
    {
      absl::MutexLock lock(&export_mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(export_mu_) {
        return !export_jobs_.empty() || export_stop_;
      };
      export_mu_.Await(absl::Condition(&ready));
      if (export_stop_) break;
      job = std::move(export_jobs_.front());
      export_jobs_.pop_front();
    }
    if (!reader) {
      auto r = Store::OpenReader(db_path_);
      if (!r.ok()) {
        Log()->error("export thread: {}", r.status().ToString());
        job.done(r.status());
        continue;
      }
      reader = std::move(*r);
    }
    job.done(ScanForExport(reader.get(), job.run_id, stopping));
  }
  // Stopping: the calls still waiting get an answer (their streams end).
  std::deque<ExportJob> left;
  {
    absl::MutexLock lock(&export_mu_);
    left.swap(export_jobs_);
  }
  for (auto& job : left) {
    job.done(absl::UnavailableError("the coordinator is stopping"));
  }
}

}  // namespace cmax::coordinator
