#include "reports/record_wire.h"

#include <algorithm>

#include "cmax/v1/record.pb.h"
#include "cmax/v1/run.pb.h"

namespace cmax::reports::wire {
namespace {

// The walk is by hand (protobuf.dev/programming-guides/encoding), not on
// protobuf's io::CodedInputStream: benchmarks/record_wire measured that one
// at 0.71-0.82x of this on the same split (a stream object per nested
// message and per map entry, its state kept in memory across the
// library's out-of-line calls), and issue 33 asked for the library only if
// no slower. The benchmark keeps the library version, to measure again.

// Reads a varint at p (before end); nullptr when it runs past end or over
// 10 bytes (protobuf.dev/programming-guides/encoding, "Base 128 Varints").
const uint8_t* ReadVarint(const uint8_t* p, const uint8_t* end, uint64_t* v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    const uint8_t b = *p++;
    x |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = x;
      return p;
    }
  }
  return nullptr;
}

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

constexpr uint32_t kLen = 2;  // the length-delimited wire type

// One field of a message's wire form: its tag, its bytes (tag included) and
// a length-delimited field's payload. The tag is kept whole, number and
// type read from it: a test of both is then one compare (two narrower
// fields compared at once made the compiler stall on a store it had just
// split in two).
struct Field {
  uint64_t tag = 0;
  uint32_t number() const { return static_cast<uint32_t>(tag >> 3); }
  uint32_t type() const { return static_cast<uint32_t>(tag & 7); }
  absl::string_view bytes;
  absl::string_view payload;
};

constexpr uint64_t LenTag(uint32_t number) { return (uint64_t{number} << 3) | kLen; }

// Calls fn(field) for each field of `msg` in order; false when the bytes do
// not walk (fn has then seen the fields before the bad one): cut short, a
// group (cmax's protos have none), or wire type 6 or 7.
template <typename Fn>
bool ForEachField(absl::string_view msg, Fn&& fn) {
  const auto* const base = reinterpret_cast<const uint8_t*>(msg.data());
  const uint8_t* p = base;
  const uint8_t* const end = base + msg.size();
  while (p < end) {
    const uint8_t* const begin = p;
    Field f;
    if ((p = ReadVarint(p, end, &f.tag)) == nullptr) return false;
    uint64_t v = 0;
    switch (f.type()) {
      case 0:
        if ((p = ReadVarint(p, end, &v)) == nullptr) return false;
        break;
      case 1:
        if (end - p < 8) return false;
        p += 8;
        break;
      case kLen:
        if ((p = ReadVarint(p, end, &v)) == nullptr || v > static_cast<uint64_t>(end - p)) {
          return false;
        }
        f.payload = absl::string_view(reinterpret_cast<const char*>(p), v);
        p += v;
        break;
      case 5:
        if (end - p < 4) return false;
        p += 4;
        break;
      default:
        return false;
    }
    f.bytes = absl::string_view(reinterpret_cast<const char*>(begin),
                                static_cast<size_t>(p - begin));
    fn(f);
  }
  return true;
}

// Appends a length-delimited field: tag, length, payload.
void AppendLen(uint32_t number, absl::string_view payload, std::string* out) {
  PutVarint((uint64_t{number} << 3) | kLen, out);
  PutVarint(payload.size(), out);
  out->append(payload.data(), payload.size());
}

// The labels field of each Record kind that has one (cmax/v1/record.proto):
// 0 for kinds without labels.
uint32_t LabelsFieldOf(uint32_t kind_field) {
  switch (kind_field) {
    case v1::Record::kMeasurementFieldNumber: return v1::Measurement::kLabelsFieldNumber;
    case v1::Record::kFindingFieldNumber: return v1::Finding::kLabelsFieldNumber;
    case v1::Record::kSampleFieldNumber: return v1::Sample::kLabelsFieldNumber;
    default: return 0;
  }
}

// Whether field `number` of a Record is one of the `kind` oneof's.
bool IsKindField(uint32_t number) {
  switch (number) {
    case v1::Record::kMeasurementFieldNumber:
    case v1::Record::kFindingFieldNumber:
    case v1::Record::kSampleFieldNumber:
    case v1::Record::kProgressFieldNumber:
    case v1::Record::kLogFieldNumber:
    case v1::Record::kArtifactFieldNumber:
      return true;
    default:
      return false;
  }
}

// Whether a label entry is kept: `keep` null keeps all, else the keys it
// lists and "node" (RecordNode reads it).
bool KeepLabel(absl::string_view entry, const std::vector<std::string_view>* keep) {
  if (keep == nullptr) return true;
  const absl::string_view key = EntryKey(entry);
  if (key == "node") return true;
  return std::find_if(keep->begin(), keep->end(), [&](std::string_view k) {
           return absl::string_view(k.data(), k.size()) == key;
         }) != keep->end();
}

}  // namespace

absl::string_view EntryKey(absl::string_view entry) {
  absl::string_view key;
  // A map entry that does not walk keeps the key read before the bad field
  // (the walk stops there).
  ForEachField(entry, [&](const Field& f) {
    if (f.tag == LenTag(1)) key = f.payload;
  });
  return key;
}

bool SplitLabels(absl::string_view wire, SplitBuffers* b) {
  b->top.clear();
  b->labels.clear();
  b->kind_field = 0;
  b->labels_field = 0;
  bool skipped = false;
  bool ok = true;  // false once a nested message does not walk
  // The kind message `g` without its labels, appended to b->record; its
  // label entries go to b->labels.
  auto split_kind = [&](const Field& g, uint32_t labels) {
    b->kind.clear();
    const bool walked = ForEachField(g.payload, [&](const Field& h) {
      if (h.number() != labels) {
        b->kind.append(h.bytes.data(), h.bytes.size());
      } else if (h.tag == LenTag(labels)) {
        b->labels.push_back(h.payload);
        skipped = true;
      } else {
        ok = false;  // a labels field a parse keeps as unknown: parse whole
      }
    });
    if (!walked) ok = false;
    AppendLen(g.number(), b->kind, &b->record);
  };
  const bool walked = ForEachField(wire, [&](const Field& f) {
    if (!ok) return;
    if (f.tag != LenTag(v1::ExportedRecord::kRecordFieldNumber)) {
      b->top.append(f.bytes.data(), f.bytes.size());
      return;
    }
    b->record.clear();
    const bool record_walked = ForEachField(f.payload, [&](const Field& g) {
      if (!ok) return;
      const uint32_t number = g.number();
      const bool kind = g.type() == kLen && IsKindField(number);
      // A parse empties the oneof when another of its fields comes: the
      // entries seen so far are gone from the whole record too.
      if (kind && static_cast<int>(number) != b->kind_field) {
        b->labels.clear();
        b->kind_field = static_cast<int>(number);
        b->labels_field = static_cast<int>(LabelsFieldOf(number));
      }
      const uint32_t labels = kind ? LabelsFieldOf(number) : 0;
      if (labels == 0) {
        b->record.append(g.bytes.data(), g.bytes.size());
      } else {
        split_kind(g, labels);
      }
    });
    if (!record_walked) ok = false;
    AppendLen(f.number(), b->record, &b->top);
  });
  return walked && ok && skipped;
}

void LabelsWire(const std::vector<std::string_view>* keep, SplitBuffers* b) {
  b->labels_wire.clear();
  b->kind.clear();
  for (absl::string_view entry : b->labels) {
    if (KeepLabel(entry, keep)) AppendLen(static_cast<uint32_t>(b->labels_field), entry, &b->kind);
  }
  if (b->kind.empty()) return;
  b->record.clear();
  AppendLen(static_cast<uint32_t>(b->kind_field), b->kind, &b->record);
  AppendLen(v1::ExportedRecord::kRecordFieldNumber, b->record, &b->labels_wire);
}

}  // namespace cmax::reports::wire
