// The Prometheus text writer: escaping, histogram buckets, value spelling.
#include "common/metrics_text.h"

#include <catch2/catch.hpp>

#include "common/metrics_http.h"

TEST_CASE("metrics text escapes label values and writes families once", "[metrics]") {
  cmax::MetricsText m;
  m.Family("cmax_x", "gauge", "a help\nwith a newline");
  m.Sample(1, {{"node", "a\"b\\c\nd"}});
  m.Sample(2.5);
  CHECK(m.text() ==
        "# HELP cmax_x a help with a newline\n# TYPE cmax_x gauge\n"
        "cmax_x{node=\"a\\\"b\\\\c\\nd\"} 1\ncmax_x 2.5\n");
}

TEST_CASE("a histogram's buckets are cumulative and end with +Inf", "[metrics]") {
  cmax::Histogram h({0.1, 1});
  h.Observe(0.05);
  h.Observe(0.1);  // on the bound: counted in it (le)
  h.Observe(0.5);
  h.Observe(7);
  cmax::MetricsText m;
  m.Family("cmax_h_seconds", "histogram", "h");
  m.Write(h, {{"job", "j"}});
  CHECK(m.text() ==
        "# HELP cmax_h_seconds h\n# TYPE cmax_h_seconds histogram\n"
        "cmax_h_seconds_bucket{job=\"j\",le=\"0.1\"} 2\n"
        "cmax_h_seconds_bucket{job=\"j\",le=\"1\"} 3\n"
        "cmax_h_seconds_bucket{job=\"j\",le=\"+Inf\"} 4\n"
        "cmax_h_seconds_sum{job=\"j\"} 7.65\n"
        "cmax_h_seconds_count{job=\"j\"} 4\n");
}

TEST_CASE("the metrics listen address is HOST:PORT, [V6]:PORT or a bare port on 127.0.0.1", "[metrics]") {
  std::string host;
  int port = -1;
  REQUIRE(cmax::ParseListen("9470", &host, &port).ok());
  CHECK(host == "127.0.0.1");
  CHECK(port == 9470);
  REQUIRE(cmax::ParseListen("[::1]:0", &host, &port).ok());
  CHECK(host == "::1");
  CHECK(port == 0);
  REQUIRE(cmax::ParseListen("10.0.0.5:9470", &host, &port).ok());
  CHECK(host == "10.0.0.5");
  for (const char* bad : {"", "x", "1:2:3", "[::1]", "host:70000", "host:-1"}) {
    INFO(bad);
    CHECK_FALSE(cmax::ParseListen(bad, &host, &port).ok());
  }
}
