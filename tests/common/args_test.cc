#include "common/args.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

TEST_CASE("the argument parser takes the usual forms", "[args]") {
  std::string mode;
  int64_t n = 0, bytes = 0;
  double x = 0;
  bool jsonl = false;
  int verbose = 0;
  cmax::ArgParser p("t", "");
  p.AddString("mode", &mode, "");
  p.AddInt("iters", &n, "", "n");
  p.AddBytes("min-bytes", &bytes, "", "b");
  p.AddDouble("x", &x, "");
  p.AddFlag("jsonl", &jsonl, "");
  p.AddCount("verbose", "v", &verbose, "");
  REQUIRE(p.Parse({"--mode=fast", "-n", "5", "-b", "8M", "--x", "2.5", "--jsonl", "-vv", "pos"}).ok());
  CHECK(mode == "fast");
  CHECK(n == 5);
  CHECK(bytes == 8 << 20);
  CHECK(x == 2.5);
  CHECK(jsonl);
  CHECK(verbose == 2);
  CHECK(p.positional() == std::vector<std::string>{"pos"});
}

TEST_CASE("the argument parser refuses unknown or incomplete options", "[args]") {
  int64_t n = 0;
  cmax::ArgParser p("t", "");
  p.AddInt("iters", &n, "", "n");
  CHECK_FALSE(p.Parse({"--bogus"}).ok());
  cmax::ArgParser q("t", "");
  q.AddInt("iters", &n, "", "n");
  CHECK_FALSE(q.Parse({"--iters"}).ok());
  cmax::ArgParser r("t", "");
  r.AddInt("iters", &n, "", "n");
  CHECK_FALSE(r.Parse({"--iters=ten"}).ok());
}

namespace {

// What a FILE* received (a tmpfile's contents).
std::string Contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[512];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) s.append(buf, n);
  return s;
}

// ParseToolArgs on `args` (program name first); its code, stdout and stderr.
struct ToolRun {
  int code;
  std::string out, err;
  int64_t nodes;
};
ToolRun RunTool(std::vector<std::string> args) {
  ToolRun r{0, "", "", 7};
  cmax::ArgParser p("tool [--nodes N]", "a tool");
  p.AddInt("nodes", &r.nodes, "nodes");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  REQUIRE(out != nullptr);
  REQUIRE(err != nullptr);
  r.code = cmax::ParseToolArgs(p, static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = Contents(out);
  r.err = Contents(err);
  std::fclose(out);
  std::fclose(err);
  return r;
}

}  // namespace

TEST_CASE("a tool's arguments: parsed, or the error and --help with exit code 2", "[args]") {
  SECTION("good values: go on (-1), nothing printed") {
    const ToolRun r = RunTool({"tool", "--nodes", "5"});
    CHECK(r.code == -1);
    CHECK(r.nodes == 5);
    CHECK(r.out.empty());
    CHECK(r.err.empty());
  }
  SECTION("--nodes 5x is refused, not read as 5") {
    const ToolRun r = RunTool({"tool", "--nodes", "5x"});
    CHECK(r.code == 2);
    CHECK(r.nodes == 7);
    CHECK(r.out.empty());
    CHECK(r.err.find("--nodes: '5x' is not an integer") == 0);
    CHECK(r.err.find("usage: tool [--nodes N]") != std::string::npos);
  }
  SECTION("an unknown option and a missing value: exit code 2 with the help") {
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"tool", "--node", "5"}, {"tool", "--nodes"}}) {
      const ToolRun r = RunTool(args);
      CHECK(r.code == 2);
      CHECK(r.err.find("usage: tool") != std::string::npos);
    }
  }
  SECTION("--help: the help on stdout, exit code 0") {
    const ToolRun r = RunTool({"tool", "--help"});
    CHECK(r.code == 0);
    CHECK(r.out.find("usage: tool [--nodes N]") == 0);
    CHECK(r.err.empty());
  }
}
