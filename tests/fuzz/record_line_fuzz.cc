// libFuzzer target: the record parser (one JSON line -> cmax.v1.Record), the
// agent's view of whatever a suite writes to its spool.
//
// Property: a record that parses prints back (RecordToJsonLine) to a line
// that parses to the same message. Doubles compare with == (NaN equal to
// NaN): protobuf's JSON parser reads "-0" as +0, which is harmless and not
// ours to change.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/record_io.h"
#include "google/protobuf/util/field_comparator.h"
#include "google/protobuf/util/message_differencer.h"

namespace {

bool Same(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);
  google::protobuf::util::MessageDifferencer differencer;
  differencer.set_field_comparator(&comparator);
  // -0 is "set" in proto3 (its bits are not zero) but reads back as +0,
  // which is not: compare unset fields as their default values.
  differencer.set_message_field_comparison(
      google::protobuf::util::MessageDifferencer::EQUIVALENT);
  return differencer.Compare(a, b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<cmax::v1::Record> record = cmax::ParseRecordLine(line);
  if (!record.ok()) return 0;
  std::string printed = cmax::RecordToJsonLine(*record);
  if (printed.find('\n') != std::string::npos) abort();  // one record, one line
  absl::StatusOr<cmax::v1::Record> again = cmax::ParseRecordLine(printed);
  if (!again.ok()) {
    fprintf(stderr, "printed record does not parse: %s\n%s\n", again.status().ToString().c_str(),
            printed.c_str());
    abort();
  }
  if (!Same(*record, *again)) {
    fprintf(stderr, "round trip changed the record:\n%s\n%s\n", printed.c_str(),
            cmax::RecordToJsonLine(*again).c_str());
    abort();
  }
  return 0;
}
