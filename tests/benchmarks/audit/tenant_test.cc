// Tenant isolation: forbidden targets (loopback only), the IPMI device, and
// NCCL variables forced system-wide.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/audit/tenant_isolation.h"
#include "tests/benchmarks/audit/audit_test_util.h"

namespace cmax::audit {
namespace {

// A listening TCP socket on 127.0.0.1 with an ephemeral port.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  void Listen() { REQUIRE(listen(fd_, 4) == 0); }
  ~Listener() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST_CASE("a reachable forbidden target is critical, an unreachable one passes",
          "[audit][tenant]") {
  Listener open_port;
  open_port.Listen();
  Listener closed_port;  // bound but not listening: connections are refused
  auto targets = ParseForbidden(absl::StrCat("127.0.0.1:", open_port.port(), ",127.0.0.1:",
                                             closed_port.port()));
  REQUIRE(targets.ok());
  REQUIRE(targets->size() == 2);
  auto results = CheckForbiddenTargets(*targets, std::chrono::milliseconds(1000));
  REQUIRE(results.size() == 2);
  CHECK(results[0].status == CheckStatus::kCritical);
  CHECK(results[0].subject == absl::StrCat("target:127.0.0.1:", open_port.port()));
  CHECK(FindingSeverity(results[0]) == v1::SEVERITY_CRITICAL);
  CHECK(results[1].status == CheckStatus::kPass);
  CHECK(absl::StrContains(results[1].why, "refused"));
}

TEST_CASE("forbidden target lists parse and reject bad items", "[audit][tenant]") {
  auto ok = ParseForbidden("127.0.0.1:623,::1:22,[::1]:443");
  REQUIRE(ok.ok());
  CHECK((*ok)[1].host == "::1");
  CHECK((*ok)[2].host == "::1");
  CHECK((*ok)[2].port == "443");
  CHECK_FALSE(ParseForbidden("127.0.0.1").ok());
  CHECK_FALSE(ParseForbidden("127.0.0.1:99999").ok());
}

TEST_CASE("an IPMI device open to tenants warns", "[audit][tenant]") {
  char tmpl[] = "/tmp/cmax-audit-bmc-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string root = tmpl;
  mkdir((root + "/dev").c_str(), 0755);
  CHECK(CheckBmcDevice(Sysroot(root)).status == CheckStatus::kPass);  // no device
  std::string dev = root + "/dev/ipmi0";
  std::ofstream(dev).put('\0');
  chmod(dev.c_str(), 0666);
  CheckResult open = CheckBmcDevice(Sysroot(root));
  CHECK(open.status == CheckStatus::kWarn);
  CHECK(absl::StrContains(open.found, "dev/ipmi0"));
  chmod(dev.c_str(), 0600);
  if (geteuid() == 0) {  // root judges the mode bits, not its own access
    CHECK(CheckBmcDevice(Sysroot(root)).status == CheckStatus::kPass);
  }
  unlink(dev.c_str());
  rmdir((root + "/dev").c_str());
  rmdir(root.c_str());
}

TEST_CASE("NCCL tuning forced in /etc/nccl.conf or /etc/environment warns", "[audit][tenant]") {
  CheckResult r = CheckNcclSystemEnv(Sysroot(testing::Fixture("roots/tenant")));
  CHECK(r.status == CheckStatus::kWarn);
  CHECK(absl::StrContains(r.found, "/etc/nccl.conf:3: NCCL_ALGO=Ring"));
  CHECK(absl::StrContains(r.found, "/etc/environment:2: NCCL_PROTO=Simple"));
  CHECK_FALSE(absl::StrContains(r.found, "NCCL_DEBUG"));
  CHECK(CheckNcclSystemEnv(Sysroot(testing::Fixture("roots/fabric"))).status ==
        CheckStatus::kPass);
}

}  // namespace
}  // namespace cmax::audit
