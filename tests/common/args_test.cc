#include "common/args.h"

#include <catch2/catch.hpp>

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
