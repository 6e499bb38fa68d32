#include "agent/spool.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/record_io.h"
#include "test_util.h"

using cmax::agent::CountSpoolLines;
using cmax::agent::SpoolEntry;
using cmax::agent::SpoolTailer;
using cmax::agent::testing::AppendFile;
using cmax::agent::testing::TempDir;

namespace {

std::string MeasurementLine(double value) {
  cmax::v1::Record r;
  r.mutable_measurement()->set_metric("m");
  r.mutable_measurement()->set_value(value);
  return cmax::RecordToJsonLine(r) + "\n";
}

std::vector<SpoolEntry> ReadAll(SpoolTailer& t, bool final = false) {
  auto got = t.Read(1000, 1 << 20, final);
  REQUIRE(got.ok());
  return *std::move(got);
}

}  // namespace

TEST_CASE("a missing spool reads as empty", "[agent][spool]") {
  TempDir dir;
  SpoolTailer t(dir.path() + "/records.jsonl");
  CHECK(ReadAll(t).empty());
  CHECK(t.next_seq() == 0);
  CHECK(*CountSpoolLines(dir.path() + "/records.jsonl") == 0);
}

TEST_CASE("a partial line is not emitted until it is complete", "[agent][spool]") {
  TempDir dir;
  const std::string path = dir.path() + "/records.jsonl";
  SpoolTailer t(path);
  std::string line = MeasurementLine(7);
  AppendFile(path, MeasurementLine(6));
  AppendFile(path, line.substr(0, 10));
  auto first = ReadAll(t);
  REQUIRE(first.size() == 1);
  CHECK(first[0].seq == 0);
  CHECK(first[0].record.measurement().value() == 6);
  CHECK(ReadAll(t).empty());  // still partial
  AppendFile(path, line.substr(10));
  auto second = ReadAll(t);
  REQUIRE(second.size() == 1);
  CHECK(second[0].seq == 1);
  CHECK(second[0].record.measurement().value() == 7);
  CHECK(t.next_seq() == 2);
}

TEST_CASE("malformed lines become error logs under their own seq", "[agent][spool]") {
  TempDir dir;
  const std::string path = dir.path() + "/records.jsonl";
  AppendFile(path, MeasurementLine(1));
  AppendFile(path, "this is not json\n");
  AppendFile(path, "\n");
  AppendFile(path, "{\"unknownKind\": {}}\n");
  AppendFile(path, MeasurementLine(5));
  SpoolTailer t(path);
  auto got = ReadAll(t);
  REQUIRE(got.size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(got[i].seq == i);
  CHECK(got[0].record.has_measurement());
  REQUIRE(got[1].record.has_log());
  CHECK(got[1].record.log().level() == "error");
  CHECK_THAT(got[1].record.log().message(),
             Catch::StartsWith("malformed record line 1: ") &&
                 Catch::EndsWith(": this is not json"));
  REQUIRE(got[2].record.has_log());
  CHECK_THAT(got[2].record.log().message(), Catch::Contains("malformed record line 2"));
  REQUIRE(got[3].record.has_log());
  CHECK_THAT(got[3].record.log().message(), Catch::Contains("malformed record line 3"));
  CHECK(got[4].record.measurement().value() == 5);
}

TEST_CASE("a malformed line is quoted with at most 200 characters", "[agent][spool]") {
  TempDir dir;
  const std::string path = dir.path() + "/records.jsonl";
  AppendFile(path, std::string(1000, 'x') + "\n");
  SpoolTailer t(path);
  auto got = ReadAll(t);
  REQUIRE(got.size() == 1);
  const std::string& msg = got[0].record.log().message();
  CHECK_THAT(msg, Catch::EndsWith(": " + std::string(200, 'x')));
  CHECK(msg.find(std::string(201, 'x')) == std::string::npos);
}

TEST_CASE("resume from a seq re-reads from that line", "[agent][spool]") {
  TempDir dir;
  const std::string path = dir.path() + "/records.jsonl";
  for (int i = 0; i < 20; ++i) AppendFile(path, MeasurementLine(i));
  SpoolTailer t(path);
  auto a = t.Read(7, 1 << 20);
  REQUIRE(a.ok());
  CHECK(a->size() == 7);
  auto b = ReadAll(t);
  CHECK(b.size() == 13);
  REQUIRE(t.Seek(4).ok());
  CHECK(t.next_seq() == 4);
  auto c = ReadAll(t);
  REQUIRE(c.size() == 16);
  CHECK(c[0].seq == 4);
  CHECK(c[0].record.measurement().value() == 4);
  // A fresh tailer (agent restart) seeks without checkpoints.
  SpoolTailer fresh(path);
  REQUIRE(fresh.Seek(17).ok());
  auto d = ReadAll(fresh);
  REQUIRE(d.size() == 3);
  CHECK(d[0].seq == 17);
  CHECK(d[0].record.measurement().value() == 17);
}

TEST_CASE("batches respect the record limit", "[agent][spool]") {
  TempDir dir;
  const std::string path = dir.path() + "/records.jsonl";
  for (int i = 0; i < 10; ++i) AppendFile(path, MeasurementLine(i));
  SpoolTailer t(path);
  auto a = t.Read(3, 1 << 20);
  REQUIRE(a.ok());
  CHECK(a->size() == 3);
  CHECK(a->back().seq == 2);
  auto b = t.Read(100, 1);  // byte limit: at least one line
  REQUIRE(b.ok());
  CHECK(b->size() == 1);
  CHECK(b->front().seq == 3);
}

TEST_CASE("at the end an unterminated last line counts", "[agent][spool]") {
  TempDir dir;
  const std::string path = dir.path() + "/records.jsonl";
  std::string line = MeasurementLine(3);
  AppendFile(path, MeasurementLine(2));
  AppendFile(path, line.substr(0, line.size() - 1));  // no newline
  SpoolTailer t(path);
  CHECK(ReadAll(t).size() == 1);
  auto rest = ReadAll(t, /*final=*/true);
  REQUIRE(rest.size() == 1);
  CHECK(rest[0].seq == 1);
  CHECK(rest[0].record.measurement().value() == 3);
  CHECK(*CountSpoolLines(path) == 2);
  CHECK(ReadAll(t, true).empty());
}
