#include "benchmarks/audit/tenant_isolation.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/time_util.h"

namespace cmax::audit {
namespace {

enum class ConnectOutcome { kConnected, kRefused, kTimeout, kError };

// Non-blocking connect, waiting at most `timeout`.
ConnectOutcome TryConnect(const addrinfo* ai, std::chrono::milliseconds timeout,
                          std::string* detail) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) {
    *detail = absl::StrCat("socket: ", strerror(errno));
    return ConnectOutcome::kError;
  }
  ConnectOutcome outcome = ConnectOutcome::kError;
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
    outcome = ConnectOutcome::kConnected;
  } else if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int n = poll(&p, 1, static_cast<int>(timeout.count()));
    if (n == 0) {
      outcome = ConnectOutcome::kTimeout;
      *detail = absl::StrCat("no answer within ", timeout.count(), " ms");
    } else if (n > 0) {
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0) {
        outcome = ConnectOutcome::kConnected;
      } else {
        outcome = err == ECONNREFUSED ? ConnectOutcome::kRefused : ConnectOutcome::kError;
        *detail = strerror(err);
      }
    } else {
      *detail = absl::StrCat("poll: ", strerror(errno));
    }
  } else {
    outcome = errno == ECONNREFUSED ? ConnectOutcome::kRefused : ConnectOutcome::kError;
    *detail = strerror(errno);
  }
  close(fd);
  return outcome;
}

}  // namespace

absl::StatusOr<std::vector<HostPort>> ParseForbidden(const std::string& list) {
  std::vector<HostPort> out;
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    std::string s(absl::StripAsciiWhitespace(item));
    size_t colon = s.rfind(':');
    int port = 0;
    if (colon == std::string::npos || colon == 0 ||
        !absl::SimpleAtoi(s.substr(colon + 1), &port) || port <= 0 || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("forbidden target '", s, "' is not host:port"));
    }
    std::string host = s.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    out.push_back({host, absl::StrCat(port)});
  }
  return out;
}

std::vector<CheckResult> CheckForbiddenTargets(const std::vector<HostPort>& targets,
                                               std::chrono::milliseconds timeout) {
  std::vector<CheckResult> out;
  for (const auto& t : targets) {
    CheckResult r;
    std::string target = absl::StrCat(t.host, ":", t.port);
    r.check_id = "audit.tenant.forbidden_target";
    r.category = "security";
    r.subject = absl::StrCat("target:", target);
    r.title = absl::StrCat("Forbidden target ", target, " unreachable");
    r.required = "no TCP connection";
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &res);
    if (rc != 0) {
      r.status = CheckStatus::kUnknown;
      r.found = "unresolved";
      r.why = absl::StrCat("cannot resolve ", t.host, ": ", gai_strerror(rc));
      out.push_back(r);
      continue;
    }
    bool connected = false;
    std::vector<std::string> details;
    for (addrinfo* ai = res; ai != nullptr && !connected; ai = ai->ai_next) {
      std::string detail;
      int64_t start = MonotonicNs();
      ConnectOutcome o = TryConnect(ai, timeout, &detail);
      double ms = (MonotonicNs() - start) / 1e6;
      if (o == ConnectOutcome::kConnected) {
        connected = true;
        r.found = absl::StrCat("connected in ", absl::StrFormat("%.1f", ms), " ms");
      } else {
        details.push_back(detail);
      }
    }
    freeaddrinfo(res);
    if (connected) {
      r.status = CheckStatus::kCritical;
      r.why = absl::StrCat("a TCP connection to ", target,
                           " succeeded from this node: a tenant can reach a target the plan "
                           "forbids");
      r.remediation = "Block the target from tenant networks (firewall, VLAN, security group).";
    } else {
      r.status = CheckStatus::kPass;
      r.found = absl::StrJoin(details, "; ");
      r.why = absl::StrCat("no TCP connection within ", timeout.count(), " ms (", r.found, ")");
    }
    out.push_back(r);
  }
  return out;
}

CheckResult CheckBmcDevice(const Sysroot& root) {
  CheckResult r;
  r.check_id = "audit.tenant.bmc_device";
  r.category = "security";
  r.subject = "node";
  r.title = "BMC not reachable from the host through IPMI";
  r.required = "no IPMI device usable by tenants";
  std::vector<std::string> usable, present;
  for (const char* dev : {"/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0"}) {
    std::string path = root.Path(dev);
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    present.push_back(path);
    bool open_to_tenant = geteuid() == 0 ? (st.st_mode & (S_IROTH | S_IWOTH)) == (S_IROTH | S_IWOTH)
                                         : access(path.c_str(), R_OK | W_OK) == 0;
    if (open_to_tenant) usable.push_back(path);
  }
  if (!usable.empty()) {
    r.status = CheckStatus::kWarn;
    r.found = absl::StrJoin(usable, ", ");
    r.why = absl::StrCat(r.found, geteuid() == 0 ? " is readable and writable by every user"
                                                 : " is usable by this (non-root) user",
                         ": a tenant can talk to the BMC (ipmitool mc info, user and network "
                         "settings)");
    r.remediation = "Restrict the IPMI device to root (mode 0600) or unload ipmi_devintf on "
                    "tenant nodes.";
  } else {
    r.status = CheckStatus::kPass;
    r.found = present.empty() ? "no IPMI device" : absl::StrJoin(present, ", ") + " (restricted)";
    r.why = present.empty() ? "no /dev/ipmi0" : "the IPMI device is not open to tenants";
  }
  return r;
}

CheckResult CheckNcclSystemEnv(const Sysroot& root) {
  CheckResult r;
  r.check_id = "audit.tenant.nccl_env";
  r.category = "security";
  r.subject = "node";
  r.title = "NCCL tuning variables not forced system-wide";
  r.required = "NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS unset in /etc/nccl.conf and /etc/environment";
  std::vector<std::string> hits;
  for (const char* file : {"/etc/nccl.conf", "/etc/environment"}) {
    auto text = root.Read(file);
    if (!text.ok()) continue;
    int lineno = 0;
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      ++lineno;
      absl::string_view l = absl::StripAsciiWhitespace(line);
      if (l.empty() || l.front() == '#') continue;
      absl::ConsumePrefix(&l, "export ");
      l = absl::StripLeadingAsciiWhitespace(l);
      size_t eq = l.find('=');
      if (eq == absl::string_view::npos) continue;
      std::string name(absl::StripAsciiWhitespace(l.substr(0, eq)));
      if (name == "NCCL_ALGO" || name == "NCCL_PROTO" || name == "NCCL_MIN_NCHANNELS") {
        hits.push_back(absl::StrCat(file, ":", lineno, ": ", l));
      }
    }
  }
  if (hits.empty()) {
    r.status = CheckStatus::kPass;
    r.found = "none set";
    r.why = "no forced NCCL algorithm, protocol or channel count";
  } else {
    r.status = CheckStatus::kWarn;
    r.found = absl::StrJoin(hits, "; ");
    r.why = "NCCL tuning forced for every job on the node: it hides or skews what NCCL would "
            "choose (ClusterMAX asks providers to leave these unset)";
    r.evidence = hits;
    r.remediation = "Remove these variables from the system-wide files; let jobs set them.";
  }
  return r;
}

}  // namespace cmax::audit
