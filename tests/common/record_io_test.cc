#include "common/record_io.h"

#include <catch2/catch.hpp>
#include <cstdio>

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
