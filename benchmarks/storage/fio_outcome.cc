// What one fio run says about the storage (StorageRun::CheckFioRun): a
// block that failed its crc32c check (fail, naming file and offset), a fio
// killed at its time limit (fail), output that is not fio's JSON (not
// measured), an I/O error of a job (fail); else the parsed report.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmarks/storage/run_helpers.h"
#include "benchmarks/storage/storage_run.h"

namespace cmax::storage {

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

}  // namespace cmax::storage
