// The wire walk behind RecordSet's label-less parses (record_set.h,
// RecordFilter::labels_if and label_keys): an ExportedRecord's bytes split
// into the record without its labels and the label entries themselves, so
// a scan parses the rest once and the labels only when it reads them.
// Walked by hand, varint by varint: protobuf's io::CodedInputStream was
// measured slower at it (benchmarks/record_wire, issue 33 item 3; see
// record_wire.cc). Internal to reports/; declared here for record_set_test
// and benchmarks/record_wire.
#ifndef CMAX_REPORTS_RECORD_WIRE_H_
#define CMAX_REPORTS_RECORD_WIRE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"

namespace cmax::reports::wire {

// Scratch buffers of SplitLabels and LabelsWire, kept between records so a
// scan allocates little.
struct SplitBuffers {
  // The ExportedRecord without any label of its record's kind: every other
  // field keeps its bytes and its order, so it parses to the same values.
  std::string top;
  // The label entries (map entry messages, as they are on the wire) that a
  // parse of the whole record keeps, in wire order: those of the record's
  // last kind field and the same-kind fields before it (a parse merges
  // them); a field of another kind in between empties the oneof, so the
  // entries before it are not here. They point into the split bytes.
  std::vector<absl::string_view> labels;
  int kind_field = 0;    // the record's kind (v1::Record field number)
  int labels_field = 0;  // that kind's labels field number
  // LabelsWire's output.
  std::string labels_wire;
  // Scratch for nested messages.
  std::string record, kind;
};

// Splits an ExportedRecord's wire bytes as SplitBuffers says. False (the
// buffers then undefined) when there are no labels to leave out, or the
// bytes do not walk: cut short, a varint over 10 bytes, a group, wire type
// 6 or 7, or a labels field that is not length-delimited (a parse keeps
// that as an unknown field). The caller then parses the bytes whole.
bool SplitLabels(absl::string_view wire, SplitBuffers* b);

// After a SplitLabels that returned true: b->labels_wire is an
// ExportedRecord holding only the label entries that `keep` keeps (null:
// all of them; else the keys it lists and "node"), under the same record
// kind. Merged (MergeFrom*) into the parse of b->top, it gives the record
// with those labels. Empty when no entry is kept.
void LabelsWire(const std::vector<std::string_view>* keep, SplitBuffers* b);

// The key of a map entry's wire form (field 1; "" when absent, as a parse
// reads it; the last one when repeated).
absl::string_view EntryKey(absl::string_view entry);

}  // namespace cmax::reports::wire

#endif  // CMAX_REPORTS_RECORD_WIRE_H_
