#include "benchmarks/audit/version.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cmax::audit {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Compares two strings of decimal digits by value, without overflow.
int CompareDigits(absl::string_view a, absl::string_view b) {
  while (!a.empty() && a.front() == '0') a.remove_prefix(1);
  while (!b.empty() && b.front() == '0') b.remove_prefix(1);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

int Sign(int v) { return v < 0 ? -1 : (v > 0 ? 1 : 0); }

// ---- semver ---------------------------------------------------------------

struct Semver {
  std::vector<std::string> core;  // numeric strings
  std::vector<std::string> pre;   // pre-release identifiers
};

absl::StatusOr<Semver> ParseSemver(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  if (size_t plus = s.find('+'); plus != absl::string_view::npos) s = s.substr(0, plus);
  absl::string_view pre;
  if (size_t dash = s.find('-'); dash != absl::string_view::npos) {
    pre = s.substr(dash + 1);
    s = s.substr(0, dash);
  }
  Semver v;
  for (absl::string_view part : absl::StrSplit(s, '.')) {
    if (part.empty() || !std::all_of(part.begin(), part.end(), IsDigit)) {
      return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a semantic version"));
    }
    v.core.emplace_back(part);
  }
  if (!pre.empty()) {
    for (absl::string_view id : absl::StrSplit(pre, '.')) {
      if (id.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", text, "' has an empty pre-release identifier"));
      }
      v.pre.emplace_back(id);
    }
  }
  return v;
}

int ComparePreIdentifier(const std::string& a, const std::string& b) {
  bool an = std::all_of(a.begin(), a.end(), IsDigit);
  bool bn = std::all_of(b.begin(), b.end(), IsDigit);
  if (an && bn) return CompareDigits(a, b);
  if (an != bn) return an ? -1 : 1;  // numeric identifiers sort first
  return Sign(a.compare(b));
}

// ---- Debian (Policy §5.6.12) ---------------------------------------------

// Sort weight of one character of a non-digit run: '~' before the end of the
// string, the end before letters, letters before everything else.
int DebianWeight(absl::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  char c = s[i];
  if (c == '~') return -1;
  if (IsAlpha(c)) return static_cast<unsigned char>(c);
  return static_cast<unsigned char>(c) + 256;
}

int CompareDebianPart(absl::string_view a, absl::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    // Non-digit prefixes, character by character.
    while ((i < a.size() && !IsDigit(a[i])) || (j < b.size() && !IsDigit(b[j]))) {
      int wa = (i < a.size() && !IsDigit(a[i])) ? DebianWeight(a, i) : 0;
      int wb = (j < b.size() && !IsDigit(b[j])) ? DebianWeight(b, j) : 0;
      if (wa != wb) return wa < wb ? -1 : 1;
      if (i < a.size() && !IsDigit(a[i])) ++i;
      if (j < b.size() && !IsDigit(b[j])) ++j;
    }
    // Digit runs, by value (an empty run counts as 0).
    size_t i0 = i, j0 = j;
    while (i < a.size() && IsDigit(a[i])) ++i;
    while (j < b.size() && IsDigit(b[j])) ++j;
    int c = CompareDigits(a.substr(i0, i - i0), b.substr(j0, j - j0));
    if (c != 0) return c;
  }
  return 0;
}

// ---- RPM ------------------------------------------------------------------

int CompareRpmPart(absl::string_view a, absl::string_view b) {
  if (a == b) return 0;
  size_t i = 0, j = 0;
  auto is_sep = [](char c) { return !IsDigit(c) && !IsAlpha(c) && c != '~' && c != '^'; };
  while (i < a.size() || j < b.size()) {
    while (i < a.size() && is_sep(a[i])) ++i;
    while (j < b.size() && is_sep(b[j])) ++j;
    // Tilde: a pre-release marker, older than anything, even the end.
    bool at = i < a.size() && a[i] == '~';
    bool bt = j < b.size() && b[j] == '~';
    if (at || bt) {
      if (at != bt) return at ? -1 : 1;
      ++i;
      ++j;
      continue;
    }
    // Caret: newer than the end of the other string, older than any segment.
    bool ac = i < a.size() && a[i] == '^';
    bool bc = j < b.size() && b[j] == '^';
    if (ac || bc) {
      if (i >= a.size()) return -1;
      if (j >= b.size()) return 1;
      if (ac != bc) return ac ? -1 : 1;
      ++i;
      ++j;
      continue;
    }
    if (i >= a.size() || j >= b.size()) break;
    // One segment: all digits or all letters, typed by `a`'s first char.
    bool numeric = IsDigit(a[i]);
    size_t i0 = i, j0 = j;
    if (numeric) {
      while (i < a.size() && IsDigit(a[i])) ++i;
      while (j < b.size() && IsDigit(b[j])) ++j;
    } else {
      while (i < a.size() && IsAlpha(a[i])) ++i;
      while (j < b.size() && IsAlpha(b[j])) ++j;
    }
    // The other side has a segment of the other type: numbers are newer.
    if (j == j0) return numeric ? 1 : -1;
    absl::string_view sa = a.substr(i0, i - i0), sb = b.substr(j0, j - j0);
    int c = numeric ? CompareDigits(sa, sb) : Sign(sa.compare(sb));
    if (c != 0) return c;
  }
  bool a_left = i < a.size(), b_left = j < b.size();
  if (!a_left && !b_left) return 0;
  return a_left ? 1 : -1;  // more segments is newer
}

struct Evr {
  std::string epoch;
  std::string version;
  std::string release;
};

Evr SplitEvr(absl::string_view s) {
  Evr e;
  if (size_t colon = s.find(':'); colon != absl::string_view::npos &&
                                  std::all_of(s.begin(), s.begin() + colon, IsDigit)) {
    e.epoch = std::string(s.substr(0, colon));
    s = s.substr(colon + 1);
  }
  if (size_t dash = s.rfind('-'); dash != absl::string_view::npos) {
    e.release = std::string(s.substr(dash + 1));
    s = s.substr(0, dash);
  }
  e.version = std::string(s);
  return e;
}

// Dotted numbers only ("580.65.06"), each compared by value.
absl::StatusOr<std::vector<std::string>> NumericParts(absl::string_view text,
                                                      absl::string_view what) {
  std::vector<std::string> parts;
  absl::string_view s = absl::StripAsciiWhitespace(text);
  for (absl::string_view p : absl::StrSplit(s, '.')) {
    if (p.empty() || !std::all_of(p.begin(), p.end(), IsDigit)) {
      return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a ", what, " version"));
    }
    parts.emplace_back(p);
  }
  return parts;
}

int CompareNumericParts(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t n = std::max(a.size(), b.size());
  for (size_t k = 0; k < n; ++k) {
    int c = CompareDigits(k < a.size() ? a[k] : "0", k < b.size() ? b[k] : "0");
    if (c != 0) return c;
  }
  return 0;
}

}  // namespace

absl::StatusOr<VersionScheme> ParseScheme(absl::string_view name) {
  if (name == "semver") return VersionScheme::kSemver;
  if (name == "debian") return VersionScheme::kDebian;
  if (name == "rpm") return VersionScheme::kRpm;
  if (name == "driver") return VersionScheme::kDriver;
  if (name == "firmware") return VersionScheme::kFirmware;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown version scheme '", name, "' (known: semver, debian, rpm, driver, firmware)"));
}

std::string SchemeName(VersionScheme scheme) {
  switch (scheme) {
    case VersionScheme::kSemver: return "semver";
    case VersionScheme::kDebian: return "debian";
    case VersionScheme::kRpm: return "rpm";
    case VersionScheme::kDriver: return "driver";
    case VersionScheme::kFirmware: return "firmware";
  }
  return "unknown";
}

absl::StatusOr<int> CompareSemver(absl::string_view a, absl::string_view b) {
  auto va = ParseSemver(a);
  if (!va.ok()) return va.status();
  auto vb = ParseSemver(b);
  if (!vb.ok()) return vb.status();
  size_t n = std::max(va->core.size(), vb->core.size());
  for (size_t k = 0; k < n; ++k) {
    int c = CompareDigits(k < va->core.size() ? va->core[k] : "0",
                          k < vb->core.size() ? vb->core[k] : "0");
    if (c != 0) return c;
  }
  // A pre-release sorts before its release.
  if (va->pre.empty() != vb->pre.empty()) return va->pre.empty() ? 1 : -1;
  for (size_t k = 0; k < std::min(va->pre.size(), vb->pre.size()); ++k) {
    int c = ComparePreIdentifier(va->pre[k], vb->pre[k]);
    if (c != 0) return c;
  }
  if (va->pre.size() != vb->pre.size()) return va->pre.size() < vb->pre.size() ? -1 : 1;
  return 0;
}

DebianVersion SplitDebianVersion(absl::string_view version) {
  DebianVersion v;
  absl::string_view s = absl::StripAsciiWhitespace(version);
  if (size_t colon = s.find(':'); colon != absl::string_view::npos) {
    int64_t epoch = 0;
    if (absl::SimpleAtoi(s.substr(0, colon), &epoch)) v.epoch = epoch;
    s = s.substr(colon + 1);
  }
  if (size_t dash = s.rfind('-'); dash != absl::string_view::npos) {
    v.revision = std::string(s.substr(dash + 1));
    s = s.substr(0, dash);
  }
  v.upstream = std::string(s);
  return v;
}

int CompareDebian(absl::string_view a, absl::string_view b) {
  DebianVersion va = SplitDebianVersion(a), vb = SplitDebianVersion(b);
  if (va.epoch != vb.epoch) return va.epoch < vb.epoch ? -1 : 1;
  int c = CompareDebianPart(va.upstream, vb.upstream);
  if (c != 0) return c;
  return CompareDebianPart(va.revision, vb.revision);
}

int CompareRpm(absl::string_view a, absl::string_view b) {
  Evr ea = SplitEvr(absl::StripAsciiWhitespace(a)), eb = SplitEvr(absl::StripAsciiWhitespace(b));
  int c = CompareDigits(ea.epoch.empty() ? "0" : ea.epoch, eb.epoch.empty() ? "0" : eb.epoch);
  if (c != 0) return c;
  c = CompareRpmPart(ea.version, eb.version);
  if (c != 0) return c;
  // A missing release matches any release (as rpm does for requirements).
  if (ea.release.empty() || eb.release.empty()) return 0;
  return CompareRpmPart(ea.release, eb.release);
}

absl::StatusOr<int> DriverBranch(absl::string_view version) {
  auto parts = NumericParts(version, "driver");
  if (!parts.ok()) return parts.status();
  int branch = 0;
  if (!absl::SimpleAtoi((*parts)[0], &branch)) {
    return absl::InvalidArgumentError(absl::StrCat("'", version, "' has no driver branch"));
  }
  return branch;
}

absl::StatusOr<int> CompareDriver(absl::string_view a, absl::string_view b) {
  auto pa = NumericParts(a, "driver");
  if (!pa.ok()) return pa.status();
  auto pb = NumericParts(b, "driver");
  if (!pb.ok()) return pb.status();
  if (CompareDigits((*pa)[0], (*pb)[0]) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "driver ", a, " (R", (*pa)[0], ") and ", b, " (R", (*pb)[0],
        ") are on different branches"));
  }
  return CompareNumericParts(*pa, *pb);
}

namespace {

// family, train, patch of "28.39.1002"; the family may be "xx", as NVIDIA's
// bulletins write a fix that holds for every family on a train
// ("xx.41.1000").
absl::StatusOr<std::vector<std::string>> FirmwareParts(absl::string_view version) {
  absl::string_view s = absl::StripAsciiWhitespace(version);
  const bool any_family = absl::StartsWith(s, "xx.");
  auto parts = NumericParts(any_family ? s.substr(3) : s, "firmware");
  if (parts.ok() && parts->size() == (any_family ? 2 : 3)) {
    if (any_family) parts->insert(parts->begin(), "xx");
    return parts;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", version, "' is not a family.train.patch firmware version"));
}

}  // namespace

absl::StatusOr<std::string> FirmwareTrain(absl::string_view version) {
  auto parts = FirmwareParts(version);
  if (!parts.ok()) return parts.status();
  return absl::StrCat((*parts)[0], ".", (*parts)[1]);
}

absl::StatusOr<int> CompareFirmware(absl::string_view a, absl::string_view b) {
  auto pa = FirmwareParts(a);
  if (!pa.ok()) return pa.status();
  auto pb = FirmwareParts(b);
  if (!pb.ok()) return pb.status();
  const bool same_family =
      (*pa)[0] == "xx" || (*pb)[0] == "xx" || CompareDigits((*pa)[0], (*pb)[0]) == 0;
  if (!same_family || CompareDigits((*pa)[1], (*pb)[1]) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "firmware ", a, " (train ", (*pa)[0], ".", (*pa)[1], ") and ", b, " (train ", (*pb)[0],
        ".", (*pb)[1], ") are on different trains"));
  }
  return CompareDigits((*pa)[2], (*pb)[2]);
}

absl::StatusOr<int> CompareVersions(VersionScheme scheme, absl::string_view a,
                                    absl::string_view b) {
  switch (scheme) {
    case VersionScheme::kSemver: return CompareSemver(a, b);
    case VersionScheme::kDebian: return CompareDebian(a, b);
    case VersionScheme::kRpm: return CompareRpm(a, b);
    case VersionScheme::kDriver: return CompareDriver(a, b);
    case VersionScheme::kFirmware: return CompareFirmware(a, b);
  }
  return absl::InternalError("unknown version scheme");
}

std::string UpstreamBase(absl::string_view package_version) {
  std::string up = SplitDebianVersion(package_version).upstream;
  size_t n = 0;
  while (n < up.size() && (IsDigit(up[n]) || (up[n] == '.' && n + 1 < up.size() &&
                                              IsDigit(up[n + 1])))) {
    ++n;
  }
  return up.substr(0, n);
}

std::string MajorMinor(absl::string_view version) {
  absl::string_view s = absl::StripAsciiWhitespace(version);
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  size_t n = 0;
  int dots = 0;
  while (n < s.size()) {
    if (IsDigit(s[n])) {
      ++n;
    } else if (s[n] == '.' && dots == 0 && n + 1 < s.size() && IsDigit(s[n + 1])) {
      ++dots;
      ++n;
    } else {
      break;
    }
  }
  return std::string(s.substr(0, n));
}

}  // namespace cmax::audit
