#include "common/record_io.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <functional>
#include <string>

#include "common/suite_declaration.h"

TEST_CASE("records round-trip through JSON lines", "[records]") {
  cmax::v1::Record r;
  auto* m = r.mutable_measurement();
  m->set_suite("gemm");
  m->set_metric("gemm_tflops");
  m->set_value(791.5);
  m->set_unit("TFLOP/s");
  (*m->mutable_labels())["gpu"] = "0";
  std::string line = cmax::RecordToJsonLine(r);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.rfind("{\"measurement\":", 0) == 0);
  auto back = cmax::ParseRecordLine(line + "\n");
  REQUIRE(back.ok());
  CHECK(back->measurement().value() == 791.5);
  CHECK(back->measurement().labels().at("gpu") == "0");
}

TEST_CASE("malformed record lines are rejected with a reason", "[records]") {
  CHECK_FALSE(cmax::ParseRecordLine("").ok());
  CHECK_FALSE(cmax::ParseRecordLine("not json").ok());
  CHECK_FALSE(cmax::ParseRecordLine("{}").ok());  // no kind
  CHECK_FALSE(cmax::ParseRecordLine("{\"measurement\": {\"bogus\": 1}}").ok());
  std::string huge = "{\"log\": {\"message\": \"" + std::string(cmax::kMaxRecordLineBytes, 'x') + "\"}}";
  auto r = cmax::ParseRecordLine(huge);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("exceeds"));
}

TEST_CASE("the writer counts findings by severity and caps artifacts", "[records]") {
  char* buf = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&buf, &len);
  {
    cmax::RecordWriter w("hostcheck", mem, {{"node", "n1"}});
    cmax::v1::Finding f;
    f.set_severity(cmax::v1::SEVERITY_FAIL);
    w.Find(f);
    f.set_severity(cmax::v1::SEVERITY_WARN);
    w.Find(f);
    w.Artifact("big", "text/plain", std::string(cmax::kMaxArtifactBytes + 10, 'a'));
    CHECK(w.findings_at_or_above(cmax::v1::SEVERITY_FAIL) == 1);
    CHECK(w.findings_at_or_above(cmax::v1::SEVERITY_WARN) == 2);
  }
  fclose(mem);
  std::string out(buf, len);
  free(buf);
  int lines = 0;
  size_t start = 0;
  while (true) {
    size_t nl = out.find('\n', start);
    if (nl == std::string::npos) break;
    auto rec = cmax::ParseRecordLine(out.substr(start, nl - start));
    REQUIRE(rec.ok());
    if (rec->has_finding()) {
      CHECK(rec->finding().suite() == "hostcheck");
      CHECK(rec->finding().labels().at("node") == "n1");
    }
    if (rec->has_artifact()) {
      CHECK(rec->artifact().truncated());
      CHECK(rec->artifact().content().size() == cmax::kMaxArtifactBytes);
    }
    ++lines;
    start = nl + 1;
  }
  CHECK(lines == 3);
}

namespace {

struct WriterExit {
  int code = -1;        // exit status, or -1 when the child did not exit
  std::string err;      // its stderr
  std::string records;  // what the writer wrote
};

// Runs `write` on a RecordWriter of `suite` in a child process: the writer
// ends the process on a figure its suite does not declare.
WriterExit InChild(const std::string& suite,
                   const std::function<void(cmax::RecordWriter&)>& write) {
  (void)cmax::SuiteCatalog();  // built before the fork
  FILE* out = std::tmpfile();
  int err[2];
  REQUIRE(out != nullptr);
  REQUIRE(pipe(err) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(err[1], 2);
    close(err[0]);
    cmax::RecordWriter w(suite, out, {{"node", "n1"}});
    write(w);
    fflush(out);
    _exit(0);
  }
  close(err[1]);
  WriterExit r;
  char buf[4096];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) > 0;) r.err.append(buf, n);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  std::rewind(out);
  for (int c; (c = std::fgetc(out)) != EOF;) r.records.push_back(static_cast<char>(c));
  std::fclose(out);
  return r;
}

}  // namespace

TEST_CASE("the writer refuses a metric its suite does not declare, or in another unit",
          "[records]") {
  const cmax::SuiteInfo* storage = cmax::FindSuite("storage");
  REQUIRE(storage != nullptr);
  const cmax::MetricSpec* iops = cmax::FindSuiteMetric(*storage, "storage_iops");
  REQUIRE(iops != nullptr);

  SECTION("declared, in its unit: written") {
    auto r = InChild("storage", [&](cmax::RecordWriter& w) {
      w.Measure("storage_iops", 10, iops->unit);
      w.Sample("storage_iops", 11, iops->unit);
    });
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(std::count(r.records.begin(), r.records.end(), '\n') == 2);
  }
  SECTION("a metric no declaration has: exit 2, naming the suite and the metric") {
    auto r = InChild("storage", [&](cmax::RecordWriter& w) {
      w.Measure("storage_iops", 10, iops->unit);
      w.Measure("storage_made_up", 1, "MB/s");
      w.Measure("storage_iops", 12, iops->unit);  // never reached
    });
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("suite 'storage' wrote metric 'storage_made_up' (MB/s), "
                                      "which it does not declare"));
    // What came before stands; nothing after it was written.
    CHECK(std::count(r.records.begin(), r.records.end(), '\n') == 1);
    CHECK_THAT(r.records, !Catch::Contains("storage_made_up"));
  }
  SECTION("a declared metric in another unit: exit 2, naming both units") {
    auto r = InChild("storage", [&](cmax::RecordWriter& w) { w.Measure("storage_iops", 10, "ops/s"); });
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("suite 'storage' wrote metric 'storage_iops' in 'ops/s', "
                                      "but declares it in '" + iops->unit + "'"));
    CHECK(r.records.empty());
  }
  SECTION("samples are held to the same declaration") {
    auto r = InChild("storage", [&](cmax::RecordWriter& w) { w.Sample("storage_iops", 10, "Hz"); });
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("in 'Hz'"));
  }
  SECTION("a writer of no registered suite (a test's own) is not checked") {
    auto r = InChild("not-a-suite", [](cmax::RecordWriter& w) { w.Measure("anything", 1, "x"); });
    CHECK(r.code == 0);
    CHECK(std::count(r.records.begin(), r.records.end(), '\n') == 1);
  }
}
