// Secrets and identifiers (common/secrets.h): the constant-time comparison's
// answers, random hex and random ids of the asked length, never repeating;
// the token file's mode warning (quiet for 0600 and the packaged 0640
// root:cmax, loud for others, group write and a foreign group's read).
#include "common/secrets.h"

#include <grp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tests/skip.h"

namespace {

bool AllHex(const std::string& s) {
  return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A token file in a fresh temporary directory, removed at the end of the case.
class TokenFile {
 public:
  TokenFile() {
    char dir[] = "/tmp/cmax-secrets-test.XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    dir_ = dir;
    path_ = dir_ + "/token";
    std::ofstream(path_) << "s3cret\n";
  }
  ~TokenFile() {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }
  void Chmod(mode_t mode) const { REQUIRE(chmod(path_.c_str(), mode) == 0); }
  void Chgrp(gid_t gid) const { REQUIRE(chown(path_.c_str(), static_cast<uid_t>(-1), gid) == 0); }
  // ReadTokenFile's warning ("" when none); the token must read back.
  std::string Warning() const {
    std::string warning = "unset";
    auto token = cmax::ReadTokenFile(path_, &warning);
    REQUIRE(token.ok());
    CHECK(*token == "s3cret");
    return warning;
  }

 private:
  std::string dir_, path_;
};

bool InGroups(gid_t gid) {
  if (getegid() == gid) return true;
  std::vector<gid_t> groups(static_cast<size_t>(getgroups(0, nullptr)) + 1);
  int n = getgroups(static_cast<int>(groups.size()), groups.data());
  for (int i = 0; i < n; ++i) {
    if (groups[static_cast<size_t>(i)] == gid) return true;
  }
  return false;
}

// A gid this process is not in and that is not named cmax (daemon, nogroup
// or an unnamed one); 0 when none is found.
gid_t ForeignGid() {
  for (gid_t gid : {gid_t{1}, gid_t{65534}, gid_t{54321}}) {
    const group* gr = getgrgid(gid);
    if (!InGroups(gid) && (gr == nullptr || std::string(gr->gr_name) != "cmax")) return gid;
  }
  return 0;
}

// Runs ReadTokenFile on `path` in a child that first sets its groups
// (setgroups, then setegid); the child's exit code: 0 quiet, 1 warned,
// 2 could not set the groups or read the file. REQUIRES root.
int WarnsInChild(const std::string& path, const std::vector<gid_t>& groups, gid_t egid) {
  pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(groups.size(), groups.data()) != 0 || setegid(egid) != 0) _exit(2);
    std::string warning;
    auto token = cmax::ReadTokenFile(path, &warning);
    _exit(!token.ok() ? 2 : warning.empty() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(pid > 0);
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("a token file of mode 0600, or 0640 in the process's own group, is quiet",
          "[secrets]") {
  TokenFile f;
  f.Chmod(0600);
  CHECK(f.Warning().empty());
  f.Chmod(0400);
  CHECK(f.Warning().empty());
  // Created by this process: its group is the effective gid (no setgid /tmp).
  struct stat st;
  REQUIRE(stat(f.path().c_str(), &st) == 0);
  if (st.st_gid == getegid()) {
    f.Chmod(0640);
    CHECK(f.Warning().empty());
    f.Chmod(0650);  // group execute alone says nothing about the secret
    CHECK(f.Warning().empty());
  }
}

TEST_CASE("a token file others may touch warns, saying what and how to fix it", "[secrets]") {
  TokenFile f;
  f.Chmod(0644);
  std::string w = f.Warning();
  CHECK(Contains(w, f.path() + " (mode 0644) is readable by others"));
  CHECK(Contains(w, "chmod 600 " + f.path()));
  CHECK(Contains(w, "chmod 640 " + f.path() + " and chown root:cmax " + f.path()));
  f.Chmod(0604);
  CHECK(Contains(f.Warning(), "readable by others"));
  f.Chmod(0602);
  w = f.Warning();
  CHECK(Contains(w, "writable by others"));
  CHECK_FALSE(Contains(w, "readable"));
  f.Chmod(0601);
  CHECK(Contains(f.Warning(), "executable by others"));
  f.Chmod(0606);
  CHECK(Contains(f.Warning(), "readable and writable by others"));
}

TEST_CASE("a token file its group may write warns, whatever the group", "[secrets]") {
  TokenFile f;
  f.Chmod(0620);
  std::string w = f.Warning();
  CHECK(Contains(w, "(mode 0620) is writable by group "));
  CHECK(Contains(w, "chmod 600"));
  f.Chmod(0666);
  w = f.Warning();
  CHECK(Contains(w, "readable and writable by others, writable by group "));
}

TEST_CASE("a token file readable by a group the process is not in warns, naming it",
          "[secrets]") {
  if (geteuid() != 0) CMAX_SKIP("needs root to chgrp the file to a group this process is not in");
  const gid_t foreign = ForeignGid();
  if (foreign == 0) CMAX_SKIP("no group found that this process is not in");
  TokenFile f;
  f.Chgrp(foreign);
  f.Chmod(0640);
  const group* gr = getgrgid(foreign);
  const std::string name =
      gr ? std::string(gr->gr_name) + " (gid " + std::to_string(foreign) + ")"
         : std::to_string(foreign);
  std::string w = f.Warning();
  CHECK(Contains(w, "(mode 0640) is readable by group " + name +
                        ", which is neither this process's group nor cmax"));
  CHECK(Contains(w, "chown root:cmax"));
  f.Chmod(0600);  // the group cannot read: quiet
  CHECK(f.Warning().empty());
  f.Chmod(0610);
  CHECK(f.Warning().empty());
}

TEST_CASE("a token file readable by the process's effective or supplementary group is quiet",
          "[secrets]") {
  if (geteuid() != 0) CMAX_SKIP("needs root to chgrp the file and set a child's groups");
  const gid_t foreign = ForeignGid();
  if (foreign == 0) CMAX_SKIP("no group found that this process is not in");
  TokenFile f;
  f.Chgrp(foreign);
  f.Chmod(0640);
  CHECK(WarnsInChild(f.path(), {}, getegid()) == 1);           // not in it: warns
  CHECK(WarnsInChild(f.path(), {foreign}, getegid()) == 0);    // a supplementary group
  CHECK(WarnsInChild(f.path(), {}, foreign) == 0);             // the effective gid
  f.Chmod(0660);  // group write warns even for the process's own group
  CHECK(WarnsInChild(f.path(), {foreign}, getegid()) == 1);
}

TEST_CASE("the packaged layout, 0640 root:cmax, is quiet", "[secrets]") {
  if (geteuid() != 0) CMAX_SKIP("needs root to chown the file root:cmax");
  const group* gr = getgrnam("cmax");
  if (gr == nullptr) CMAX_SKIP("no group named cmax on this machine (the packages make it)");
  const gid_t cmax = gr->gr_gid;
  TokenFile f;
  f.Chgrp(cmax);
  f.Chmod(0640);
  CHECK(WarnsInChild(f.path(), {}, 0) == 0);  // root, not in group cmax: still quiet
  f.Chmod(0644);
  CHECK(WarnsInChild(f.path(), {}, 0) == 1);
  f.Chmod(0660);
  CHECK(WarnsInChild(f.path(), {}, 0) == 1);
}

TEST_CASE("SameSecret is true only for the same non-empty secret", "[secrets]") {
  CHECK(cmax::SameSecret("abc123", "abc123"));
  CHECK_FALSE(cmax::SameSecret("abc124", "abc123"));
  CHECK_FALSE(cmax::SameSecret("abc12", "abc123"));
  CHECK_FALSE(cmax::SameSecret("abc1234", "abc123"));
  CHECK_FALSE(cmax::SameSecret("", ""));
  CHECK_FALSE(cmax::SameSecret("x", ""));
}

TEST_CASE("random hex and random ids have the asked length and do not repeat", "[secrets]") {
  auto hex = cmax::RandomHex(16);
  REQUIRE(hex.ok());
  CHECK(hex->size() == 32);
  CHECK(AllHex(*hex));
  std::set<std::string> ids;
  for (int i = 0; i < 200; ++i) {
    std::string id = cmax::RandomId(16);
    CHECK(id.size() == 32);
    CHECK(AllHex(id));
    ids.insert(id);
  }
  CHECK(ids.size() == 200);
  CHECK(cmax::RandomId(2).size() == 4);
  CHECK(cmax::RandomId(3).size() == 6);
}
