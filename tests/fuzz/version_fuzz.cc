// libFuzzer target: the audit suite's version parsers and comparisons
// (semver, Debian, RPM, NVIDIA driver, ConnectX firmware).
//
// Properties, for every scheme: compare(a, a) == 0; the sign of
// compare(a, b) is minus that of compare(b, a) (both defined or neither);
// and transitivity over three inputs (a <= b and b <= c imply a <= c).
// RPM is exempt from transitivity when a side has no release: a missing
// release matches any release on purpose (rpm's rule for requirements), so
// "0" equals both "0-1" and "0-2" while those two differ. Nothing sorts with
// CompareRpm; it is used pairwise only (version_checks.cc).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "benchmarks/audit/version.h"

namespace {

using cmax::audit::VersionScheme;

int Sign(int v) { return (v > 0) - (v < 0); }

bool HasRpmRelease(const std::string& v) {
  absl::string_view s = absl::StripAsciiWhitespace(v);
  size_t dash = s.rfind('-');
  return dash != absl::string_view::npos && dash + 1 < s.size();
}

[[noreturn]] void Fail(const char* what, VersionScheme s, const std::string& a,
                       const std::string& b, const std::string& c) {
  fprintf(stderr, "%s (%s): a='%s' b='%s' c='%s'\n", what, cmax::audit::SchemeName(s).c_str(),
          a.c_str(), b.c_str(), c.c_str());
  abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string a = in.ConsumeRandomLengthString(64);
  const std::string b = in.ConsumeRandomLengthString(64);
  const std::string c = in.ConsumeRemainingBytesAsString().substr(0, 64);
  // The helpers must take anything.
  (void)cmax::audit::ParseScheme(a);
  (void)cmax::audit::SplitDebianVersion(a);
  (void)cmax::audit::UpstreamBase(a);
  (void)cmax::audit::MajorMinor(a);
  (void)cmax::audit::DriverBranch(a);
  (void)cmax::audit::FirmwareTrain(a);
  for (VersionScheme s : {VersionScheme::kSemver, VersionScheme::kDebian, VersionScheme::kRpm,
                          VersionScheme::kDriver, VersionScheme::kFirmware}) {
    auto cmp = [&](const std::string& x, const std::string& y) {
      return cmax::audit::CompareVersions(s, x, y);
    };
    auto aa = cmp(a, a);
    if (aa.ok() && *aa != 0) Fail("a version differs from itself", s, a, a, c);
    auto ab = cmp(a, b), ba = cmp(b, a);
    if (ab.ok() != ba.ok()) Fail("comparable one way only", s, a, b, c);
    if (ab.ok() && Sign(*ab) != -Sign(*ba)) Fail("not antisymmetric", s, a, b, c);
    auto bc = cmp(b, c), ac = cmp(a, c);
    const bool releases = HasRpmRelease(a) && HasRpmRelease(b) && HasRpmRelease(c);
    if (s == VersionScheme::kRpm && !releases) continue;
    if (ab.ok() && bc.ok() && ac.ok() && *ab <= 0 && *bc <= 0 && *ac > 0) {
      Fail("not transitive", s, a, b, c);
    }
  }
  return 0;
}
