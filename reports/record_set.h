// A run's records held compactly for the scorecard (issue 18): each record
// as its protobuf wire bytes (about a fifth of a parsed ExportedRecord, whose
// label maps cost ~1.5 KB a record) plus the few fields a scan filters on.
// The judges read records through ForEachRecord, which parses one record at
// a time into a scratch message, so a 1.9 M-record run is held once, in
// wire form, instead of as 1.9 M parsed messages.
#ifndef CMAX_REPORTS_RECORD_SET_H_
#define CMAX_REPORTS_RECORD_SET_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "cmax/v1/record.pb.h"
#include "cmax/v1/run.pb.h"
#include "reports/run_data.h"

namespace cmax::reports {

// Which records a scan wants; an empty field matches everything. A scan's
// callback still sees only records it would have looked at anyway: the
// filters only save parsing the ones it skips at once.
struct RecordFilter {
  v1::Record::KindCase kind = v1::Record::KIND_NOT_SET;  // not set: any kind
  std::string_view suite;                                // ExportedRecord.suite
  std::string_view metric;  // the Measurement's or Sample's metric
  // When set, only records whose metric (as above, "" for other kinds)
  // it accepts.
  bool (*metric_in)(const std::string& metric) = nullptr;
  // When set, only records whose ExportedRecord.suite or own suite (the
  // Measurement's, Finding's, Sample's, ... `suite` field) is this.
  std::string_view suite_or_own;
  // Labels are most of a parse's cost (issue 18). When set, a record held in
  // a RecordSet is first parsed without the labels of its Measurement,
  // Finding or Sample, and labels_if(that record) says whether the scan
  // reads them: true parses its labels too, merged into that record (each
  // byte is parsed once). A record whose `node` is empty always gets its
  // labels (RecordNode reads its "node" label). A scan
  // that sets this must read no label of a record it answered false for.
  // Unset: every record is parsed whole. Records in RunData.records are
  // whole either way, so the scan's result is the same both ways.
  std::function<bool(const v1::ExportedRecord&)> labels_if;
  // When not empty, a record held in a RecordSet that is parsed with labels
  // (labels_if unset or true) gets only the labels with these keys, and its
  // "node" label (RecordNode reads it): the rest of its Measurement's,
  // Finding's or Sample's labels are not parsed. A scan that sets this must
  // read no other label (nor copy the labels out whole). Records in
  // RunData.records keep all their labels, so the result is the same both
  // ways. Keys are compared as they are; keep the list short.
  std::vector<std::string_view> label_keys;
};

// A labels_if for scans that read no label at all.
bool NoLabels(const v1::ExportedRecord& rec);

class RecordSet {
 public:
  RecordSet() = default;
  RecordSet(const RecordSet&) = default;
  RecordSet& operator=(const RecordSet&) = default;
  RecordSet(RecordSet&&) = default;
  RecordSet& operator=(RecordSet&&) = default;

  // Appends `rec` (serialized; `rec` itself is not kept).
  void Add(const v1::ExportedRecord& rec);
  // Appends the ExportedRecord with these fields and `record` (a serialized
  // v1::Record, as the coordinator's store holds it): the same entry and
  // the same message in every scan as Add of the parsed record, but the
  // record's bytes are copied as they are instead of parsed into a message
  // and serialized again (the record is parsed once, into a reused
  // message, for its kind, metric and suite). Bytes that do not parse go
  // through Add of what parsed, as a parse-and-Add would.
  void AddWire(std::string_view task_id, int attempt, int64_t seq, std::string_view node,
               std::string_view suite, std::string_view record, bool late, int rank);
  // Records added, dropped ones included.
  size_t size() const { return entries_.size(); }
  // Leaves record `i` out of every later scan (MakeJudgedView).
  void Drop(size_t i) { entries_[i].dropped = 1; }
  // Bytes held (wire bytes, index and names): what the scale figures report.
  size_t bytes() const;

  // Calls fn(i, rec) for every record not dropped that matches `filter`, in
  // the order they were added. `rec` is valid only during the call.
  void ForEach(const RecordFilter& filter,
               absl::FunctionRef<void(size_t, const v1::ExportedRecord&)> fn) const;
  // The same scan, stopping at the first record for which `fn` returns
  // true; returns whether it stopped.
  bool ForEachUntil(const RecordFilter& filter,
                    absl::FunctionRef<bool(size_t, const v1::ExportedRecord&)> fn) const;
  // Records not dropped.
  size_t kept() const;

 private:
  struct Entry {
    uint32_t chunk;
    uint32_t offset;
    uint32_t size;
    uint32_t metric;  // name id
    uint32_t suite;   // name id
    uint32_t own_suite;  // name id of the record's own `suite` field
    uint8_t kind;     // v1::Record::KindCase
    uint8_t dropped;
  };
  uint32_t NameId(std::string_view name);
  // Room for `n` more bytes in the last chunk (a new chunk when it is full);
  // returns the chunk.
  std::string& ChunkFor(size_t n);
  // -1 when `name` was never added (nothing can match).
  int64_t FindName(std::string_view name) const;

  static constexpr size_t kChunkBytes = size_t{16} << 20;
  std::vector<std::string> chunks_;  // never reallocated: no 2x copy while growing
  std::vector<Entry> entries_;
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, uint32_t> name_ids_;
};

// The metric a filter's `metric` compares: the Measurement's or the
// Sample's, "" for other kinds.
const std::string& RecordMetric(const v1::Record& r);
// The record's own `suite` field (Measurement, Finding, Sample, Progress,
// Log or Artifact), "" when it has no kind.
const std::string& RecordOwnSuite(const v1::Record& r);

// Every record of `data` matching `filter`: first data.records, then
// data.record_set (when set), in order. Scans that once iterated
// data.records go through this, so a RunData with its records in a
// RecordSet gives the same scorecard as one with them in the vector.
void ForEachRecord(const RunData& data, const RecordFilter& filter,
                   absl::FunctionRef<void(const v1::ExportedRecord&)> fn);
inline void ForEachRecord(const RunData& data,
                          absl::FunctionRef<void(const v1::ExportedRecord&)> fn) {
  ForEachRecord(data, RecordFilter{}, fn);
}
// True when some record matching `filter` satisfies `pred` (stops there).
bool AnyRecord(const RunData& data, const RecordFilter& filter,
               absl::FunctionRef<bool(const v1::ExportedRecord&)> pred);
// How many records `data` holds (vector and set, dropped ones not counted).
size_t RecordCount(const RunData& data);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_RECORD_SET_H_
