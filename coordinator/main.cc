// cmax-coordinator: schedules evaluation suites onto agents, stores their
// results and writes scorecards. See README.md, docs/operating.md and deploy/systemd/.
#include <signal.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/flag_names.h"
#include "common/logging.h"
#include "common/metrics_http.h"
#include "common/net_address.h"
#include "common/owned_dir.h"
#include "common/secrets.h"
#include "common/subprocess.h"
#include "common/version.h"
#include "coordinator/core.h"
#include "coordinator/data_dir_lock.h"
#include "coordinator/remediation/webhook_http.h"
#include "coordinator/schedule_terms.h"
#include "coordinator/service.h"
#include "coordinator/web/web_server.h"
#include "reports/compare.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/server_credentials.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:8470",
          "HOST:PORT to listen on. Loopback by default; any other address needs --tls-cert, "
          "--tls-key and --token-file, or --allow-insecure");
ABSL_FLAG(std::string, data_dir, "", "directory for cmax.db and reports/ (required)");
ABSL_FLAG(std::string, token_file, "",
          "file holding the operators' admin token: every cmaxctl call, schedules included "
          "(required unless --no-token; deploy/install.sh writes /etc/cmax/token). Agents "
          "present it only where no --agent-token-file is given");
ABSL_FLAG(std::string, agent_token_file, "",
          "file holding the agents' credential, accepted on the agent stream alone: a node's "
          "root, who holds it, cannot list, submit, cancel or schedule (deploy/install.sh "
          "writes /etc/cmax/agent-token; docs/security.md)");
ABSL_FLAG(std::string, run_token_file, "",
          "file holding an operator token of the run role: read, submit and cancel runs, but "
          "not add or change schedules");
ABSL_FLAG(std::string, read_token_file, "",
          "file holding a read-only bearer token (the read role): the gRPC read calls "
          "(agents, runs, watch, report, export, history), --metrics-listen and --http-listen "
          "accept it. Give it to Prometheus and dashboards, so their secret cannot submit "
          "runs or connect as an agent");
ABSL_FLAG(bool, no_token, false,
          "run without a token: every local user who can reach the port may submit plans "
          "whose suites run as root on every agent (development only; logged loudly)");
ABSL_FLAG(std::string, tls_cert, "", "server certificate (PEM)");
ABSL_FLAG(std::string, tls_key, "", "server private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "",
          "CA (PEM) whose client certificates agents and cmaxctl must present (mutual TLS)");
ABSL_FLAG(int, heartbeat_timeout, 15,
          "seconds without word from an agent before it is lost and its tasks with it (above "
          "2,500 agents at least 3 heartbeat periods, which grow with the fleet: docs/scale.md; "
          "checked once a second)");
ABSL_FLAG(int, history_threads, 2,
          "threads that answer history and fleet queries (cmaxctl history, /fleet, "
          "/nodes/NAME), each with a read-only store connection of its own, never the thread "
          "that hears agents (docs/history.md)");
ABSL_FLAG(int, history_queue, 8,
          "distinct history queries that may wait while every history thread is busy; beyond "
          "it callers are told "
          "\"busy, retry\" (gRPC RESOURCE_EXHAUSTED, HTTP 503). Equal queries in flight are "
          "shared and count once");
ABSL_FLAG(int, min_free_mb, 64,
          "refuse new runs while the data directory has less free space than this (MiB)");
ABSL_FLAG(bool, allow_insecure, false,
          "listen on a non-loopback address without TLS or token (not recommended)");
ABSL_FLAG(std::string, metrics_listen, "",
          "serve Prometheus metrics on HTTP(S) HOST:PORT (a bare PORT: 127.0.0.1); off unless "
          "given. The token is asked as with gRPC; beyond loopback it needs --tls-cert and "
          "--tls-key (then HTTPS), or --allow-insecure");
ABSL_FLAG(std::string, http_listen, "",
          "serve the web view (agents, runs, live run pages, scorecards) on HTTP(S) HOST:PORT "
          "(a bare PORT: 127.0.0.1); off unless given. Asks the same token as gRPC (a sign-in "
          "form sets a session cookie); beyond loopback it needs --tls-cert and --tls-key (then "
          "HTTPS) and a token: --allow-insecure does not apply");
ABSL_FLAG(std::string, remediation_policy, "",
          "the fault loop's policy file (YAML; docs/remediation.md): dry-run or enforce, the "
          "fence (slurm, kubernetes, none), the breaker, and the steps per finding class. "
          "Without it: dry-run, no fence, every incident planned as escalate");
ABSL_FLAG(std::string, verify_plan, "",
          "the plan a repaired node must pass (verdict pass) before the fault loop returns it; "
          "default: the built-in health and 60 s burn-in (coordinator/remediation/data/)");
ABSL_FLAG(std::string, kubectl, "kubectl",
          "the kubectl a policy's kubernetes fence runs (path or name on PATH)");
ABSL_FLAG(bool, slurm_drain, false,
          "when a run ends, drain in Slurm the nodes whose verdict is fail (scontrol update "
          "NodeName=N State=DRAIN Reason='cmax RUN: first reason'); nodes already drained are "
          "left alone. Off by default");
ABSL_FLAG(std::string, scontrol, "scontrol",
          "the scontrol that --slurm-drain and a remediation policy's slurm fence run (path or name on PATH)");
ABSL_FLAG(std::string, sinfo, "sinfo",
          "the sinfo that schedules with --only-idle ask which nodes are idle (path or name on "
          "PATH, looked up at each slot: without it such a slot is skipped, 'not measured')");
ABSL_FLAG(std::string, keep_runs_for, "",
          "drop the records of runs that ended longer ago than this (30d, 365d; s, m, h or d), "
          "keeping every run, its tasks and its scorecard; empty: keep everything");
ABSL_FLAG(std::string, min_schedule_period, "1h",
          "the shortest --every a schedule may have (cmaxctl schedule add); shorter ones are "
          "refused, and stored ones are paused at start (s, m, h or d; tests use 1s)");
ABSL_FLAG(int32_t, max_schedules, 64,
          "the most schedules the coordinator keeps; schedule add is refused beyond it");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warn or error");
ABSL_FLAG(std::string, test_store_fault_file, "",
          "TEST ONLY (the chaos run): while this file exists every task lookup and record "
          "insert in the store fails as a busy database would");

namespace {

int Fail(const std::string& message) {
  // Under systemd, an error in the journal's format (priority 3), as the
  // daemon's other lines are; on a terminal, the program's name first.
  if (cmax::IsJournalStream(STDERR_FILENO)) {
    cmax::GetLogger("coordinator")->error("cannot start: {}", message);
  } else {
    std::fprintf(stderr, "cmax-coordinator: %s\n", message.c_str());
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "cmax-coordinator --data-dir DIR [--listen HOST:PORT] (--token-file F | --no-token) "
      "[--agent-token-file F] [--run-token-file F] "
      "[--tls-cert F --tls-key F [--tls-client-ca F]] [--heartbeat-timeout SECONDS] "
      "[--metrics-listen HOST:PORT] [--http-listen HOST:PORT] [--read-token-file F]\n"
      "Flags may be written with dashes or underscores (--data-dir, --data_dir).");
  // --help lists this file's flags (absl matches files named after the
  // program by default, and this one is main.cc).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "coordinator/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  usage.version_string = [] { return absl::StrCat("cmax-coordinator ", cmax::kCmaxVersion, "\n"); };
  absl::SetFlagsUsageConfig(usage);
  cmax::DashedFlags flags(argc, argv);
  absl::ParseCommandLine(flags.argc(), flags.argv());
  cmax::SetLogLevel(absl::GetFlag(FLAGS_log_level));
  auto log = cmax::GetLogger("coordinator");

  const std::string listen = absl::GetFlag(FLAGS_listen);
  const std::string data_dir = absl::GetFlag(FLAGS_data_dir);
  if (data_dir.empty()) return Fail("--data-dir is required");
  if (absl::GetFlag(FLAGS_heartbeat_timeout) < 1) return Fail("--heartbeat-timeout must be >= 1");

  // Each role's secret (credentials.h): read with the same checks of the
  // file's mode and owner, and each a different secret.
  cmax::coordinator::Credentials credentials;
  const std::pair<std::string, std::string*> token_files[] = {
      {absl::GetFlag(FLAGS_token_file), &credentials.admin},
      {absl::GetFlag(FLAGS_agent_token_file), &credentials.agent},
      {absl::GetFlag(FLAGS_run_token_file), &credentials.run},
      {absl::GetFlag(FLAGS_read_token_file), &credentials.read}};
  for (const auto& [file, secret] : token_files) {
    if (file.empty()) continue;
    std::string warning;
    auto t = cmax::ReadTokenFile(file, &warning);
    if (!t.ok()) return Fail(std::string(t.status().message()));
    if (!warning.empty()) log->warn("{}", warning);
    *secret = *t;
  }
  const std::string& token = credentials.admin;
  const std::string& read_token = credentials.read;
  if (token.empty() && !absl::GetFlag(FLAGS_no_token)) {
    return Fail("a token is required: give --token-file F (deploy/install.sh writes "
                "/etc/cmax/token; the quickstart makes one in its data dir), or --no-token to "
                "let anyone who reaches the port command every agent");
  }
  if (!token.empty() && absl::GetFlag(FLAGS_no_token)) {
    return Fail("--token-file and --no-token contradict each other");
  }
  if (absl::Status s = cmax::coordinator::ValidateCredentials(credentials); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (!token.empty() && credentials.agent.empty()) {
    log->warn("no --agent-token-file: agents present the operators' token, so a node's root "
              "can list, submit and cancel runs as an operator; give the agents a credential "
              "of their own (docs/security.md, \"Upgrading to separate agent credentials\")");
  }
  if (token.empty()) {
    log->warn("INSECURE: --no-token: every caller that reaches {} may submit and cancel runs "
              "and connect as an agent; suites run as root on every agent",
              listen);
  }
  const bool tls = !absl::GetFlag(FLAGS_tls_cert).empty() || !absl::GetFlag(FLAGS_tls_key).empty();
  if (tls && (absl::GetFlag(FLAGS_tls_cert).empty() || absl::GetFlag(FLAGS_tls_key).empty())) {
    return Fail("--tls-cert and --tls-key go together");
  }
  if (!absl::GetFlag(FLAGS_tls_client_ca).empty() && !tls) {
    return Fail("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (!cmax::IsLoopbackTarget(listen) && (!tls || token.empty())) {
    if (!absl::GetFlag(FLAGS_allow_insecure)) {
      return Fail(absl::StrCat("refusing to listen on ", listen,
                               " without TLS and a token: give --tls-cert, --tls-key and "
                               "--token-file, or --allow-insecure"));
    }
    log->warn("INSECURE: listening on {} without {}{}; anyone who reaches this port can run "
              "suites on every agent",
              listen, tls ? "" : "TLS", token.empty() ? (tls ? "a token" : " or a token") : "");
  }

  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (tls) {
    auto cert = cmax::ReadSmallFile(absl::GetFlag(FLAGS_tls_cert));
    auto key = cmax::ReadSmallFile(absl::GetFlag(FLAGS_tls_key));
    if (!cert.ok()) return Fail(std::string(cert.status().message()));
    if (!key.ok()) return Fail(std::string(key.status().message()));
    grpc::SslServerCredentialsOptions opts;
    opts.pem_key_cert_pairs.push_back({*key, *cert});
    if (!absl::GetFlag(FLAGS_tls_client_ca).empty()) {
      auto ca = cmax::ReadSmallFile(absl::GetFlag(FLAGS_tls_client_ca));
      if (!ca.ok()) return Fail(std::string(ca.status().message()));
      opts.pem_root_certs = *ca;
      opts.client_certificate_request =
          GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    creds = grpc::SslServerCredentials(opts);
  }

  // Signals are taken by sigwait below; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  cmax::coordinator::CoreOptions options;
  options.data_dir = data_dir;
  options.heartbeat_timeout_ms = int64_t{absl::GetFlag(FLAGS_heartbeat_timeout)} * 1000;
  options.min_free_bytes = int64_t{absl::GetFlag(FLAGS_min_free_mb)} << 20;
  options.history_threads = absl::GetFlag(FLAGS_history_threads);
  options.history_queue = absl::GetFlag(FLAGS_history_queue);
  if (options.history_threads < 1 || options.history_threads > 64) {
    return Fail("--history-threads must be 1 to 64");
  }
  if (options.history_queue < 0) return Fail("--history-queue must be >= 0");
  if (absl::GetFlag(FLAGS_slurm_drain)) {
    options.slurm_scontrol = cmax::FindExecutable(absl::GetFlag(FLAGS_scontrol));
    if (options.slurm_scontrol.empty()) {
      return Fail(absl::StrCat("--slurm-drain: no ", absl::GetFlag(FLAGS_scontrol),
                               " on PATH (install slurm-client, or give --scontrol PATH)"));
    }
    log->info("--slurm-drain: failed nodes are drained through {}", options.slurm_scontrol);
  }
  options.slurm_sinfo = absl::GetFlag(FLAGS_sinfo);
  options.remediation_policy = absl::GetFlag(FLAGS_remediation_policy);
  options.scontrol = absl::GetFlag(FLAGS_scontrol);
  options.kubectl = absl::GetFlag(FLAGS_kubectl);
  options.verify_plan = absl::GetFlag(FLAGS_verify_plan);
  options.webhook_poster = cmax::remediation::HttpWebhookPoster();
  if (std::string keep = absl::GetFlag(FLAGS_keep_runs_for); !keep.empty()) {
    auto ns = cmax::coordinator::ParseDuration(keep, "--keep-runs-for", "3600s, 90d, 365d", 3650);
    if (!ns.ok()) return Fail(std::string(ns.status().message()));
    options.keep_runs_for_ns = *ns;
  }
  {
    auto ns = cmax::coordinator::ParseDuration(absl::GetFlag(FLAGS_min_schedule_period),
                                               "--min-schedule-period", "1s, 15m, 1h, 1d", 365);
    if (!ns.ok()) return Fail(std::string(ns.status().message()));
    options.min_schedule_every_ns = *ns;
  }
  if (absl::GetFlag(FLAGS_max_schedules) < 0) return Fail("--max-schedules must be 0 or more");
  options.max_schedules = absl::GetFlag(FLAGS_max_schedules);
  if (std::string f = absl::GetFlag(FLAGS_test_store_fault_file); !f.empty()) {
    log->warn("TEST ONLY: store faults injected while {} exists", f);
    options.store_fault_for_testing = [f](const std::string& op) {
      struct stat st;
      if (stat(f.c_str(), &st) != 0) return absl::OkStatus();
      return absl::UnavailableError(absl::StrCat("injected store fault in ", op, " (", f,
                                                 " exists; database busy)"));
    };
  }
  // One coordinator per data directory (held until the process ends).
  if (absl::Status s = cmax::EnsureOwnedDir(data_dir, "data dir"); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  auto data_lock = cmax::coordinator::DataDirLock::Acquire(data_dir);
  if (!data_lock.ok()) return Fail(std::string(data_lock.status().message()));
  auto core = cmax::coordinator::CoordinatorCore::Create(options);
  if (!core.ok()) return Fail(core.status().ToString());
  (*core)->Start();

  cmax::coordinator::CoordinatorService service(core->get(), credentials);
  {
    // The nodes the store knows: a client certificate naming one of them is
    // that node's and never acts as an operator, also before it reconnects.
    auto known = (*core)->SnapshotAgents(absl::Seconds(30));
    if (!known.ok()) {
      (*core)->Stop();
      return Fail(absl::StrCat("listing the stored agents: ", known.status().message()));
    }
    std::vector<std::string> nodes;
    for (const auto& a : known->agents()) nodes.push_back(a.node_name());
    service.AddKnownNodes(nodes);
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, creds, &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(16 << 20);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  // No SO_REUSEPORT (gRPC sets it by default): with it a second coordinator
  // binds the same port and the kernel splits agents and cmaxctl calls
  // between two stores.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    (*core)->Stop();
    const std::string host = cmax::HostOfTarget(listen);
    int wanted = 0;
    std::string why;
    if (const size_t colon = listen.rfind(':');
        colon != std::string::npos && absl::SimpleAtoi(listen.substr(colon + 1), &wanted) &&
        wanted > 0) {
      why = cmax::DescribeBindFailure(host, wanted);
    }
    return Fail(absl::StrCat("cannot listen on ", listen, why.empty() ? "" : ": ", why));
  }
  std::string shown = listen;
  if (size_t colon = listen.rfind(':'); colon != std::string::npos) {
    shown = absl::StrCat(listen.substr(0, colon), ":", port);
  }
  log->info("cmax-coordinator {} listening on {} (data {}, tls {}, token {}, heartbeat {} s)",
            cmax::kCmaxVersion, shown, data_dir, tls ? "on" : "off",
            token.empty() ? "off" : "on", absl::GetFlag(FLAGS_heartbeat_timeout));
  // Scripts and tests read the ports from the "listening on", "web on" and
  // "metrics on" lines on stdout; under systemd stdout is the journal, which
  // has the same in the log lines already.
  const bool to_journal = cmax::IsJournalStream(STDOUT_FILENO);
  std::unique_ptr<cmax::MetricsHttpServer> metrics;
  if (const std::string m = absl::GetFlag(FLAGS_metrics_listen); !m.empty()) {
    cmax::MetricsHttpOptions mo;
    mo.listen = m;
    mo.token = token;
    mo.read_token = read_token;
    mo.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
    mo.tls_key_file = absl::GetFlag(FLAGS_tls_key);
    mo.allow_insecure = absl::GetFlag(FLAGS_allow_insecure);
    cmax::coordinator::CoordinatorCore* c = core->get();
    auto started = cmax::MetricsHttpServer::Start(
        mo, [c] { return c->RenderMetrics(absl::Seconds(5)); });
    if (!started.ok()) {
      server->Shutdown();
      (*core)->Stop();
      return Fail(std::string(started.status().message()));
    }
    metrics = std::move(*started);
    log->info("metrics on {}://{}:{}/metrics", metrics->tls() ? "https" : "http",
              metrics->host(), metrics->port());
    if (!to_journal) std::printf("metrics on %s:%d\n", metrics->host().c_str(), metrics->port());
  }
  std::unique_ptr<cmax::coordinator::web::WebServer> web;
  if (const std::string h = absl::GetFlag(FLAGS_http_listen); !h.empty()) {
    cmax::coordinator::web::WebOptions wo;
    wo.listen = h;
    wo.token = token;
    wo.read_token = read_token;
    wo.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
    wo.tls_key_file = absl::GetFlag(FLAGS_tls_key);
    wo.report_root = absl::StrCat(data_dir, "/reports");
    // /compare?a=&b=: the comparison `cmaxctl compare` makes, at its default
    // threshold (5%).
    wo.compare_page = [](const cmax::v1::Scorecard& a,
                         const cmax::v1::Scorecard& b) -> absl::StatusOr<std::string> {
      return cmax::reports::RenderCompareHtml(cmax::reports::CompareScorecards(a, b));
    };
    auto started = cmax::coordinator::web::WebServer::Start(
        std::move(wo), cmax::coordinator::web::MakeCoreWebSource(core->get(), absl::Seconds(5)));
    if (!started.ok()) {
      if (metrics) metrics->Stop();
      server->Shutdown();
      (*core)->Stop();
      return Fail(std::string(started.status().message()));
    }
    web = std::move(*started);
    log->info("web view on {}://{}:{}/", web->tls() ? "https" : "http", web->host(), web->port());
    if (!to_journal) std::printf("web on %s:%d\n", web->host().c_str(), web->port());
  }
  if (!to_journal) std::printf("listening on %s\n", shown.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  log->info("signal {}: shutting down", sig);
  (*core)->BeginShutdown();
  if (web) web->Stop();
  if (metrics) metrics->Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(3));
  (*core)->Stop();
  return 0;
}
