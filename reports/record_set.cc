#include "reports/record_set.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "google/protobuf/arena.h"

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

uint32_t RecordSet::NameId(const std::string& name) {
  auto [it, inserted] = name_ids_.try_emplace(name, static_cast<uint32_t>(names_.size()));
  if (inserted) names_.push_back(name);
  return it->second;
}

int64_t RecordSet::FindName(std::string_view name) const {
  auto it = name_ids_.find(absl::string_view(name.data(), name.size()));
  return it == name_ids_.end() ? -1 : static_cast<int64_t>(it->second);
}

void RecordSet::Add(const v1::ExportedRecord& rec) {
  const size_t n = rec.ByteSizeLong();
  if (chunks_.empty() || chunks_.back().size() + n > chunks_.back().capacity()) {
    chunks_.emplace_back();
    chunks_.back().reserve(std::max(kChunkBytes, n));
  }
  std::string& chunk = chunks_.back();
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
    auto* scratch = google::protobuf::Arena::CreateMessage<v1::ExportedRecord>(&arena);
    if (!scratch->ParseFromArray(chunks_[e.chunk].data() + e.offset,
                                 static_cast<int>(e.size))) {
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
