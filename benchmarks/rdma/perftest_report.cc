#include "benchmarks/rdma/perftest_report.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cmax::bench::rdma {
namespace {

bool IsDashes(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  if (line.size() < 10) return false;
  for (char c : line) {
    if (c != '-') return false;
  }
  return true;
}

// The whitespace-separated numbers of a row; nullopt when the line does not
// start with a number (a warning perftest printed inside the table).
std::optional<std::vector<double>> Numbers(absl::string_view line) {
  std::vector<absl::string_view> words = absl::StrSplit(
      absl::StripAsciiWhitespace(line), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (words.empty()) return std::nullopt;
  std::vector<double> out;
  for (absl::string_view w : words) {
    double v = 0;
    if (!absl::SimpleAtod(w, &v)) {
      if (out.empty()) return std::nullopt;
      break;  // trailing text after the numbers
    }
    out.push_back(v);
  }
  return out;
}

// The lines after the header that contains every one of `needles`, up to the
// closing dashes. nullopt when no line contains them.
std::optional<std::vector<absl::string_view>> TableAfter(
    absl::string_view text, std::vector<absl::string_view> needles,
    absl::string_view* header) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    bool all = true;
    for (absl::string_view n : needles) all = all && absl::StrContains(lines[i], n);
    if (!all) continue;
    *header = lines[i];
    std::vector<absl::string_view> rows;
    for (size_t j = i + 1; j < lines.size() && !IsDashes(lines[j]); ++j)
      rows.push_back(lines[j]);
    return rows;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<std::vector<BwRow>> ParseBwReport(absl::string_view text) {
  absl::string_view header;
  auto rows = TableAfter(text, {"#bytes", "BW average"}, &header);
  if (!rows) {
    return absl::InvalidArgumentError(
        "no perftest bandwidth report (a '#bytes ... BW average[...]' header) in the "
        "output");
  }
  if (!absl::StrContains(header, "[Gb/sec]")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "perftest reported bandwidth in other units than Gb/sec (header '",
        absl::StripAsciiWhitespace(header), "'); it must run with --report_gbits"));
  }
  std::vector<BwRow> out;
  for (absl::string_view line : *rows) {
    auto n = Numbers(line);
    if (!n) continue;
    if (n->size() < 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          "perftest bandwidth row with ", n->size(), " numbers, need 4 or 5: '",
          absl::StripAsciiWhitespace(line), "'"));
    }
    BwRow r;
    r.bytes = static_cast<int64_t>((*n)[0]);
    r.iterations = static_cast<int64_t>((*n)[1]);
    r.peak_gbps = (*n)[2];
    r.average_gbps = (*n)[3];
    if (n->size() > 4) r.msg_rate_mpps = (*n)[4];
    out.push_back(r);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        "perftest bandwidth report has a header but no rows");
  }
  return out;
}

absl::StatusOr<std::vector<LatRow>> ParseLatReport(absl::string_view text) {
  absl::string_view header;
  auto rows = TableAfter(text, {"#bytes", "t_typical"}, &header);
  if (!rows) {
    return absl::InvalidArgumentError(
        "no perftest latency report (a '#bytes ... t_typical[usec]' header) in the "
        "output");
  }
  std::vector<LatRow> out;
  for (absl::string_view line : *rows) {
    auto n = Numbers(line);
    if (!n) continue;
    if (n->size() < 5) {
      return absl::InvalidArgumentError(absl::StrCat(
          "perftest latency row with ", n->size(), " numbers, need at least 5: '",
          absl::StripAsciiWhitespace(line), "'"));
    }
    LatRow r;
    r.bytes = static_cast<int64_t>((*n)[0]);
    r.iterations = static_cast<int64_t>((*n)[1]);
    r.t_min_us = (*n)[2];
    r.t_max_us = (*n)[3];
    r.t_typical_us = (*n)[4];
    if (n->size() > 5) r.t_avg_us = (*n)[5];
    if (n->size() > 6) r.t_stdev_us = (*n)[6];
    if (n->size() > 7) r.p99_us = (*n)[7];
    if (n->size() > 8) r.p999_us = (*n)[8];
    out.push_back(r);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError("perftest latency report has a header but no rows");
  }
  return out;
}

}  // namespace cmax::bench::rdma
