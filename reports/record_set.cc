#include "reports/record_set.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "reports/record_wire.h"

namespace cmax::reports {
namespace {

bool Matches(const RecordFilter& f, const v1::ExportedRecord& rec) {
  if (f.kind != v1::Record::KIND_NOT_SET && rec.record().kind_case() != f.kind)
    return false;
  if (!f.suite.empty() && rec.suite() != f.suite) return false;
  if (!f.metric.empty() && RecordMetric(rec.record()) != f.metric) return false;
  if (f.metric_in != nullptr && !f.metric_in(RecordMetric(rec.record()))) return false;
  if (!f.suite_or_own.empty() && rec.suite() != f.suite_or_own &&
      RecordOwnSuite(rec.record()) != f.suite_or_own) {
    return false;
  }
  return true;
}

}  // namespace

bool NoLabels(const v1::ExportedRecord&) { return false; }

const std::string& RecordMetric(const v1::Record& r) {
  static const std::string* const kEmpty = new std::string;
  if (r.has_measurement()) return r.measurement().metric();
  if (r.has_sample()) return r.sample().metric();
  return *kEmpty;
}

const std::string& RecordOwnSuite(const v1::Record& r) {
  static const std::string* const kEmpty = new std::string;
  switch (r.kind_case()) {
    case v1::Record::kMeasurement: return r.measurement().suite();
    case v1::Record::kFinding: return r.finding().suite();
    case v1::Record::kSample: return r.sample().suite();
    case v1::Record::kProgress: return r.progress().suite();
    case v1::Record::kLog: return r.log().suite();
    case v1::Record::kArtifact: return r.artifact().suite();
    default: return *kEmpty;
  }
}

uint32_t RecordSet::NameId(std::string_view name) {
  const absl::string_view key(name.data(), name.size());
  if (auto it = name_ids_.find(key); it != name_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  name_ids_.emplace(std::string(name), id);
  return id;
}

int64_t RecordSet::FindName(std::string_view name) const {
  auto it = name_ids_.find(absl::string_view(name.data(), name.size()));
  return it == name_ids_.end() ? -1 : static_cast<int64_t>(it->second);
}

std::string& RecordSet::ChunkFor(size_t n) {
  if (chunks_.empty() || chunks_.back().size() + n > chunks_.back().capacity()) {
    chunks_.emplace_back();
    chunks_.back().reserve(std::max(kChunkBytes, n));
  }
  return chunks_.back();
}

void RecordSet::AddWire(std::string_view task_id, int attempt, int64_t seq,
                        std::string_view node, std::string_view suite,
                        std::string_view record, bool late, int rank) {
  // One scratch message per thread, cleared and reused: its strings keep
  // their capacity, so a parse allocates little.
  thread_local v1::Record scratch;
  scratch.Clear();
  if (!scratch.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
    v1::ExportedRecord rec;
    rec.set_task_id(std::string(task_id));
    rec.set_attempt(attempt);
    rec.set_seq(seq);
    rec.set_node(std::string(node));
    rec.set_suite(std::string(suite));
    rec.mutable_record()->ParseFromArray(record.data(), static_cast<int>(record.size()));
    rec.set_late(late);
    rec.set_rank(rank);
    Add(rec);
    return;
  }
  // ExportedRecord's wire form (cmax/v1/service.proto: task_id 1, attempt 2,
  // seq 3, node 4, suite 5, record 6, late 7, rank 8), fields in number
  // order and proto3 defaults left out, as SerializeToString writes it;
  // int32 negatives as 10-byte varints (the protobuf encoding rules,
  // protobuf.dev/programming-guides/encoding).
  using WFL = google::protobuf::internal::WireFormatLite;
  auto varint_size = [](uint64_t v) {
    return google::protobuf::io::CodedOutputStream::VarintSize64(v);
  };
  auto len_field = [&](std::string_view v) { return 1 + varint_size(v.size()) + v.size(); };
  const uint64_t attempt_v = static_cast<uint64_t>(static_cast<int64_t>(attempt));
  const uint64_t seq_v = static_cast<uint64_t>(seq);
  const uint64_t rank_v = static_cast<uint64_t>(static_cast<int64_t>(rank));
  size_t n = 0;
  if (!task_id.empty()) n += len_field(task_id);
  if (attempt != 0) n += 1 + varint_size(attempt_v);
  if (seq != 0) n += 1 + varint_size(seq_v);
  if (!node.empty()) n += len_field(node);
  if (!suite.empty()) n += len_field(suite);
  n += len_field(record);  // present even when empty: the row has a record
  if (late) n += 2;
  if (rank != 0) n += 1 + varint_size(rank_v);
  std::string& chunk = ChunkFor(n);
  const size_t offset = chunk.size();
  chunk.resize(offset + n);
  uint8_t* out = reinterpret_cast<uint8_t*>(chunk.data() + offset);
  auto put_len = [&](int field, std::string_view v) {
    out = WFL::WriteTagToArray(field, WFL::WIRETYPE_LENGTH_DELIMITED, out);
    out = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(v.size(), out);
    std::memcpy(out, v.data(), v.size());
    out += v.size();
  };
  auto put_varint = [&](int field, uint64_t v) {
    out = WFL::WriteTagToArray(field, WFL::WIRETYPE_VARINT, out);
    out = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(v, out);
  };
  if (!task_id.empty()) put_len(1, task_id);
  if (attempt != 0) put_varint(2, attempt_v);
  if (seq != 0) put_varint(3, seq_v);
  if (!node.empty()) put_len(4, node);
  if (!suite.empty()) put_len(5, suite);
  put_len(6, record);
  if (late) put_varint(7, 1);
  if (rank != 0) put_varint(8, rank_v);
  if (out != reinterpret_cast<uint8_t*>(chunk.data() + offset + n)) std::abort();  // sized above
  Entry e;
  e.chunk = static_cast<uint32_t>(chunks_.size() - 1);
  e.offset = static_cast<uint32_t>(offset);
  e.size = static_cast<uint32_t>(n);
  e.metric = NameId(RecordMetric(scratch));
  e.suite = NameId(suite);
  e.own_suite = NameId(RecordOwnSuite(scratch));
  e.kind = static_cast<uint8_t>(scratch.kind_case());
  e.dropped = 0;
  entries_.push_back(e);
}

void RecordSet::Add(const v1::ExportedRecord& rec) {
  const size_t n = rec.ByteSizeLong();
  std::string& chunk = ChunkFor(n);
  const size_t offset = chunk.size();
  chunk.resize(offset + n);
  rec.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(chunk.data() + offset));
  Entry e;
  e.chunk = static_cast<uint32_t>(chunks_.size() - 1);
  e.offset = static_cast<uint32_t>(offset);
  e.size = static_cast<uint32_t>(n);
  e.metric = NameId(RecordMetric(rec.record()));
  e.suite = NameId(rec.suite());
  e.own_suite = NameId(RecordOwnSuite(rec.record()));
  e.kind = static_cast<uint8_t>(rec.record().kind_case());
  e.dropped = 0;
  entries_.push_back(e);
}

size_t RecordSet::bytes() const {
  size_t b = entries_.capacity() * sizeof(Entry);
  for (const auto& c : chunks_) b += c.capacity();
  for (const auto& n : names_) b += n.capacity() + sizeof(n);
  return b;
}

void RecordSet::ForEach(
    const RecordFilter& filter,
    absl::FunctionRef<void(size_t, const v1::ExportedRecord&)> fn) const {
  ForEachUntil(filter, [&](size_t i, const v1::ExportedRecord& rec) {
    fn(i, rec);
    return false;
  });
}

bool RecordSet::ForEachUntil(
    const RecordFilter& filter,
    absl::FunctionRef<bool(size_t, const v1::ExportedRecord&)> fn) const {
  int64_t suite = -1, metric = -1;
  if (!filter.suite.empty() && (suite = FindName(filter.suite)) < 0) return false;
  if (!filter.metric.empty() && (metric = FindName(filter.metric)) < 0) return false;
  int64_t either = -1;
  if (!filter.suite_or_own.empty() && (either = FindName(filter.suite_or_own)) < 0) {
    return false;
  }
  // metric_in per name id, asked once a name: -1 not yet, 0 no, 1 yes.
  std::vector<int8_t> metric_ok(filter.metric_in ? names_.size() : 0, -1);
  // Each record is parsed into an arena that reuses one block: no malloc
  // and free per string and map entry (most of a parse's cost).
  constexpr size_t kBlock = size_t{256} << 10;
  std::unique_ptr<char[]> block(new char[kBlock]);
  google::protobuf::ArenaOptions options;
  options.initial_block = block.get();
  options.initial_block_size = kBlock;
  google::protobuf::Arena arena(options);
  wire::SplitBuffers split;
  const bool may_split = filter.labels_if || !filter.label_keys.empty();
  const std::vector<std::string_view>* keep =
      filter.label_keys.empty() ? nullptr : &filter.label_keys;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.dropped) continue;
    if (filter.kind != v1::Record::KIND_NOT_SET && e.kind != filter.kind) continue;
    if (suite >= 0 && e.suite != suite) continue;
    if (metric >= 0 && e.metric != metric) continue;
    if (either >= 0 && e.suite != either && e.own_suite != either) continue;
    if (filter.metric_in) {
      int8_t& ok = metric_ok[e.metric];
      if (ok < 0) ok = filter.metric_in(names_[e.metric]) ? 1 : 0;
      if (ok == 0) continue;
    }
    const std::string_view wire(chunks_[e.chunk].data() + e.offset, e.size);
    auto* scratch = google::protobuf::Arena::CreateMessage<v1::ExportedRecord>(&arena);
    // Each byte is parsed once (issue 33 item 3): the record without its
    // labels, then, when the scan reads them, only the label entries it
    // reads, merged in. A map entry merged after the rest lands in the map
    // as it would in a parse of the whole; a record that does not split is
    // parsed whole.
    if (may_split && wire::SplitLabels(absl::string_view(wire.data(), wire.size()), &split)) {
      if (!scratch->ParseFromArray(split.top.data(), static_cast<int>(split.top.size()))) {
        std::abort();  // a subset of bytes that parse (Add wrote them), as below
      }
      // A record whose `node` is empty is read with its labels (RecordNode
      // reads its "node" label).
      if (!filter.labels_if || scratch->node().empty() || filter.labels_if(*scratch)) {
        wire::LabelsWire(keep, &split);
        google::protobuf::io::CodedInputStream in(
            reinterpret_cast<const uint8_t*>(split.labels_wire.data()),
            static_cast<int>(split.labels_wire.size()));
        if (!scratch->MergeFromCodedStream(&in)) std::abort();  // entries that parsed, as above
      }
    } else if (!scratch->ParseFromArray(wire.data(), static_cast<int>(wire.size()))) {
      // Written by Add from a valid message: cannot fail short of memory
      // corruption. Skipping would silently drop evidence, so stop loudly.
      std::abort();
    }
    const bool stop = fn(i, *scratch);
    arena.Reset();
    if (stop) return true;
  }
  return false;
}

size_t RecordSet::kept() const {
  size_t n = 0;
  for (const auto& e : entries_) n += e.dropped == 0;
  return n;
}

void ForEachRecord(const RunData& data, const RecordFilter& filter,
                   absl::FunctionRef<void(const v1::ExportedRecord&)> fn) {
  for (const auto& rec : data.records) {
    if (Matches(filter, rec)) fn(rec);
  }
  if (data.record_set) {
    data.record_set->ForEach(filter,
                             [&](size_t, const v1::ExportedRecord& rec) { fn(rec); });
  }
}

bool AnyRecord(const RunData& data, const RecordFilter& filter,
               absl::FunctionRef<bool(const v1::ExportedRecord&)> pred) {
  for (const auto& rec : data.records) {
    if (Matches(filter, rec) && pred(rec)) return true;
  }
  return data.record_set != nullptr &&
         data.record_set->ForEachUntil(
             filter, [&](size_t, const v1::ExportedRecord& rec) { return pred(rec); });
}

size_t RecordCount(const RunData& data) {
  return data.records.size() + (data.record_set ? data.record_set->kept() : 0);
}

}  // namespace cmax::reports
