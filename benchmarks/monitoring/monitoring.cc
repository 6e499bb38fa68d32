// Metric names: the DCGM exporter's field names are DCGM's (DCGM_FI_*), as
// listed in github.com/NVIDIA/dcgm-exporter etc/default-counters.csv (where
// Xid, temperature, power, PCIe replays and remapped rows are on by default
// and the ECC, NVLink error and violation fields are commented out), and the
// throttle reasons field DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (renamed
// DCGM_FI_DEV_CLOCKS_EVENT_REASONS in DCGM 3.3; dcgm_fields.h). node_exporter's
// infiniband collector exports node_infiniband_* (github.com/prometheus/
// node_exporter, collector/infiniband_linux.go). journald.conf(5): Storage=
// persistent, or auto with /var/log/journal present, keeps the journal across
// reboots.
#include "benchmarks/monitoring/monitoring.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/hostcheck/host_facts.h"
#include "benchmarks/orchestration/config_text.h"
#include "common/sysroot.h"

namespace cmax::monitoring {
namespace {

constexpr size_t kMaxScrape = 32u << 20;

Check Make(std::string id, Status status, std::string title) {
  Check c;
  c.id = std::move(id);
  c.category = "monitoring";
  c.status = status;
  c.title = std::move(title);
  return c;
}

std::string Url(const Exporter& e) {
  return absl::StrCat("http://127.0.0.1:", e.port, "/metrics");
}

bool Carries(const Signal& s, const std::set<std::string>& names, std::string* which) {
  for (const auto& m : s.metrics) {
    if (names.count(m)) {
      *which = m;
      return true;
    }
  }
  if (!s.prefix.empty()) {
    for (auto it = names.lower_bound(s.prefix); it != names.end() && absl::StartsWith(*it, s.prefix);
         ++it) {
      if (s.contains.empty() || absl::StrContains(*it, s.contains)) {
        *which = *it;
        return true;
      }
    }
  }
  return false;
}

const Signal& InfinibandSignal() {
  static const Signal s = {"ib_errors", "InfiniBand port error counters", {},
                           "node_infiniband_", "error"};
  return s;
}

void CheckSignals(const Exporter& e, const std::vector<Signal>& signals,
                  const std::set<std::string>& names, std::vector<Check>* out) {
  Check c = Make(absl::StrCat("monitoring.signals.", e.name), Status::kPass, "");
  std::vector<std::string> missing;
  for (const Signal& s : signals) {
    std::string which;
    if (Carries(s, names, &which)) {
      c.evidence.push_back(absl::StrCat("GET ", Url(e), ": ", s.what, ": ", which));
    } else {
      missing.push_back(absl::StrCat(s.what, " (", s.metrics.empty() ? s.prefix + "*" : s.metrics[0],
                                     ")"));
    }
  }
  if (missing.empty()) {
    c.title = absl::StrCat(e.name, " exporter exports all ", signals.size(),
                           " health signals checked");
  } else {
    c.status = Status::kWarn;
    c.title = absl::StrCat(e.name, " exporter lacks ", missing.size(), " of ", signals.size(),
                           " health signals: ", absl::StrJoin(missing, ", "));
    c.action = e.name == "dcgm"
                   ? "Enable the missing fields in the DCGM exporter's counters CSV "
                     "(-f/--collectors, e.g. uncomment DCGM_FI_DEV_ECC_DBE_VOL_TOTAL and the "
                     "DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL lines of default-counters.csv, add "
                     "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS) and restart it."
                   : "Enable node_exporter's infiniband collector (--collector.infiniband, on by "
                     "default) and check it can read /sys/class/infiniband.";
    c.links = {"https://github.com/NVIDIA/dcgm-exporter/blob/main/etc/default-counters.csv"};
  }
  out->push_back(std::move(c));
}

void CheckKernelLog(const Sysroot& root, std::vector<Check>* out) {
  Check c = Make("monitoring.kernel_log", Status::kPass, "");
  c.links = {"https://www.freedesktop.org/software/systemd/man/journald.conf.html"};
  // journald: the last Storage= of journald.conf and its drop-ins wins.
  std::optional<orchestration::ConfigValue> storage;
  std::vector<std::string> files = {"/etc/systemd/journald.conf"};
  for (const auto& f : root.List("/etc/systemd/journald.conf.d")) {
    if (absl::EndsWith(f, ".conf")) files.push_back("/etc/systemd/journald.conf.d/" + f);
  }
  for (const auto& f : files) {
    auto text = root.Read(f);
    if (!text.ok()) continue;
    auto conf = orchestration::ParseSlurmConfig(*text, f);
    if (auto v = conf.Get("Storage")) storage = v;
  }
  const std::string mode = storage.has_value() ? absl::AsciiStrToLower(storage->value) : "auto";
  const bool journal_dir = root.Exists("/var/log/journal");
  if (storage.has_value()) {
    c.evidence.push_back(absl::StrCat(orchestration::Where(*storage), ": Storage=", storage->value));
  } else {
    c.evidence.push_back("journald.conf: no Storage= (default auto)");
  }
  c.evidence.push_back(absl::StrCat("/var/log/journal: ", journal_dir ? "present" : "absent"));
  const bool kept = mode == "persistent" || (mode == "auto" && journal_dir);
  // Forwarders: rsyslog forwarding (@host, @@host, omfwd) or a kernel file,
  // and the usual log shippers' configuration.
  std::vector<std::string> shipped;
  std::vector<std::string> rsyslog = {"/etc/rsyslog.conf"};
  for (const auto& f : root.List("/etc/rsyslog.d")) rsyslog.push_back("/etc/rsyslog.d/" + f);
  for (const auto& f : rsyslog) {
    auto text = root.Read(f);
    if (!text.ok()) continue;
    int n = 0;
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      ++n;
      absl::string_view t = absl::StripAsciiWhitespace(line);
      if (t.empty() || t[0] == '#') continue;
      if (absl::StrContains(t, "omfwd") || absl::StrContains(t, " @")) {
        shipped.push_back(absl::StrCat(f, ":", n, ": ", t));
      }
    }
  }
  for (const char* p : {"/etc/fluent-bit/fluent-bit.conf", "/etc/fluent-bit/fluent-bit.yaml",
                        "/etc/vector/vector.yaml", "/etc/vector/vector.toml",
                        "/etc/promtail/config.yml", "/etc/alloy/config.alloy"}) {
    if (root.Exists(p)) shipped.push_back(absl::StrCat(p, ": present"));
  }
  for (const auto& s : shipped) c.evidence.push_back(s);
  if (kept || !shipped.empty()) {
    c.title = absl::StrCat("kernel log ", kept ? "kept across reboots (journald)" : "",
                           kept && !shipped.empty() ? " and " : "",
                           shipped.empty() ? "" : "shipped by a forwarder");
  } else {
    c.status = Status::kWarn;
    c.title = "the kernel log is neither kept across reboots nor shipped: Xid history is lost "
              "at every reboot";
    c.action = "Set Storage=persistent in /etc/systemd/journald.conf (or create /var/log/journal) "
               "and restart systemd-journald, or forward the kernel log to a log store.";
  }
  out->push_back(std::move(c));
}

void CheckSlurmHealth(const Sysroot& root, std::vector<Check>* out) {
  Check c = Make("monitoring.slurm_health_check", Status::kPass, "");
  const std::string path = orchestration::FindSlurmConf(root);
  auto text = path.empty() ? absl::NotFoundError("no slurm.conf") : root.Read(path);
  if (!text.ok()) {
    c.status = Status::kNotMeasured;
    c.title = "not measured: no Slurm on this node (cmax's Slurm health check)";
    c.detail = path.empty() ? "no slurm.conf in /etc/slurm, /etc/slurm-llnl or slurmd's cache"
                            : std::string(text.status().message());
    out->push_back(std::move(c));
    return;
  }
  auto conf = orchestration::ParseSlurmConfig(*text, path);
  auto prog = conf.Get("HealthCheckProgram");
  if (prog.has_value()) {
    c.evidence.push_back(absl::StrCat(orchestration::Where(*prog), ": HealthCheckProgram=", prog->value));
  }
  if (prog.has_value() && absl::StrContains(prog->value, "cmax")) {
    c.title = absl::StrCat("cmax's health check is wired into Slurm (", prog->value, ")");
  } else {
    c.status = prog.has_value() ? Status::kInfo : Status::kWarn;
    c.title = prog.has_value()
                  ? absl::StrCat("Slurm runs another health check (", prog->value, ")")
                  : "no HealthCheckProgram: failures between jobs go unnoticed by Slurm";
    c.action = absl::StrCat("Set HealthCheckProgram=/usr/local/bin/cmax-healthcheck and "
                            "HealthCheckInterval=300 in ", path, " (docs/slurm.md).");
  }
  out->push_back(std::move(c));
}

}  // namespace

const std::vector<Signal>& DcgmSignals() {
  static const std::vector<Signal> s = {
      {"xid", "Xid errors", {"DCGM_FI_DEV_XID_ERRORS"}, "", ""},
      {"ecc_dbe", "ECC double-bit errors",
       {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"}, "", ""},
      {"row_remap", "row remapping",
       {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"}, "", ""},
      {"pcie_replay", "PCIe replays", {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER"}, "", ""},
      {"nvlink_errors", "NVLink error counters",
       {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"},
       "", ""},
      {"temperature", "GPU temperature", {"DCGM_FI_DEV_GPU_TEMP"}, "", ""},
      {"power", "power draw", {"DCGM_FI_DEV_POWER_USAGE"}, "", ""},
      {"throttle", "throttle reasons",
       {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"}, "", ""},
  };
  return s;
}

absl::StatusOr<std::vector<Exporter>> ParseExporters(const std::string& text) {
  std::vector<Exporter> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
    int port = 0;
    if (parts.size() != 2 || parts[0].empty() || !absl::SimpleAtoi(parts[1], &port) || port < 1 ||
        port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("--exporters: '", item, "' is not NAME:PORT (port 1-65535)"));
    }
    out.push_back({std::string(parts[0]), port});
  }
  if (out.empty()) return absl::InvalidArgumentError("--exporters: no exporter given");
  return out;
}

std::set<std::string> MetricNames(const std::string& text) {
  std::set<std::string> names;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    size_t end = line.find_first_of("{ \t");
    if (end == 0 || end == absl::string_view::npos) continue;
    names.emplace(line.substr(0, end));
  }
  return names;
}

absl::StatusOr<std::string> ScrapeLoopback(int port, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto left = [&] {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now())
               .count()));
  };
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
    return absl::UnavailableError(absl::StrCat("connect: ", std::strerror(errno)));
  }
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, left()) <= 0) return absl::DeadlineExceededError("connect: timed out");
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return absl::UnavailableError(absl::StrCat("connect: ", std::strerror(err)));
  const std::string req = absl::StrCat("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:", port,
                                       "\r\nAccept: text/plain\r\n\r\n");
  size_t sent = 0;
  while (sent < req.size()) {
    p = {fd, POLLOUT, 0};
    if (poll(&p, 1, left()) <= 0) return absl::DeadlineExceededError("send: timed out");
    ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat("send: ", std::strerror(errno)));
    }
    if (n > 0) sent += static_cast<size_t>(n);
  }
  std::string resp;
  char buf[65536];
  for (;;) {
    p = {fd, POLLIN, 0};
    if (poll(&p, 1, left()) <= 0) return absl::DeadlineExceededError("read: timed out");
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat("read: ", std::strerror(errno)));
    }
    resp.append(buf, static_cast<size_t>(n));
    if (resp.size() > kMaxScrape) return absl::ResourceExhaustedError("response over 32 MiB");
  }
  size_t head_end = resp.find("\r\n\r\n");
  if (head_end == std::string::npos) return absl::DataLossError("no HTTP header in the response");
  absl::string_view status_line = absl::string_view(resp).substr(0, resp.find("\r\n"));
  std::vector<absl::string_view> parts = absl::StrSplit(status_line, ' ');
  if (parts.size() >= 2 && (parts[1] == "401" || parts[1] == "403")) {
    return absl::PermissionDeniedError(absl::StrCat("HTTP status: ", status_line));
  }
  if (parts.size() < 2 || parts[1] != "200") {
    return absl::UnavailableError(absl::StrCat("HTTP status: ", status_line));
  }
  return resp.substr(head_end + 4);
}

std::vector<Check> RunChecks(const Options& o) {
  std::vector<Check> out;
  Sysroot root(o.root);
  int gpus = -1;
  if (auto g = bench::hostcheck::ReadNvidiaGpus(root); g.ok()) gpus = static_cast<int>(g->size());
  const std::vector<std::string> hcas = root.List("/sys/class/infiniband");
  for (const Exporter& e : o.exporters) {
    Check c = Make(absl::StrCat("monitoring.exporter.", e.name), Status::kPass, "");
    auto text = o.scrape(e);
    if (absl::IsPermissionDenied(text.status())) {
      // It answers but wants a token (cmax's own /metrics with a read token,
      // docs/prometheus.md): up, its series not read.
      c.title = absl::StrCat(e.name, " exporter answers at ", Url(e), " (it needs a token)");
      c.evidence.push_back(absl::StrCat("GET ", Url(e), ": ", text.status().message()));
      out.push_back(std::move(c));
      if (e.name == "dcgm" || e.name == "node") {
        Check s = Make(absl::StrCat("monitoring.signals.", e.name), Status::kNotMeasured,
                       absl::StrCat(e.name, "'s signals (the exporter needs a token)"));
        s.detail = absl::StrCat("GET ", Url(e), ": ", text.status().message());
        out.push_back(std::move(s));
      }
      continue;
    }
    if (!text.ok()) {
      const bool needed = e.name != "dcgm" || gpus != 0;
      c.status = !needed ? Status::kInfo : (e.name == "dcgm" ? Status::kFail : Status::kWarn);
      c.title = absl::StrCat(e.name, " exporter does not answer at ", Url(e),
                             needed ? "" : " (no GPUs on this node)");
      c.evidence.push_back(absl::StrCat("GET ", Url(e), ": ", text.status().message()));
      c.action = e.name == "dcgm" ? "Run the DCGM exporter on every GPU node (nvidia-dcgm-exporter "
                                    "on :9400, or the GPU Operator's DaemonSet)."
                 : e.name == "node"
                     ? "Run node_exporter on every node (Debian: apt install "
                       "prometheus-node-exporter; it listens on :9100)."
                     : absl::StrCat("Start the ", e.name, " exporter on port ", e.port,
                                    " or correct the plan's exporters list.");
      if (!needed) c.action.clear();  // a node without GPUs needs no DCGM exporter
      out.push_back(std::move(c));
      if (e.name == "dcgm" || e.name == "node") {
        Check s = Make(absl::StrCat("monitoring.signals.", e.name), Status::kNotMeasured,
                       absl::StrCat("not measured: ", e.name, "'s signals (the exporter does not answer)"));
        s.detail = absl::StrCat("GET ", Url(e), ": ", text.status().message());
        out.push_back(std::move(s));
      }
      continue;
    }
    const std::set<std::string> names = MetricNames(*text);
    c.title = absl::StrCat(e.name, " exporter answers at ", Url(e), ": ", names.size(),
                           " metric names");
    c.evidence.push_back(absl::StrCat("GET ", Url(e), ": 200, ", text->size(), " bytes"));
    out.push_back(std::move(c));
    if (e.name == "dcgm") {
      CheckSignals(e, DcgmSignals(), names, &out);
    } else if (e.name == "node") {
      if (hcas.empty()) {
        Check s = Make("monitoring.signals.node", Status::kInfo,
                       "no RDMA devices (/sys/class/infiniband): no InfiniBand signal to export");
        out.push_back(std::move(s));
      } else {
        CheckSignals(e, {InfinibandSignal()}, names, &out);
        out.back().evidence.push_back(
            absl::StrCat("/sys/class/infiniband: ", absl::StrJoin(hcas, ", ")));
      }
    }
  }
  CheckKernelLog(root, &out);
  CheckSlurmHealth(root, &out);
  return out;
}

}  // namespace cmax::monitoring
