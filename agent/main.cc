// cmax-agent: the node daemon. Parses flags, wires the Agent, waits for
// SIGTERM/SIGINT, stops the children and exits 0.
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/agent.h"
#include "agent/host_info.h"
#include "agent/remediation_actions.h"
#include "common/allowed_files.h"
#include "common/logging.h"
#include "common/metrics_http.h"
#include "common/net_address.h"
#include "common/owned_dir.h"
#include "common/secrets.h"
#include "common/systemd_unit.h"
#include "common/version.h"

ABSL_FLAG(std::string, coordinator, "", "coordinator address HOST:PORT (required)");
ABSL_FLAG(std::string, node_name, "", "this node's name (required)");
ABSL_FLAG(std::string, work_dir, "", "directory for task directories (required)");
ABSL_FLAG(std::string, token_file, "",
          "file holding the agent credential (the coordinator's --agent-token-file, "
          "/etc/cmax/agent-token), sent as 'authorization: Bearer <token>' "
          "(default $CMAX_TOKEN_FILE)");
ABSL_FLAG(std::string, tls_ca, "",
          "root CA (PEM) for TLS to the coordinator; none: insecure");
ABSL_FLAG(std::string, tls_cert, "",
          "client certificate (PEM) for a coordinator that requires one (mutual TLS)");
ABSL_FLAG(std::string, tls_key, "", "private key (PEM) of --tls-cert");
ABSL_FLAG(bool, allow_insecure, false,
          "send the token without TLS to a non-loopback coordinator (logged loudly; without "
          "it the agent refuses to start)");
ABSL_FLAG(std::string, allow_read, "",
          "comma-separated directories whose files a plan may name (health --thresholds, "
          "audit --advisories); default $CMAX_ALLOW_READ, else /usr/local/share/cmax,/etc/cmax");
ABSL_FLAG(std::string, allow_exporter_ports, "",
          "comma-separated loopback ports the monitoring suite may scrape besides the "
          "exporters' own (9100, 9400, 9464); default $CMAX_EXPORTER_PORTS, else none");
ABSL_FLAG(std::string, storage_roots, "",
          "comma-separated directories the storage suite may write under; default "
          "$CMAX_STORAGE_ROOTS, else <work-dir>/storage (created by the agent)");
ABSL_FLAG(std::string, root, "",
          "root directory passed as --root=DIR to suites that take one (fixture trees)");
ABSL_FLAG(
    std::string, bench_dir, "",
    "directory of cmax-bench and cmax-bench-cuda (default: the agent's own directory)");
ABSL_FLAG(std::string, advertise, "",
          "addresses other nodes reach this one at, ADDR[,ADDR...] (IPv4, IPv6 or host "
          "names), reported to the coordinator for group suites; default $CMAX_ADVERTISE, "
          "else every address of an interface that is up (loopback only when there is no "
          "other). Agents on one machine for a trial: --advertise 127.0.0.1");
ABSL_FLAG(std::string, metrics_listen, "",
          "serve Prometheus metrics on HTTP(S) HOST:PORT (a bare PORT: 127.0.0.1); off unless "
          "given. Asks for the agent's own token (--token-file) when it has one; beyond "
          "loopback it needs --metrics-tls-cert and --metrics-tls-key, or --allow-insecure");
ABSL_FLAG(std::string, read_token_file, "",
          "file holding a read-only bearer token that --metrics-listen accepts as well as "
          "--token-file's: give Prometheus this one, so a scrape config's secret cannot "
          "connect to the coordinator as this agent");
ABSL_FLAG(std::string, metrics_tls_cert, "", "server certificate (PEM) for --metrics-listen");
ABSL_FLAG(std::string, metrics_tls_key, "", "its private key (PEM)");
ABSL_FLAG(bool, watch, true,
          "keep the passive watch (cmax-watch, beside the agent) running between runs: kernel "
          "log, GPUs, ports, --watch-services, --watch-filesystems (docs/remediation.md)");
ABSL_FLAG(std::string, watch_services, "",
          "systemd units the watch reports when they stop, e.g. "
          "nvidia-fabricmanager.service,nvidia-persistenced.service");
ABSL_FLAG(std::string, watch_filesystems, "/", "mount points the watch reports when they fill up");
ABSL_FLAG(double, watch_fs_full_percent, 95, "a file system at or above this use is full");
ABSL_FLAG(double, watch_interval, 5, "seconds between the watch's polls of units, file systems and ports");
ABSL_FLAG(std::string, remediation_units, "",
          "systemd units a remediation step from the coordinator may restart, comma-separated "
          "(none by default: every restart is refused; docs/remediation-agent.md)");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warn or error");
ABSL_FLAG(
    int64_t, test_clock_offset_ms, 0,
    "TEST ONLY (a hidden test option, not for production): pretend the agent's clock "
    "is shifted by N ms in every time it reports or is given");

namespace {

// absl flags are spelled with underscores; the documented command line uses
// dashes (--node-name). Rewrites "--node-name[=v]" to "--node_name[=v]".
std::vector<std::string> NormalizeFlagNames(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i > 0 && arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      size_t end = arg.find('=');
      if (end == std::string::npos) end = arg.size();
      for (size_t j = 2; j < end; ++j) {
        if (arg[j] == '-') arg[j] = '_';
      }
    }
    out.push_back(arg);
  }
  return out;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::string OwnDirectory() {
  char buf[PATH_MAX] = {0};
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// The --watch* flags into `options`; INVALID_ARGUMENT names the bad value.
absl::Status WatchFlags(cmax::agent::AgentOptions* options) {
  options->watch = absl::GetFlag(FLAGS_watch);
  options->watch_services =
      absl::StrSplit(absl::GetFlag(FLAGS_watch_services), ',', absl::SkipWhitespace());
  for (const std::string& u : options->watch_services) {
    if (!cmax::IsSystemdUnitName(u)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--watch-services: '", u, "' is not a systemd unit name (e.g. nvidia-fabricmanager.service)"));
    }
  }
  options->watch_filesystems =
      absl::StrSplit(absl::GetFlag(FLAGS_watch_filesystems), ',', absl::SkipWhitespace());
  for (const std::string& m : options->watch_filesystems) {
    if (m.empty() || m[0] != '/' || absl::StrContains(m, "..")) {
      return absl::InvalidArgumentError(
          absl::StrCat("--watch-filesystems: '", m, "' is not an absolute path"));
    }
  }
  options->watch_fs_full_percent = absl::GetFlag(FLAGS_watch_fs_full_percent);
  if (!(options->watch_fs_full_percent > 0 && options->watch_fs_full_percent <= 100)) {
    return absl::InvalidArgumentError("--watch-fs-full-percent: not in (0, 100]");
  }
  options->remediation_units =
      absl::StrSplit(absl::GetFlag(FLAGS_remediation_units), ',', absl::SkipWhitespace());
  for (const std::string& u : options->remediation_units) {
    if (absl::Status s = cmax::agent::ValidateUnitName(u); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--remediation-units: ", s.message()));
    }
  }
  options->watch_interval_s = absl::GetFlag(FLAGS_watch_interval);
  if (!(options->watch_interval_s >= 0.05 && options->watch_interval_s <= 3600)) {
    return absl::InvalidArgumentError("--watch-interval: not in [0.05, 3600] seconds");
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "the cmax node daemon\n"
      "usage: cmax-agent --coordinator HOST:PORT --node-name NAME --work-dir DIR\n"
      "       [--token-file F] [--tls-ca F [--tls-cert F --tls-key F]] [--allow-insecure]\n"
      "       [--allow-read DIR,...] [--storage-roots DIR,...] [--allow-exporter-ports PORT,...]\n"
      "       [--root DIR]\n"
      "       [--bench-dir DIR] [--advertise ADDR[,ADDR...]]\n"
      "       [--watch=false | --watch-services U,... --watch-filesystems DIR,... --watch-fs-full-percent P\n"
      "        --watch-interval S] [--remediation-units U,...]\n"
      "       [--metrics-listen HOST:PORT [--metrics-tls-cert F --metrics-tls-key F] [--read-token-file F]]\n"
      "       [--log-level info] [--test-clock-offset-ms N (test only)]\n"
      "Flags may be written with dashes or underscores.");
  // --help lists this file's flags (absl matches files named after the
  // program by default, and this one is main.cc).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "agent/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  usage.version_string = [] { return absl::StrCat("cmax-agent ", cmax::kCmaxVersion, "\n"); };
  absl::SetFlagsUsageConfig(usage);
  std::vector<std::string> normalized = NormalizeFlagNames(argc, argv);
  std::vector<char*> args;
  for (std::string& a : normalized) args.push_back(a.data());
  args.push_back(nullptr);
  absl::ParseCommandLine(static_cast<int>(normalized.size()), args.data());

  cmax::SetLogLevel(absl::GetFlag(FLAGS_log_level));
  auto log = cmax::GetLogger("agent");
  cmax::agent::AgentOptions options;
  options.coordinator = absl::GetFlag(FLAGS_coordinator);
  options.node_name = absl::GetFlag(FLAGS_node_name);
  options.work_dir = absl::GetFlag(FLAGS_work_dir);
  if (options.coordinator.empty() || options.node_name.empty() ||
      options.work_dir.empty()) {
    std::fprintf(stderr,
                 "cmax-agent: --coordinator, --node-name and --work-dir are required\n");
    return 2;
  }
  // Spools and task files are trusted as written: the work dir must be the
  // agent's own (common/owned_dir.h).
  if (absl::Status s = cmax::EnsureOwnedDir(options.work_dir, "work dir"); !s.ok()) {
    std::fprintf(stderr, "cmax-agent: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  options.root = absl::GetFlag(FLAGS_root);
  options.bench_dir = absl::GetFlag(FLAGS_bench_dir);
  if (options.bench_dir.empty()) options.bench_dir = OwnDirectory();
  options.clock_offset_ns = absl::GetFlag(FLAGS_test_clock_offset_ms) * 1000000;
  if (absl::Status s = WatchFlags(&options); !s.ok()) {
    std::fprintf(stderr, "cmax-agent: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  {
    std::string advertise = absl::GetFlag(FLAGS_advertise);
    if (advertise.empty()) {
      if (const char* e = std::getenv("CMAX_ADVERTISE"); e != nullptr) advertise = e;
    }
    if (!advertise.empty()) {
      auto list = cmax::agent::ParseAdvertiseList(advertise);
      if (!list.ok()) {
        std::fprintf(stderr, "cmax-agent: %s\n", std::string(list.status().message()).c_str());
        return 2;
      }
      options.advertise = *std::move(list);
      log->info("advertising {} to the coordinator", absl::StrJoin(options.advertise, ", "));
    }
  }
  std::string token_file = absl::GetFlag(FLAGS_token_file);
  if (const char* e = std::getenv("CMAX_TOKEN_FILE"); token_file.empty() && e && *e) {
    token_file = e;
  }
  if (const std::string& f = token_file; !f.empty()) {
    std::string token;
    if (!ReadFile(f, &token)) {
      std::fprintf(stderr, "cmax-agent: cannot read --token-file %s\n", f.c_str());
      return 2;
    }
    options.token = std::string(absl::StripAsciiWhitespace(token));
  }
  // The read-only token of --metrics-listen, checked with the other flags.
  std::string read_token;
  if (const std::string f = absl::GetFlag(FLAGS_read_token_file); !f.empty()) {
    std::string warning;
    auto t = cmax::ReadTokenFile(f, &warning);
    std::string why;
    if (!t.ok()) {
      why = std::string(t.status().message());
    } else if (options.token.empty()) {
      why = "needs --token-file (without a token nothing is asked)";
    } else if (*t == options.token) {
      why = "holds the same token as --token-file; use another secret";
    }
    if (!why.empty()) {
      std::fprintf(stderr, "cmax-agent: --read-token-file: %s\n", why.c_str());
      return 2;
    }
    if (!warning.empty()) log->warn("{}", warning);
    read_token = *t;
  }
  if (std::string f = absl::GetFlag(FLAGS_tls_ca); !f.empty()) {
    if (!ReadFile(f, &options.tls_ca_pem) || options.tls_ca_pem.empty()) {
      std::fprintf(stderr, "cmax-agent: cannot read --tls-ca %s\n", f.c_str());
      return 2;
    }
  }
  {
    const std::string cert = absl::GetFlag(FLAGS_tls_cert);
    const std::string key = absl::GetFlag(FLAGS_tls_key);
    if (cert.empty() != key.empty()) {
      std::fprintf(stderr, "cmax-agent: --tls-cert and --tls-key go together\n");
      return 2;
    }
    if (!cert.empty() && options.tls_ca_pem.empty()) {
      std::fprintf(stderr, "cmax-agent: --tls-cert needs --tls-ca\n");
      return 2;
    }
    if (!cert.empty() && (!ReadFile(cert, &options.tls_cert_pem) ||
                          options.tls_cert_pem.empty())) {
      std::fprintf(stderr, "cmax-agent: cannot read --tls-cert %s\n", cert.c_str());
      return 2;
    }
    if (!key.empty() && (!ReadFile(key, &options.tls_key_pem) || options.tls_key_pem.empty())) {
      std::fprintf(stderr, "cmax-agent: cannot read --tls-key %s\n", key.c_str());
      return 2;
    }
  }
  if (absl::Status s = cmax::CheckTokenTransport("cmax-agent", options.coordinator,
                                                 !options.token.empty(),
                                                 !options.tls_ca_pem.empty(),
                                                 absl::GetFlag(FLAGS_allow_insecure));
      !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (!options.token.empty() && options.tls_ca_pem.empty() &&
      !cmax::IsLoopbackTarget(options.coordinator)) {
    log->warn("INSECURE: --allow-insecure: the token goes to {} in clear text; anyone on the "
              "path can read it and command every agent",
              options.coordinator);
  }
  {
    auto dirs = [](std::string flag, const char* env, std::vector<std::string> fallback) {
      if (flag.empty()) {
        if (const char* e = std::getenv(env); e && *e) flag = e;
      }
      if (flag.empty()) return fallback;
      return std::vector<std::string>(absl::StrSplit(flag, ',', absl::SkipWhitespace()));
    };
    options.allow_read = dirs(absl::GetFlag(FLAGS_allow_read), "CMAX_ALLOW_READ",
                              {"/usr/local/share/cmax", "/etc/cmax"});
    options.storage_roots = dirs(absl::GetFlag(FLAGS_storage_roots), "CMAX_STORAGE_ROOTS",
                                 {options.work_dir + "/storage"});
    // The monitoring suite's extra ports: checked here, then left in the
    // environment, where the suite's declaration (plan re-validation) and
    // the suites this agent spawns (ChildEnv) read them.
    std::string ports = absl::GetFlag(FLAGS_allow_exporter_ports);
    if (ports.empty()) {
      if (const char* e = std::getenv(cmax::kExporterPortsEnv); e != nullptr) ports = e;
    }
    for (absl::string_view p : absl::StrSplit(ports, ',', absl::SkipWhitespace())) {
      int port = 0;
      if (!absl::SimpleAtoi(p, &port) || port < 1 || port > 65535) {
        std::fprintf(stderr, "cmax-agent: --allow-exporter-ports: '%s' is not a port (1-65535)\n",
                     std::string(p).c_str());
        return 2;
      }
    }
    setenv(cmax::kExporterPortsEnv, ports.c_str(), 1);
    for (const std::string& d : options.allow_read) {
      if (d.empty() || d[0] != '/') {
        std::fprintf(stderr, "cmax-agent: --allow-read %s is not an absolute path\n", d.c_str());
        return 2;
      }
    }
    for (const std::string& d : options.storage_roots) {
      if (d.empty() || d[0] != '/') {
        std::fprintf(stderr, "cmax-agent: --storage-roots %s is not an absolute path\n",
                     d.c_str());
        return 2;
      }
    }
  }
  if (options.clock_offset_ns != 0) {
    log->warn("test clock offset {} ms in effect", options.clock_offset_ns / 1000000);
  }

  // Block the stop signals in every thread (threads inherit the mask), and
  // take them with sigwait below. Children get an empty mask at spawn.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  cmax::agent::Agent agent(options);
  if (absl::Status s = agent.Start(); !s.ok()) {
    log->error("cannot start: {}", std::string(s.message()));
    return 2;
  }
  std::unique_ptr<cmax::MetricsHttpServer> metrics;
  if (const std::string m = absl::GetFlag(FLAGS_metrics_listen); !m.empty()) {
    cmax::MetricsHttpOptions mo;
    mo.listen = m;
    mo.token = options.token;
    mo.read_token = read_token;
    mo.tls_cert_file = absl::GetFlag(FLAGS_metrics_tls_cert);
    mo.tls_key_file = absl::GetFlag(FLAGS_metrics_tls_key);
    mo.allow_insecure = absl::GetFlag(FLAGS_allow_insecure);
    auto started = cmax::MetricsHttpServer::Start(
        mo, [&agent]() -> absl::StatusOr<std::string> { return agent.MetricsText(); });
    if (!started.ok()) {
      std::fprintf(stderr, "cmax-agent: %s\n", std::string(started.status().message()).c_str());
      agent.Stop();
      return 2;
    }
    metrics = std::move(*started);
    log->info("metrics on {}://{}:{}/metrics{}", metrics->tls() ? "https" : "http",
              metrics->host(), metrics->port(), options.token.empty() ? " (no token)" : "");
    std::printf("metrics on %s:%d\n", metrics->host().c_str(), metrics->port());
    std::fflush(stdout);
  }
  log->info("agent {} running; coordinator {}, work dir {}, bench dir {}",
            options.node_name, options.coordinator, options.work_dir, options.bench_dir);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  log->info("signal {}: stopping", sig);
  if (metrics) metrics->Stop();
  agent.Stop();
  log->info("stopped");
  return 0;
}
