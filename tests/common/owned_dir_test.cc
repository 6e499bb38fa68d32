// EnsureOwnedDir: the coordinator's data dir and the agent's work dir are
// made when missing and refused when another user owns them or others can
// write them.
#include "common/owned_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "tests/scratch_dir.h"
#include "tests/skip.h"

namespace fs = std::filesystem;

TEST_CASE("a state folder is made, and kept only when it is the process's own", "[owned_dir]") {
  cmax::testing::ScratchDir scratch;
  const std::string dir = (fs::path(scratch.path) / "data").string();
  // Missing: made, mode 0750.
  REQUIRE(cmax::EnsureOwnedDir(dir, "data dir").ok());
  struct stat st {};
  REQUIRE(stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);
  // Made already: fine again.
  CHECK(cmax::EnsureOwnedDir(dir, "data dir").ok());

  // Writable by others: refused, saying how to fix it.
  REQUIRE(chmod(dir.c_str(), 0777) == 0);
  absl::Status s = cmax::EnsureOwnedDir(dir, "data dir");
  CHECK(absl::IsFailedPrecondition(s));
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("data dir " + dir + " is writable by others (mode 0777)") &&
                 Catch::Contains("chmod o-w"));
  // Writable by the process's own group (Kubernetes' fsGroup): kept.
  REQUIRE(chmod(dir.c_str(), 0770) == 0);
  CHECK(cmax::EnsureOwnedDir(dir, "data dir").ok());

  // A file where the folder should be.
  const std::string file = (fs::path(scratch.path) / "file").string();
  { FILE* f = fopen(file.c_str(), "w"); REQUIRE(f != nullptr); fclose(f); }
  CHECK_THAT(std::string(cmax::EnsureOwnedDir(file, "work dir").message()),
             Catch::Contains("is not a directory"));
  // A parent that does not exist: the errno's reason.
  CHECK_THAT(std::string(cmax::EnsureOwnedDir(file + "/x/y", "work dir").message()),
             Catch::Contains("cannot create work dir"));

  // Owned by another user (only root can make one to test with); a link
  // to it is followed and refused too.
  if (geteuid() != 0) CMAX_SKIP("not root: cannot make a folder owned by another user");
  const std::string theirs = (fs::path(scratch.path) / "theirs").string();
  REQUIRE(mkdir(theirs.c_str(), 0700) == 0);
  REQUIRE(chown(theirs.c_str(), 65534, 65534) == 0);  // nobody
  s = cmax::EnsureOwnedDir(theirs, "work dir");
  CHECK(absl::IsFailedPrecondition(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("is owned by uid 65534"));
  const std::string link = (fs::path(scratch.path) / "planted").string();
  REQUIRE(symlink(theirs.c_str(), link.c_str()) == 0);
  CHECK(absl::IsFailedPrecondition(cmax::EnsureOwnedDir(link, "work dir")));
}
