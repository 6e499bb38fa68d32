// Version schemes, each as the component that uses it defines it.
//
//   semver    Semantic Versioning 2.0.0 (semver.org §11): dotted numeric core,
//             "-pre.release" identifiers sort before the release, "+build"
//             is ignored. A leading "v" is accepted. Slurm's 23.02.6 and
//             kubelet's v1.29.2 compare this way too.
//   debian    dpkg versions [epoch:]upstream[-revision], compared as Debian
//             Policy §5.6.12 describes ('~' sorts before everything, even the
//             end of the string; letters before other characters).
//   rpm       [epoch:]version[-release], compared segment by segment as
//             rpmvercmp does (digits vs. letters, '~' before anything, '^'
//             after the end but before more segments).
//   driver    NVIDIA driver versions "580.65.06": the branch is the first
//             number; versions compare only within one branch.
//   firmware  ConnectX/BlueField "family.train.patch" (28.39.1002): versions
//             compare only within one family and train. A family "xx"
//             ("xx.46.3008", as NVIDIA's bulletins write a fix for every
//             family on train 46) matches any family.
#ifndef CMAX_BENCHMARKS_AUDIT_VERSION_H_
#define CMAX_BENCHMARKS_AUDIT_VERSION_H_

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace cmax::audit {

enum class VersionScheme { kSemver, kDebian, kRpm, kDriver, kFirmware };

// "semver", "debian", "rpm", "driver", "firmware"; INVALID_ARGUMENT otherwise.
absl::StatusOr<VersionScheme> ParseScheme(absl::string_view name);
std::string SchemeName(VersionScheme scheme);

// All comparisons return <0, 0 or >0 like strcmp.

// INVALID_ARGUMENT when either side is not a semantic version.
absl::StatusOr<int> CompareSemver(absl::string_view a, absl::string_view b);

// Never fails: dpkg accepts any string here.
int CompareDebian(absl::string_view a, absl::string_view b);

// Never fails.
int CompareRpm(absl::string_view a, absl::string_view b);

// The branch of a driver version ("580.65.06" -> 580); INVALID_ARGUMENT when
// the version does not start with a number.
absl::StatusOr<int> DriverBranch(absl::string_view version);
// FAILED_PRECONDITION when the branches differ (they do not order).
absl::StatusOr<int> CompareDriver(absl::string_view a, absl::string_view b);

// "family.train" of a firmware version ("28.39.1002" -> "28.39").
absl::StatusOr<std::string> FirmwareTrain(absl::string_view version);
// FAILED_PRECONDITION when family or train differ.
absl::StatusOr<int> CompareFirmware(absl::string_view a, absl::string_view b);

// Dispatches on `scheme`.
absl::StatusOr<int> CompareVersions(VersionScheme scheme, absl::string_view a,
                                    absl::string_view b);

// The parts of a Debian version. Upstream keeps everything between the epoch
// and the last '-'.
struct DebianVersion {
  int64_t epoch = 0;
  std::string upstream;
  std::string revision;
};
DebianVersion SplitDebianVersion(absl::string_view version);

// The leading dotted-numeric part of a packaged version, for comparing a
// package with upstream's version: "1:1.1.5+ds1-1+deb12u1" -> "1.1.5",
// "2.21.5-1+cuda12.4" -> "2.21.5", "1.17.8-1" -> "1.17.8". Empty when there
// is none.
std::string UpstreamBase(absl::string_view package_version);

// "major.minor" of a dotted version ("1.1.11" -> "1.1"); the whole numeric
// prefix when there is only one number.
std::string MajorMinor(absl::string_view version);

}  // namespace cmax::audit

#endif  // CMAX_BENCHMARKS_AUDIT_VERSION_H_
