// The compact record set (reports/record_set.h) and the scorecard built from
// it: the coordinator builds a big run's card from a RecordSet; that card
// must be the one the parsed records give, field for field.
#include "reports/record_set.h"

#include <memory>
#include <string>
#include <vector>

#include "benchmarks/report_scale/report_scale_data.h"
#include "benchmarks/scale/measure.h"
#include "catch2/catch.hpp"
#include "google/protobuf/util/message_differencer.h"
#include "reports/record_wire.h"
#include "reports/scorecard.h"
#include "tests/reports/analysis_test_util.h"
#include "tests/reports/scorecard_test_util.h"

namespace cmax::reports {
namespace {

using testing::Find;
using testing::Meas;

v1::ExportedRecord Sample(const std::string& node, const std::string& metric, double v) {
  v1::ExportedRecord r;
  r.set_node(node);
  r.set_suite("burnin");
  r.set_task_id("burnin@" + node);
  r.set_attempt(1);
  auto* s = r.mutable_record()->mutable_sample();
  s->set_metric(metric);
  s->set_value(v);
  (*s->mutable_labels())["gpu"] = "0";
  return r;
}

std::vector<v1::ExportedRecord> Scan(const RecordSet& set, const RecordFilter& f) {
  std::vector<v1::ExportedRecord> out;
  set.ForEach(f, [&](size_t, const v1::ExportedRecord& r) { out.push_back(r); });
  return out;
}

// The same records moved into a RecordSet (the vector left empty).
RunData Compacted(RunData d) {
  auto set = std::make_shared<RecordSet>();
  for (const auto& r : d.records) set->Add(r);
  d.records.clear();
  d.record_set = std::move(set);
  return d;
}

// "" when equal (the `generated` time aside), else the differences.
using scale::ScorecardDifferences;

// Both overloads from a record set against the parsed (existing) path.
void CheckSameCard(const RunData& d) {
  const v1::Scorecard parsed = BuildScorecard(d);
  const RunData compact = Compacted(d);
  const v1::Scorecard from_set_copy = BuildScorecard(compact);  // const: copies the set
  INFO(ScorecardDifferences(parsed, from_set_copy));
  CHECK(ScorecardDifferences(parsed, from_set_copy).empty());
  RunData moved = Compacted(d);
  const v1::Scorecard from_set_moved = BuildScorecard(std::move(moved));
  INFO(ScorecardDifferences(parsed, from_set_moved));
  CHECK(ScorecardDifferences(parsed, from_set_moved).empty());
  // The compact input is left as it was by the const overload.
  CHECK(RecordCount(compact) == d.records.size());
}

TEST_CASE("record set: records come back whole and in order, filters and drops are exact",
          "[record_set]") {
  std::vector<v1::ExportedRecord> in = {
      Meas("n1", "gemm", "gemm_tflops", 700, "TFLOP/s",
           {{"gpu", "0"}, {"dtype", "bf16"}}),
      Find("n1", "hostcheck", "hostcheck.swap", v1::SEVERITY_WARN, "reliability", "node",
           "swap is on"),
      Sample("n2", "gpu_power_w", 650),
      Meas("n2", "gemm", "gemm_tflops", 710, "TFLOP/s", {{"gpu", "1"}}),
      Meas("n2", "health", "gpu_count", 8, "count"),
  };
  in[2].set_late(true);
  in[3].set_seq(7);
  RecordSet set;
  for (const auto& r : in) set.Add(r);
  REQUIRE(set.size() == in.size());
  CHECK(set.bytes() > 0);

  const auto all = Scan(set, {});
  REQUIRE(all.size() == in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    INFO("record " << i << ": " << in[i].ShortDebugString());
    CHECK(google::protobuf::util::MessageDifferencer::Equals(all[i], in[i]));
  }
  const auto findings = Scan(set, {v1::Record::kFinding});
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].record().finding().check_id() == "hostcheck.swap");
  const auto gemm = Scan(set, {v1::Record::kMeasurement, {}, "gemm_tflops"});
  REQUIRE(gemm.size() == 2);
  CHECK(gemm[1].seq() == 7);
  CHECK(Scan(set, {v1::Record::KIND_NOT_SET, "health"}).size() == 1);
  CHECK(Scan(set, {v1::Record::kSample, {}, "gpu_power_w"}).size() == 1);
  CHECK(Scan(set, {v1::Record::KIND_NOT_SET, "no-such-suite"}).empty());
  CHECK(Scan(set, {v1::Record::kMeasurement, {}, "gpu_power_w"}).empty());  // a Sample's

  {
    // suite_or_own: the record's suite, or its own (the Measurement's).
    v1::ExportedRecord odd = Meas("n3", "storage", "storage_iops", 5, "count");
    odd.set_suite("");
    odd.mutable_record()->mutable_measurement()->set_suite("storage");
    RecordSet two;
    two.Add(odd);
    two.Add(in[0]);
    RecordFilter f;
    f.suite_or_own = "storage";
    REQUIRE(Scan(two, f).size() == 1);
    CHECK(Scan(two, f)[0].record().measurement().metric() == "storage_iops");
    f.suite_or_own = "gemm";
    CHECK(Scan(two, f).size() == 1);
    f.suite_or_own = "burnin";
    CHECK(Scan(two, f).empty());
    RunData with_vector;
    with_vector.records = {odd, in[0]};
    f.suite_or_own = "storage";
    int seen = 0;
    ForEachRecord(with_vector, f, [&](const v1::ExportedRecord&) { ++seen; });
    CHECK(seen == 1);
  }

  set.Drop(0);
  CHECK(set.kept() == in.size() - 1);
  CHECK(Scan(set, {v1::Record::kMeasurement, {}, "gemm_tflops"}).size() == 1);
  int visited = 0;
  CHECK(set.ForEachUntil({}, [&](size_t i, const v1::ExportedRecord&) {
    ++visited;
    return i == 2;
  }));
  CHECK(visited == 2);  // records 1 and 2: 0 is dropped, the scan stopped at 2

  // ForEachRecord: the vector first, then the set.
  RunData d;
  d.records.push_back(in[4]);
  d.record_set = std::make_shared<RecordSet>(set);
  std::vector<std::string> metrics;
  ForEachRecord(d, [&](const v1::ExportedRecord& r) {
    metrics.push_back(RecordMetric(r.record()));
  });
  CHECK(metrics == std::vector<std::string>{"gpu_count", "", "gpu_power_w", "gemm_tflops",
                                            "gpu_count"});
  CHECK(RecordCount(d) == 5);
  CHECK(AnyRecord(d, {v1::Record::kSample},
                  [](const v1::ExportedRecord& r) { return r.late(); }));
  CHECK_FALSE(AnyRecord(d, {v1::Record::kFinding},
                        [](const v1::ExportedRecord& r) { return r.late(); }));
}

TEST_CASE("record set: a mixed simulated run gives the same scorecard as parsed records",
          "[record_set]") {
  // report_scale's run (hostcheck, gemm, memory, all_reduce, burn-in with
  // Samples, storage, connectivity, findings, slow GPUs), with what the
  // judged view leaves out: an earlier attempt's and a late record, and
  // selftest's.
  RunData d = report_scale::Generate(24, 8, 3);
  REQUIRE(d.records.size() > 2000);
  v1::TaskInfo& t = d.tasks[1];  // gemm on the first node
  REQUIRE(t.suite() == "gemm");
  t.set_attempt(2);
  auto* earlier = t.add_earlier_attempts();
  earlier->set_attempt(1);
  earlier->set_state(v1::TASK_LOST);
  earlier->set_message("agent lost");
  for (auto& r : d.records) {
    if (r.task_id() == t.task_id()) r.set_attempt(2);
  }
  v1::ExportedRecord old_attempt = d.records.front();
  old_attempt.set_task_id(t.task_id());
  old_attempt.set_suite("gemm");
  old_attempt.set_attempt(1);
  d.records.push_back(old_attempt);
  v1::ExportedRecord late =
      Meas(d.nodes[2], "storage", "storage_bandwidth_mbps", 10, "MB/s", {{"job", "all"}});
  late.set_task_id("storage@" + d.nodes[2]);
  late.set_attempt(1);
  late.set_late(true);
  d.records.push_back(late);
  d.records.push_back(Meas(d.nodes[3], "selftest", "selftest_records", 1, "count"));
  d.records.push_back(Find(d.nodes[4], "gemm", "gemm.no_driver", v1::SEVERITY_FAIL,
                           "compute", "node", "could not run"));
  d.records.back().mutable_record()->mutable_finding()->set_not_measured(true);

  const v1::Scorecard card = BuildScorecard(d);
  // Not a vacuous comparison: the card has nodes, findings, rules, charts
  // and the history of what was left out.
  REQUIRE(card.nodes_size() == 24);
  CHECK(card.findings_size() > 0);
  CHECK(card.charts_size() > 0);
  CHECK(card.simulated());
  int rules = 0;
  for (const auto& c : card.categories()) rules += c.rules_size();
  CHECK(rules > 0);
  CHECK(card.nodes(0).history_size() > 0);
  CheckSameCard(d);
}

TEST_CASE("record set: the reports tests' runs give the same scorecard from a record set",
          "[record_set]") {
  CheckSameCard(testing::CleanHostcheckRun());
  CheckSameCard(testing::GpuRun(800, 0.2));
  RunData d = testing::CleanHostcheckRun();
  testing::EvaluateEveryCategory(&d);
  CheckSameCard(d);
}

}  // namespace
}  // namespace cmax::reports

namespace cmax::reports {
namespace {

// Adds `r` the way the coordinator's scorecard thread does: the store's
// row fields and the Record's serialized bytes.
void AddAsStored(RecordSet* set, const v1::ExportedRecord& r) {
  const std::string bytes = r.record().SerializeAsString();
  set->AddWire(r.task_id(), r.attempt(), r.seq(), r.node(), r.suite(), bytes, r.late(),
               r.rank());
}

TEST_CASE("record set: records added as stored bytes are the records added parsed",
          "[record_set]") {
  RunData d = report_scale::Generate(6, 8, 2);
  REQUIRE(d.records.size() > 500);
  // Edge values of every field the wire form writes by hand: negatives
  // (10-byte varints), a big seq, late, empty strings, an empty record.
  v1::ExportedRecord edge = d.records.front();
  edge.set_attempt(-3);
  edge.set_rank(-1);
  edge.set_seq(int64_t{1} << 40);
  edge.set_late(true);
  d.records.push_back(edge);
  v1::ExportedRecord empty;
  empty.mutable_record();
  d.records.push_back(empty);
  v1::ExportedRecord no_ids = d.records[10];
  no_ids.clear_task_id();
  no_ids.clear_node();
  no_ids.clear_suite();
  no_ids.set_attempt(0);
  no_ids.set_seq(0);
  d.records.push_back(no_ids);
  RecordSet parsed, wire;
  for (const auto& r : d.records) {
    parsed.Add(r);
    AddAsStored(&wire, r);
  }
  REQUIRE(wire.size() == d.records.size());
  // Every record comes back field for field, and every filter selects the
  // same records.
  std::vector<RecordFilter> filters(6);
  filters[1].kind = v1::Record::kSample;
  filters[2].suite = "gemm";
  filters[3].metric = "gemm_tflops";
  filters[4].suite_or_own = "burnin";
  filters[5].kind = v1::Record::kFinding;
  for (size_t f = 0; f < filters.size(); ++f) {
    const auto a = Scan(parsed, filters[f]);
    const auto b = Scan(wire, filters[f]);
    INFO("filter " << f);
    REQUIRE(a.size() == b.size());
    if (f > 0) CHECK(a.size() < d.records.size());
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("record " << i << ": " << a[i].ShortDebugString());
      CHECK(google::protobuf::util::MessageDifferencer::Equals(a[i], b[i]));
    }
  }
  CHECK(Scan(wire, {}).front().record().SerializeAsString() ==
        d.records.front().record().SerializeAsString());
  // And so does the card.
  RunData from_wire = d;
  auto set = std::make_shared<RecordSet>();
  for (const auto& r : d.records) AddAsStored(set.get(), r);
  from_wire.records.clear();
  from_wire.record_set = set;
  INFO(ScorecardDifferences(BuildScorecard(d), BuildScorecard(from_wire)));
  CHECK(ScorecardDifferences(BuildScorecard(d), BuildScorecard(from_wire)).empty());
}

TEST_CASE("record set: bytes that are not a record are kept as far as they parse",
          "[record_set]") {
  // A truncated Record: AddWire falls back to what a parse-and-Add keeps.
  v1::ExportedRecord r = Meas("n1", "gemm", "gemm_tflops", 700, "TFLOP/s");
  std::string bytes = r.record().SerializeAsString();
  bytes.resize(bytes.size() / 2);
  RecordSet set;
  set.AddWire("t", 1, 0, "n1", "gemm", bytes, false, 0);
  v1::ExportedRecord expected;
  expected.set_task_id("t");
  expected.set_attempt(1);
  expected.set_node("n1");
  expected.set_suite("gemm");
  expected.mutable_record()->ParseFromString(bytes);
  const auto out = Scan(set, {});
  REQUIRE(out.size() == 1);
  CHECK(google::protobuf::util::MessageDifferencer::Equals(out[0], expected));
}

TEST_CASE("record set: a scan's labels_if leaves labels out only of records it declines",
          "[record_set]") {
  // Labels of each kind that has them, kinds without, a record with no node
  // (RecordNode reads its "node" label) and a Measurement written twice in
  // one record (parsed as one, merged, like any protobuf message).
  v1::ExportedRecord finding = Find("n1", "hostcheck", "hostcheck.swap", v1::SEVERITY_WARN,
                                    "reliability", "node", "swap is on");
  (*finding.mutable_record()->mutable_finding()->mutable_labels())["device"] = "sda";
  finding.mutable_record()->mutable_finding()->set_not_measured(true);
  v1::ExportedRecord progress;
  progress.set_node("n3");
  progress.set_task_id("t");
  progress.mutable_record()->mutable_progress()->set_phase("warmup");
  v1::ExportedRecord no_node = Meas("", "gemm", "gemm_tflops", 650, "TFLOP/s",
                                    {{"node", "n9"}, {"gpu", "3"}});
  std::vector<v1::ExportedRecord> in = {
      Meas("n1", "gemm", "gemm_tflops", 700, "TFLOP/s", {{"gpu", "0"}, {"dtype", "bf16"}}),
      finding,
      Sample("n2", "gpu_power_w", 650),
      progress,
      no_node,
      Meas("n2", "health", "gpu_count", 8, "count", {{"gpu", "all"}}),
  };
  in[0].mutable_record()->mutable_measurement()->set_simulated(true);
  in[0].set_seq(41);
  in[0].set_late(true);
  in[0].set_rank(-2);
  RecordSet set;
  for (const auto& r : in) set.Add(r);
  // The Measurement twice: labels and value in the first, more labels and
  // the unit in the second.
  {
    v1::Measurement first, second;
    first.set_metric("busbw_gbps");
    first.set_value(90);
    (*first.mutable_labels())["op"] = "all_reduce";
    second.set_unit("GB/s");
    (*second.mutable_labels())["dtype"] = "float";
    v1::Record rec;
    *rec.mutable_measurement() = first;
    std::string wire = rec.SerializeAsString();
    rec.Clear();
    *rec.mutable_measurement() = second;
    wire += rec.SerializeAsString();
    v1::ExportedRecord whole;
    whole.set_node("n4");
    whole.set_suite("collective");
    REQUIRE(whole.mutable_record()->ParseFromString(wire));
    REQUIRE(whole.record().measurement().labels().size() == 2);
    in.push_back(whole);
    set.AddWire("", 0, 0, "n4", "collective", wire, false, 0);
  }
  auto without_labels = [](v1::ExportedRecord r) {
    v1::Record* k = r.mutable_record();
    if (k->has_measurement()) k->mutable_measurement()->clear_labels();
    if (k->has_finding()) k->mutable_finding()->clear_labels();
    if (k->has_sample()) k->mutable_sample()->clear_labels();
    return r;
  };

  SECTION("declined: everything but the labels, as the record holds it") {
    RecordFilter f;
    std::vector<v1::ExportedRecord> asked;
    f.labels_if = [&](const v1::ExportedRecord& r) {
      asked.push_back(r);
      return false;
    };
    const auto got = Scan(set, f);
    REQUIRE(got.size() == in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      INFO("record " << i << ": " << in[i].ShortDebugString() << "\ngot "
                     << got[i].ShortDebugString());
      // The record without a node comes whole (its node is a label).
      const v1::ExportedRecord want = in[i].node().empty() ? in[i] : without_labels(in[i]);
      CHECK(google::protobuf::util::MessageDifferencer::Equals(got[i], want));
    }
    // Asked about each record that had labels to leave out and a node, with
    // the record as parsed without them.
    REQUIRE(asked.size() == 5);
    CHECK(asked[0].seq() == 41);
    CHECK(asked[0].record().measurement().labels().empty());
    CHECK(asked[0].record().measurement().simulated());
    CHECK(asked[1].record().finding().not_measured());
    CHECK(asked[1].record().finding().labels().empty());
    CHECK(asked[4].record().measurement().unit() == "GB/s");
  }
  SECTION("asked for: the record whole") {
    RecordFilter f;
    f.labels_if = [](const v1::ExportedRecord& r) {
      return r.record().has_measurement() && r.record().measurement().metric() != "gpu_count";
    };
    const auto got = Scan(set, f);
    REQUIRE(got.size() == in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      INFO("record " << i << ": " << in[i].ShortDebugString());
      const bool whole = in[i].node().empty() || (in[i].record().has_measurement() &&
                                                  in[i].record().measurement().metric() !=
                                                      "gpu_count");
      const v1::ExportedRecord want = whole ? in[i] : without_labels(in[i]);
      CHECK(google::protobuf::util::MessageDifferencer::Equals(got[i], want));
    }
  }
  // `r` with only the labels keyed gpu, op or node.
  auto gpu_op_node = [](v1::ExportedRecord r) {
    auto keep = [](google::protobuf::Map<std::string, std::string>* labels) {
      for (auto it = labels->begin(); it != labels->end();) {
        if (it->first == "gpu" || it->first == "op" || it->first == "node") {
          ++it;
        } else {
          it = labels->erase(it);
        }
      }
    };
    v1::Record* k = r.mutable_record();
    if (k->has_measurement()) keep(k->mutable_measurement()->mutable_labels());
    if (k->has_finding()) keep(k->mutable_finding()->mutable_labels());
    if (k->has_sample()) keep(k->mutable_sample()->mutable_labels());
    return r;
  };
  SECTION("label_keys: only the labels listed and node, everything else as held") {
    RecordFilter f;
    f.label_keys = {"gpu", "op"};
    const auto got = Scan(set, f);
    REQUIRE(got.size() == in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      INFO("record " << i << ": " << in[i].ShortDebugString() << "\ngot "
                     << got[i].ShortDebugString());
      CHECK(google::protobuf::util::MessageDifferencer::Equals(got[i], gpu_op_node(in[i])));
    }
    // Labels that were left out: the dtype of record 0 and of the
    // Measurement written twice (whose "op" from its first part stays).
    CHECK(in[0].record().measurement().labels().count("dtype") == 1);
    CHECK(got[0].record().measurement().labels().count("dtype") == 0);
    CHECK(got[0].record().measurement().labels().at("gpu") == "0");
    CHECK(got[4].record().measurement().labels().at("node") == "n9");
    CHECK(got[6].record().measurement().labels().size() == 1);
    CHECK(got[6].record().measurement().labels().at("op") == "all_reduce");
    CHECK(got[1].record().finding().labels().empty());
  }
  SECTION("label_keys with labels_if: no labels where declined, the listed ones where asked") {
    RecordFilter f;
    f.labels_if = [](const v1::ExportedRecord& r) { return r.record().has_measurement(); };
    f.label_keys = {"gpu", "op"};
    const auto got = Scan(set, f);
    REQUIRE(got.size() == in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      INFO("record " << i << ": " << in[i].ShortDebugString());
      const bool asked = in[i].node().empty() || in[i].record().has_measurement();
      const v1::ExportedRecord want = asked ? gpu_op_node(in[i]) : without_labels(in[i]);
      CHECK(google::protobuf::util::MessageDifferencer::Equals(got[i], want));
    }
  }
  SECTION("RunData.records keep every label with label_keys") {
    RunData d;
    d.records = in;
    RecordFilter f;
    f.label_keys = {"gpu"};
    size_t n = 0;
    ForEachRecord(d, f, [&](const v1::ExportedRecord& r) {
      CHECK(google::protobuf::util::MessageDifferencer::Equals(r, in[n]));
      ++n;
    });
    CHECK(n == in.size());
  }
  SECTION("RunData.records are whole either way") {
    RunData d;
    d.records = in;
    RecordFilter f;
    f.labels_if = NoLabels;
    size_t n = 0;
    ForEachRecord(d, f, [&](const v1::ExportedRecord& r) {
      CHECK(google::protobuf::util::MessageDifferencer::Equals(r, in[n]));
      ++n;
    });
    CHECK(n == in.size());
  }
}

}  // namespace

// The ExportedRecord `wire` split (record_wire.h) and put back together as
// ForEachUntil does: parse the rest, merge the labels `keep` keeps.
v1::ExportedRecord SplitAndMerge(const std::string& wire,
                                 const std::vector<std::string_view>* keep) {
  wire::SplitBuffers b;
  v1::ExportedRecord out;
  REQUIRE(wire::SplitLabels(wire, &b));
  REQUIRE(out.ParseFromString(b.top));
  wire::LabelsWire(keep, &b);
  REQUIRE(out.MergeFromString(b.labels_wire));
  return out;
}

TEST_CASE("record wire: bytes that do not walk are not split, and are parsed whole",
          "[record_set]") {
  const v1::ExportedRecord r = Meas("n1", "gemm", "gemm_tflops", 700, "TFLOP/s",
                                    {{"gpu", "0"}, {"dtype", "bf16"}});
  const std::string good = r.SerializeAsString();
  wire::SplitBuffers b;
  REQUIRE(wire::SplitLabels(good, &b));
  CHECK(b.labels.size() == 2);
  // Every cut short of the whole: a field, a length or a varint cut.
  for (size_t n = 1; n < good.size(); ++n) {
    INFO("cut at " << n);
    v1::ExportedRecord parsed;
    if (parsed.ParseFromString(good.substr(0, n))) continue;  // a cut between fields
    CHECK_FALSE(wire::SplitLabels(good.substr(0, n), &b));
  }
  // Bytes after a good record's (which has labels to leave out, so a false
  // below is the walk's): a field protobuf would skip walks; the rest do not.
  CHECK(wire::SplitLabels(good + std::string("\xa0\x01\x05", 3), &b));  // field 20, varint
  const std::string bad[] = {
      std::string("\x0b\x0c", 2),          // a group (start, end): refused
      std::string("\x0e", 1),              // wire type 6
      std::string("\x0f", 1),              // wire type 7
      std::string("\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12),  // varint > 10 bytes
      std::string("\x52\x05" "ab", 4),     // a length past the end
      std::string("\x52\xff\xff\xff\xff\x1f", 6),  // a length past 2^31
      std::string("\x59\x01\x02\x03", 4),  // fixed64 cut short
      std::string("\x5d\x01\x02", 3),      // fixed32 cut short
      std::string("\x52", 1),              // a tag and nothing after
  };
  for (const std::string& w : bad) {
    INFO("bytes of size " << w.size());
    CHECK_FALSE(wire::SplitLabels(good + w, &b));
  }
  // Inside the record: a Measurement that does not walk, and a labels
  // field that is not length-delimited (a parse keeps it as unknown).
  {
    v1::ExportedRecord broken;
    broken.set_node("n1");
    std::string meas = r.record().measurement().SerializeAsString() + std::string("\x0e", 1);
    REQUIRE(meas.size() < 120);  // one-byte lengths below
    std::string rec;
    rec += static_cast<char>((1 << 3) | 2);
    rec += static_cast<char>(meas.size());
    rec += meas;
    std::string top = broken.SerializeAsString();
    top += static_cast<char>((6 << 3) | 2);
    top += static_cast<char>(rec.size());
    top += rec;
    CHECK_FALSE(wire::SplitLabels(top, &b));
    const int labels = v1::Measurement::kLabelsFieldNumber;
    meas = r.record().measurement().SerializeAsString();
    meas += static_cast<char>(labels << 3);  // varint
    meas += '\x01';
    rec.clear();
    rec += static_cast<char>((1 << 3) | 2);
    rec += static_cast<char>(meas.size());
    rec += meas;
    top = broken.SerializeAsString();
    top += static_cast<char>((6 << 3) | 2);
    top += static_cast<char>(rec.size());
    top += rec;
    v1::ExportedRecord parsed;
    REQUIRE(parsed.ParseFromString(top));  // protobuf takes it; the split does not
    CHECK_FALSE(wire::SplitLabels(top, &b));
  }
  // No labels: nothing to leave out, parsed whole.
  v1::ExportedRecord plain = Meas("n1", "gemm", "gemm_tflops", 700, "TFLOP/s");
  plain.mutable_record()->mutable_measurement()->clear_labels();
  CHECK_FALSE(wire::SplitLabels(plain.SerializeAsString(), &b));
  // A map entry's key: the last field 1, "" when none, what was read
  // before a bad field.
  CHECK(wire::EntryKey(std::string("\x0a\x01" "a\x12\x01" "b\x0a\x01" "c", 9)) == "c");
  CHECK(wire::EntryKey(std::string("\x12\x01" "b", 3)).empty());
  CHECK(wire::EntryKey(std::string("\x0a\x01" "a\x0e", 4)) == "a");
}

TEST_CASE("record wire: split and merged is the record a whole parse gives", "[record_set]") {
  // One Record with a Measurement, then a Finding, then a Measurement
  // again: a parse empties the oneof at each switch, so only the last
  // Measurement's labels survive; and a Measurement twice in a row merges.
  v1::Measurement m1, m2, m3;
  m1.set_metric("busbw");
  (*m1.mutable_labels())["op"] = "all_reduce";
  (*m1.mutable_labels())["gpu"] = "1";
  v1::Finding f;
  f.set_check_id("x");
  (*f.mutable_labels())["port"] = "mlx5_0";
  m2.set_value(3);
  (*m2.mutable_labels())["dtype"] = "float";
  (*m2.mutable_labels())["gpu"] = "2";
  m3.set_unit("GB/s");
  (*m3.mutable_labels())["gpu"] = "3";  // the last "gpu" wins
  (*m3.mutable_labels())["node"] = "n7";
  std::string record_wire;
  for (const v1::Record& part : [&] {
         std::vector<v1::Record> parts(4);
         *parts[0].mutable_measurement() = m1;
         *parts[1].mutable_finding() = f;
         *parts[2].mutable_measurement() = m2;
         *parts[3].mutable_measurement() = m3;
         return parts;
       }()) {
    record_wire += part.SerializeAsString();
  }
  v1::ExportedRecord whole;
  whole.set_node("n7");
  whole.set_suite("collective");
  whole.set_seq(5);
  REQUIRE(whole.mutable_record()->ParseFromString(record_wire));
  REQUIRE(whole.record().measurement().labels().size() == 3);
  RecordSet set;
  set.AddWire("", 0, 5, "n7", "collective", record_wire, false, 0);
  // The ExportedRecord's bytes as AddWire holds them: the record's as they
  // came.
  REQUIRE(record_wire.size() < 128);  // a one-byte length below
  std::string wire_bytes;
  {
    v1::ExportedRecord top = whole;
    top.clear_record();
    wire_bytes = top.SerializeAsString();
    wire_bytes += static_cast<char>((6 << 3) | 2);
    wire_bytes += static_cast<char>(record_wire.size());
    wire_bytes += record_wire;
  }
  CHECK(google::protobuf::util::MessageDifferencer::Equals(SplitAndMerge(wire_bytes, nullptr),
                                                           whole));
  const std::vector<std::string_view> keep = {"dtype"};
  v1::ExportedRecord some = whole;
  some.mutable_record()->mutable_measurement()->mutable_labels()->erase("gpu");
  CHECK(google::protobuf::util::MessageDifferencer::Equals(SplitAndMerge(wire_bytes, &keep),
                                                           some));
  // And through a scan: labels asked for, with and without label_keys.
  RecordFilter all;
  all.labels_if = [](const v1::ExportedRecord&) { return true; };
  auto got = Scan(set, all);
  REQUIRE(got.size() == 1);
  CHECK(google::protobuf::util::MessageDifferencer::Equals(got[0], whole));
  all.label_keys = {"dtype"};
  got = Scan(set, all);
  REQUIRE(got.size() == 1);
  CHECK(google::protobuf::util::MessageDifferencer::Equals(got[0], some));
}

}  // namespace cmax::reports
