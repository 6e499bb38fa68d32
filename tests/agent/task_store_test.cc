#include "agent/task_store.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "test_util.h"

using cmax::agent::ParseTaskDirName;
using cmax::agent::TaskKey;
using cmax::agent::TaskStore;
using cmax::agent::testing::AppendFile;
using cmax::agent::testing::ReadFile;
using cmax::agent::testing::TempDir;

TEST_CASE("task directory names round-trip, dots in ids included", "[agent][store]") {
  TaskKey key{"run-1.hostcheck.node_a", 3, 7};
  CHECK(key.DirName() == "run-1.hostcheck.node_a.a3.r7");
  TaskKey parsed;
  REQUIRE(ParseTaskDirName(key.DirName(), &parsed));
  CHECK(parsed == key);
  CHECK_FALSE(ParseTaskDirName("lost+found", &parsed));
  CHECK_FALSE(ParseTaskDirName("t.ax.r0", &parsed));
  CHECK_FALSE(ParseTaskDirName(".a1.r0", &parsed));
}

TEST_CASE("restart scan fails a directory without status and keeps finished ones",
          "[agent][store]") {
  TempDir dir;
  TaskStore store(dir.path());
  cmax::v1::TaskAssignment a;
  a.set_task_id("t1");
  a.set_suite("selftest");
  TaskKey orphan{"t1", 0, 0};
  TaskKey finished{"t2", 1, 0};
  REQUIRE(store.Create(orphan, a).ok());
  REQUIRE(store.Create(finished, a).ok());
  AppendFile(store.SpoolPath(orphan),
             "{\"log\":{\"message\":\"a\"}}\n{\"log\":{}}\n{\"lo");
  AppendFile(store.StderrPath(orphan), "last words\n");
  cmax::v1::TaskStatus done;
  done.set_task_id("t2");
  done.set_attempt(1);
  done.set_state(cmax::v1::TASK_COMPLETED);
  done.set_record_count(4);
  REQUIRE(store.WriteStatus(finished, done).ok());

  auto scanned = store.ScanAtStartup(12345);
  REQUIRE(scanned.ok());
  REQUIRE(scanned->size() == 2);
  const auto& o = (*scanned)[0];
  CHECK(o.key == orphan);
  CHECK(o.status.state() == cmax::v1::TASK_FAILED);
  CHECK(o.status.message() == "agent restarted; the task process died with it");
  CHECK(o.status.record_count() == 3);  // two lines and a partial one
  CHECK(o.status.ended_unix_ns() == 12345);
  CHECK_THAT(o.status.stderr_tail(), Catch::Contains("last words"));
  // The status was written, so the next scan reads it back unchanged.
  CHECK_THAT(ReadFile(store.DirFor(orphan) + "/status.json"),
             Catch::Contains("agent restarted"));
  const auto& f = (*scanned)[1];
  CHECK(f.key == finished);
  CHECK(f.status.state() == cmax::v1::TASK_COMPLETED);
  CHECK(f.status.record_count() == 4);
}

TEST_CASE("a missing tasks directory scans as empty", "[agent][store]") {
  TempDir dir;
  TaskStore store(dir.path() + "/nothing-here");
  auto scanned = store.ScanAtStartup(1);
  REQUIRE(scanned.ok());
  CHECK(scanned->empty());
}

TEST_CASE("an unwritable work dir gives a message naming the path and reason",
          "[agent][store]") {
  if (geteuid() == 0) {
    WARN(
        "running as root: permissions are not enforced; using a path under a file "
        "instead");
  }
  TempDir dir;
  // A work dir below a regular file cannot be created by anyone, root included.
  AppendFile(dir.path() + "/file", "x");
  TaskStore store(dir.path() + "/file/work");
  cmax::v1::TaskAssignment a;
  auto s = store.Create(TaskKey{"t", 0, 0}, a);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(std::string(s.message()),
             Catch::StartsWith("work dir " + dir.path() + "/file/work") &&
                 Catch::Contains("Not a directory"));
}
