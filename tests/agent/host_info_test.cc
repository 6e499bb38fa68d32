#include "agent/host_info.h"

#include <arpa/inet.h>

#include <catch2/catch.hpp>
#include <chrono>

using namespace std::chrono_literals;

TEST_CASE("the fallback inventory reads /proc under the root", "[agent][inventory]") {
  auto inv = cmax::agent::MinimalInventory(CMAX_SOURCE_DIR "/tests/fixtures/agent/proc");
  CHECK(inv.cpu_cores() == 4);
  CHECK(inv.memory_gib() == Approx(2113475660.0 / 1024 / 1024));
  CHECK(inv.kernel() == "6.8.0-45-generic");
  CHECK(inv.facts().at("cpu_model") == "Intel(R) Xeon(R) Platinum 8480+");
  CHECK_FALSE(inv.hostname().empty());
}

TEST_CASE("the fallback inventory reads a Grace host's arm64 /proc/cpuinfo",
          "[agent][inventory][grace]") {
  // A GB200 tray: no "model name" lines, 144 processors named from their
  // implementer and part.
  auto inv = cmax::agent::MinimalInventory(CMAX_SOURCE_DIR
                                           "/tests/fixtures/hostcheck/grace-gb200");
  CHECK(inv.cpu_cores() == 144);
  CHECK(inv.facts().at("cpu_model") == "Arm Neoverse-V2");
  CHECK(inv.memory_gib() == Approx(1711738880.0 / 1024 / 1024));
  CHECK(inv.kernel() == "6.8.0-1025-nvidia-64k");
}

TEST_CASE("the inventory line is parsed as protobuf JSON, unknown fields ignored",
          "[agent][inventory]") {
  auto inv = cmax::agent::ParseInventoryOutput(
      "some banner\n"
      "{\"hostname\":\"gpu-07\",\"gpuCount\":8,\"gpuModel\":\"NVIDIA "
      "H200\",\"cpuCores\":224,"
      "\"memoryGib\":2015.5,\"driverVersion\":\"580.65.06\",\"facts\":{\"nvlink\":\"18\"}"
      ","
      "\"newField\":1}\n");
  REQUIRE(inv.ok());
  CHECK(inv->hostname() == "gpu-07");
  CHECK(inv->gpu_count() == 8);
  CHECK(inv->gpu_model() == "NVIDIA H200");
  CHECK(inv->facts().at("nvlink") == "18");
  CHECK_FALSE(cmax::agent::ParseInventoryOutput("not json\n").ok());
  CHECK_FALSE(cmax::agent::ParseInventoryOutput("").ok());
}

TEST_CASE("a failing inventory child leaves the reason in facts", "[agent][inventory]") {
  // No cmax-bench in /nonexistent: the fallback says why.
  auto inv = cmax::agent::GatherInventory(
      "/nonexistent", CMAX_SOURCE_DIR "/tests/fixtures/agent/proc", 2s);
  REQUIRE(inv.facts().count("inventory_error"));
  CHECK_THAT(inv.facts().at("inventory_error"),
             Catch::Contains("/nonexistent/cmax-bench"));
  CHECK(inv.cpu_cores() == 4);
}

TEST_CASE("reachable addresses are parseable and not loopback unless alone",
          "[agent][inventory]") {
  auto addresses = cmax::agent::ReachableAddresses();
  REQUIRE_FALSE(addresses.empty());
  bool any_other = false;
  for (const auto& a : addresses) {
    unsigned char buf[16];
    bool v4 = inet_pton(AF_INET, a.c_str(), buf) == 1;
    bool v6 = inet_pton(AF_INET6, a.c_str(), buf) == 1;
    CHECK((v4 || v6));
    if (a != "127.0.0.1" && a != "::1") any_other = true;
  }
  if (any_other) {
    for (const auto& a : addresses) {
      CHECK(a != "127.0.0.1");
      CHECK(a != "::1");
    }
  }
}

TEST_CASE("an advertise list takes address literals and host names, and names a bad entry",
          "[agent][inventory]") {
  using cmax::agent::ParseAdvertiseList;
  auto one = ParseAdvertiseList("127.0.0.1");
  REQUIRE(one.ok());
  CHECK(*one == std::vector<std::string>{"127.0.0.1"});
  auto many = ParseAdvertiseList("10.0.0.7, fd00::7,gpu-07.cluster.example,10.0.0.7");
  REQUIRE(many.ok());
  CHECK(*many ==
        std::vector<std::string>{"10.0.0.7", "fd00::7", "gpu-07.cluster.example"});
  for (const char* bad : {"", "10.0.0.1,", "10.0.0.300", "-gpu", "gpu_7", "a..b",
                          "10.0.0.1;rm -rf /", "[::1]"}) {
    INFO(bad);
    auto r = ParseAdvertiseList(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(r.status().message()), Catch::Contains("--advertise"));
  }
  CHECK_THAT(std::string(ParseAdvertiseList("10.0.0.1,gpu_7").status().message()),
             Catch::Contains("'gpu_7'"));
}
