// WriteFileAtomically: the new content whole or the old one, never a part.
#include "common/atomic_file.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/scratch_dir.h"

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("an atomic write replaces the content and leaves no temporary file", "[atomic_file]") {
  cmax::testing::ScratchDir dir;
  const std::string path = dir.path + "/scorecard.json";
  REQUIRE(cmax::WriteFileAtomically(path, "first").ok());
  REQUIRE(cmax::WriteFileAtomically(path, std::string(1 << 20, 'x'), 0600).ok());
  CHECK(Slurp(path) == std::string(1 << 20, 'x'));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);  // the mode of the last write's new file
}

TEST_CASE("a failed atomic write names the file and leaves the old content", "[atomic_file]") {
  cmax::testing::ScratchDir dir;
  const std::string path = dir.path + "/status.json";
  REQUIRE(cmax::WriteFileAtomically(path, "old").ok());
  // A directory where the temporary file would go: open fails, nothing changes.
  std::filesystem::create_directory(path + ".tmp");
  absl::Status s = cmax::WriteFileAtomically(path, "new");
  CHECK_FALSE(s.ok());
  CHECK_THAT(std::string(s.message()), Catch::Contains(path + ".tmp"));
  CHECK(Slurp(path) == "old");
  // A missing directory: the error names the path and the reason.
  s = cmax::WriteFileAtomically(dir.path + "/no/such/file", "x");
  CHECK(s.code() == absl::StatusCode::kInternal);
  CHECK_THAT(std::string(s.message()), Catch::Contains("No such file or directory"));
}
