#include "common/subprocess.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>

#include "tests/scratch_dir.h"

using namespace std::chrono_literals;

TEST_CASE("RunCommand captures output and the exit code", "[subprocess]") {
  auto r = cmax::RunCommand({"sh", "-c", "echo out; echo err >&2; exit 3"}, 5s);
  REQUIRE(r.ok());
  CHECK(r->out == "out\n");
  CHECK(r->err == "err\n");
  CHECK(r->exit.exited);
  CHECK(r->exit.code == 3);
  CHECK_FALSE(r->timed_out);
}

TEST_CASE("RunCommand kills a command at its timeout", "[subprocess]") {
  auto start = std::chrono::steady_clock::now();
  auto r = cmax::RunCommand({"sleep", "30"}, 300ms);
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK_FALSE(r->exit.exited);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("a missing program is NOT_FOUND", "[subprocess]") {
  auto r = cmax::RunCommand({"cmax-no-such-program"}, 1s);
  CHECK(absl::IsNotFound(r.status()));
}

TEST_CASE("Spawn redirects output and signals the whole group", "[subprocess]") {
  cmax::testing::ScratchDir dir;
  std::string out = dir.path + "/out";
  cmax::SpawnOptions opts;
  opts.argv = {"sh", "-c", "echo started; sleep 30 & wait"};
  opts.stdout_path = out;
  auto child = cmax::Subprocess::Spawn(opts);
  REQUIRE(child.ok());
  usleep(200000);
  (*child)->SignalGroup(SIGKILL);
  cmax::ExitInfo info = (*child)->Wait();
  CHECK_FALSE(info.exited);
  CHECK(info.signal == SIGKILL);
  CHECK(info.Describe() == "signal 9 (SIGKILL)");
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  CHECK(line == "started");
  CHECK(cmax::TailOfFile(out, 1024) == "started\n");
}
