// The benchmark tools' command lines (issue 33 item 3): each parses with
// cmax::ArgParser through ParseToolArgs, so a bad value such as `--nodes 5x`
// is refused with exit code 2, the error and --help, instead of being read
// as 5. Runs the built binaries (CMAX_BIN_DIR); they exit before any work.
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "common/subprocess.h"

namespace {

using namespace std::chrono_literals;

std::string Bin(const std::string& name) {
  const char* e = std::getenv("CMAX_BIN_DIR");
  return std::string(e && *e ? e : CMAX_TEST_BIN_DIR) + "/" + name;
}

// Runs `tool args...`; REQUIREs that it exited with `code` and that its
// stderr holds `message` and the tool's usage line.
void CheckRefused(const std::string& tool, std::vector<std::string> args,
                  const std::string& message) {
  args.insert(args.begin(), Bin(tool));
  auto run = cmax::RunCommand(args, 30s);
  REQUIRE(run.ok());
  INFO(tool << " stdout:\n" << run->out << "\nstderr:\n" << run->err);
  CHECK(run->exit.exited);
  CHECK(run->exit.code == 2);
  CHECK(run->err.find(message) != std::string::npos);
  CHECK(run->err.find("usage: " + tool) != std::string::npos);
}

}  // namespace

TEST_CASE("tool args: cmax-scheduler-cost refuses --nodes 5x", "[tool_args]") {
  CheckRefused("cmax-scheduler-cost", {"--nodes", "5x"}, "--nodes: '5x' is not an integer");
  CheckRefused("cmax-scheduler-cost", {"--mode", "fast"}, "--mode: 'fast' is not auto or full");
}

TEST_CASE("tool args: cmax-scale-agents refuses --agents 5x", "[tool_args]") {
  CheckRefused("cmax-scale-agents", {"--agents", "5x"}, "--agents: '5x' is not an integer");
  // The underscore spelling docs/scale.md uses is the same option.
  CheckRefused("cmax-scale-agents", {"--idle_seconds=ten"},
               "--idle-seconds: 'ten' is not a number");
  CheckRefused("cmax-scale-agents", {"--seed", "-1"}, "--seed: '-1' is not an unsigned integer");
}

TEST_CASE("tool args: cmax-scale-agree refuses --nodes 5x", "[tool_args]") {
  CheckRefused("cmax-scale-agree", {"--nodes", "5x"}, "--nodes: '5x' is not an integer");
}

TEST_CASE("tool args: cmax-scale-scorecard refuses a value on a flag", "[tool_args]") {
  // Its only options are a path, a run id and two flags: no number to get
  // wrong, so the flag given a value stands for the bad value.
  CheckRefused("cmax-scale-scorecard", {"--db", "x.db", "--parsed=5x"},
               "--parsed takes no value");
}

TEST_CASE("tool args: cmax-record-wire-bench refuses --records 5x", "[tool_args]") {
  CheckRefused("cmax-record-wire-bench", {"--records", "5x"}, "--records: '5x' is not an integer");
}
