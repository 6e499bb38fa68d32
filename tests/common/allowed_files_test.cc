// Files and directories a plan names: only under what the agent allows,
// bounded, regular files only, and no error quotes a file's content.
#include "common/allowed_files.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "tests/scratch_dir.h"

using cmax::CheckStorageDir;
using cmax::ParseErrorWithoutContent;
using cmax::ReadPlanFile;

namespace {

using Tmp = cmax::testing::ScratchDir;

using cmax::testing::WriteFileWithMode;

const char kSecret[] = "tok-3f9a1c-do-not-leak";

}  // namespace

TEST_CASE("a readable file under an allowed directory is read", "[allowed_files]") {
  Tmp d;
  WriteFileWithMode(d.path + "/t.yaml", "gpu:\n  pcie_replay_warn: 50\n", 0644);
  std::optional<std::vector<std::string>> allowed = std::vector<std::string>{d.path};
  auto r = ReadPlanFile("thresholds", d.path + "/t.yaml", allowed);
  REQUIRE(r.ok());
  CHECK(*r == "gpu:\n  pcie_replay_warn: 50\n");
}

TEST_CASE("/dev/zero is refused before a byte is read", "[allowed_files]") {
  auto by_hand = ReadPlanFile("thresholds", "/dev/zero", std::nullopt);
  REQUIRE_FALSE(by_hand.ok());
  CHECK_THAT(std::string(by_hand.status().message()), Catch::Contains("not a regular file"));
  std::optional<std::vector<std::string>> allowed = std::vector<std::string>{"/dev"};
  auto allowed_dev = ReadPlanFile("thresholds", "/dev/zero", allowed);
  REQUIRE_FALSE(allowed_dev.ok());
  CHECK_THAT(std::string(allowed_dev.status().message()), Catch::Contains("not a regular file"));
}

TEST_CASE("a 2 GB file is refused by its size, without reading it", "[allowed_files]") {
  Tmp d;
  const std::string big = d.path + "/big.yaml";
  WriteFileWithMode(big, "", 0644);
  REQUIRE(truncate(big.c_str(), int64_t{2} << 30) == 0);  // sparse: no disk used
  std::optional<std::vector<std::string>> allowed = std::vector<std::string>{d.path};
  auto r = ReadPlanFile("advisories", big, allowed);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("2147483648 bytes"));
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("limit of 1048576"));
}

TEST_CASE("a root-only file is refused and its content is not quoted", "[allowed_files]") {
  Tmp d;
  const std::string token = d.path + "/token";
  WriteFileWithMode(token, kSecret, 0600);
  std::optional<std::vector<std::string>> allowed = std::vector<std::string>{d.path};
  auto r = ReadPlanFile("thresholds", token, allowed);
  REQUIRE_FALSE(r.ok());
  const std::string msg(r.status().message());
  CHECK_THAT(msg, Catch::Contains("readable by its owner or group only"));
  CHECK_FALSE(absl::StrContains(msg, kSecret));
}

TEST_CASE("paths outside the allowed directories are refused, links and .. included",
          "[allowed_files]") {
  Tmp allowed_dir, outside;
  WriteFileWithMode(outside.path + "/x.yaml", kSecret, 0644);
  std::optional<std::vector<std::string>> allowed = std::vector<std::string>{allowed_dir.path};
  auto direct = ReadPlanFile("thresholds", outside.path + "/x.yaml", allowed);
  REQUIRE_FALSE(direct.ok());
  CHECK(direct.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK_THAT(std::string(direct.status().message()), Catch::Contains("CMAX_ALLOW_READ"));

  REQUIRE(symlink((outside.path + "/x.yaml").c_str(), (allowed_dir.path + "/l.yaml").c_str()) ==
          0);
  auto link = ReadPlanFile("thresholds", allowed_dir.path + "/l.yaml", allowed);
  REQUIRE_FALSE(link.ok());
  CHECK_THAT(std::string(link.status().message()), Catch::Contains("resolves to"));

  auto dots = ReadPlanFile("thresholds", allowed_dir.path + "/../" +
                                             outside.path.substr(5) + "/x.yaml",
                           allowed);
  REQUIRE_FALSE(dots.ok());
  CHECK(dots.status().code() == absl::StatusCode::kPermissionDenied);
  for (const auto* s : {&direct, &link, &dots}) {
    CHECK_FALSE(absl::StrContains(std::string(s->status().message()), kSecret));
  }
  CHECK_FALSE(ReadPlanFile("thresholds", "relative.yaml", std::nullopt).ok());
  std::optional<std::vector<std::string>> none = std::vector<std::string>{};
  CHECK_FALSE(ReadPlanFile("thresholds", allowed_dir.path + "/l.yaml", none).ok());
}

TEST_CASE("parse errors keep line and column and drop the content", "[allowed_files]") {
  std::string m = ParseErrorWithoutContent(
      "thresholds", "/etc/cmax/t.yaml", "thresholds file",
      absl::InvalidArgumentError(
          absl::StrCat("thresholds: yaml-cpp: error at line 3, column 5: unknown key '",
                       kSecret, "'")));
  CHECK_THAT(m, Catch::Contains("line 3, column 5"));
  CHECK_THAT(m, Catch::Contains("/etc/cmax/t.yaml"));
  CHECK_FALSE(absl::StrContains(m, kSecret));
  std::string a = ParseErrorWithoutContent(
      "advisories", "/etc/cmax/a.yaml", "advisory file",
      absl::InvalidArgumentError(absl::StrCat("/etc/cmax/a.yaml:7:2: '", kSecret, "' bad")));
  CHECK_THAT(a, Catch::Contains("line 7, column 2"));
  CHECK_FALSE(absl::StrContains(a, kSecret));
  std::string none = ParseErrorWithoutContent(
      "thresholds", "/x.yaml", "thresholds file",
      absl::InvalidArgumentError(absl::StrCat("unknown section '", kSecret, "'")));
  CHECK_FALSE(absl::StrContains(none, kSecret));
}

TEST_CASE("storage works only under its roots and never in a system directory",
          "[allowed_files][storage]") {
  Tmp root, outside;
  std::optional<std::vector<std::string>> roots = std::vector<std::string>{root.path};
  auto made = CheckStorageDir(root.path + "/a/b", roots);
  REQUIRE(made.ok());
  struct stat st;
  REQUIRE(stat((root.path + "/a/b").c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK((st.st_mode & 0777) == 0700);

  auto out = CheckStorageDir(outside.path, roots);
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(std::string(out.status().message()), Catch::Contains("CMAX_STORAGE_ROOTS"));
  CHECK_FALSE(CheckStorageDir(root.path + "/../" + outside.path.substr(5), roots).ok());

  REQUIRE(symlink(outside.path.c_str(), (root.path + "/escape").c_str()) == 0);
  auto link = CheckStorageDir(root.path + "/escape/deeper", roots);
  REQUIRE_FALSE(link.ok());
  CHECK_THAT(std::string(link.status().message()), Catch::Contains("symbolic link"));
  CHECK_FALSE(std::filesystem::exists(outside.path + "/deeper"));

  for (const char* sys : {"/", "/etc", "/usr/lib", "/proc", "/boot", "/var/lib"}) {
    auto s = CheckStorageDir(sys, std::nullopt);
    CHECK_FALSE(s.ok());
    if (!s.ok()) CHECK_THAT(std::string(s.status().message()), Catch::Contains("system directory"));
    std::optional<std::vector<std::string>> sys_root = std::vector<std::string>{sys};
    CHECK_FALSE(CheckStorageDir(sys, sys_root).ok());
  }
  CHECK(CheckStorageDir(outside.path, std::nullopt).ok());  // by hand: the operator's choice
}
