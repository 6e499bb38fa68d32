// The burn-in's kernel-log follower against a regular file standing in for
// /dev/kmsg under a temporary root (same record format, see
// tests/fixtures/health NOTE.md and Linux Documentation/ABI/testing/dev-kmsg).
#include "benchmarks/health/kmsg_follower.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

namespace cmax::health {
namespace {

class TempRoot {
 public:
  TempRoot() {
    char tmpl[] = "/tmp/cmax-kmsg-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::filesystem::create_directories(dir_ + "/dev");
  }
  ~TempRoot() { std::filesystem::remove_all(dir_); }
  const std::string& dir() const { return dir_; }
  void Append(const std::string& text) const {
    FILE* f = std::fopen((dir_ + "/dev/kmsg").c_str(), "a");
    REQUIRE(f != nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }

 private:
  std::string dir_;
};

}  // namespace

TEST_CASE("the follower returns only records written after it started", "[kmsg]") {
  TempRoot root;
  root.Append(
      "4,100,5000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the "
      "bus.\n");
  auto f = KmsgFollower::Start(Sysroot(root.dir()));
  REQUIRE(f.ok());
  auto none = (*f)->Poll();
  REQUIRE(none.ok());
  CHECK(none->empty());

  root.Append(
      "4,101,6000000,-;NVRM: Xid (PCI:0000:3b:00): 48, pid=2, DBE\n"
      " SUBSYSTEM=pci\n"
      "6,102,6500000,-;eth0: link up\n");
  auto lines = (*f)->Poll();
  REQUIRE(lines.ok());
  REQUIRE(lines->size() == 2);  // the dictionary line is not a record
  CHECK((*lines)[0].text == "NVRM: Xid (PCI:0000:3b:00): 48, pid=2, DBE");
  CHECK((*lines)[0].mono_s == Approx(6.0));
  CHECK((*lines)[1].text == "eth0: link up");
  auto xids = ParseXidEvents(*lines);
  REQUIRE(xids.size() == 1);
  CHECK(xids[0].code == 48);
  CHECK(xids[0].pci == "0000:3b:00");

  auto again = (*f)->Poll();
  REQUIRE(again.ok());
  CHECK(again->empty());
}

TEST_CASE("a partial line waits for its newline", "[kmsg]") {
  TempRoot root;
  root.Append("");
  auto f = KmsgFollower::Start(Sysroot(root.dir()));
  REQUIRE(f.ok());
  root.Append("4,7,1000,-;NVRM: Xid (PCI:0000:18:00): 6");
  auto first = (*f)->Poll();
  REQUIRE(first.ok());
  CHECK(first->empty());
  root.Append("3, pid=9, ...\n4,8,2000,-;second");
  auto second = (*f)->Poll();
  REQUIRE(second.ok());
  REQUIRE(second->size() == 1);
  CHECK(second->front().text == "NVRM: Xid (PCI:0000:18:00): 63, pid=9, ...");
  root.Append("\n");
  auto third = (*f)->Poll();
  REQUIRE(third.ok());
  REQUIRE(third->size() == 1);
  CHECK(third->front().text == "second");
}

TEST_CASE("a refused or missing kmsg is an error, not an empty log", "[kmsg]") {
  TempRoot root;
  auto missing = KmsgFollower::Start(Sysroot(root.dir()));
  CHECK(absl::IsNotFound(missing.status()));

  root.Append("4,1,1,-;x\n");
  auto refuse = [](const char*, int) {
    errno = EPERM;
    return -1;
  };
  auto refused = KmsgFollower::Start(Sysroot(root.dir()), refuse);
  REQUIRE(absl::IsPermissionDenied(refused.status()));
  CHECK_THAT(std::string(refused.status().message()),
             Catch::Contains("dev/kmsg") && Catch::Contains("dmesg_restrict"));
}

}  // namespace cmax::health
