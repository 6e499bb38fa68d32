#include "agent/agent.h"

#include <sys/stat.h>

#include <filesystem>

#include "absl/strings/str_format.h"
#include "agent/host_info.h"
#include "common/logging.h"
#include "common/metrics_text.h"
#include "common/secrets.h"
#include "common/status_macros.h"
#include "common/version.h"

namespace cmax::agent {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("agent"); }

}  // namespace

std::string RandomBootId() { return RandomId(16); }

Agent::Agent(AgentOptions options)
    : options_(std::move(options)), boot_id_(RandomBootId()) {
  ConnectionOptions conn;
  conn.target = options_.coordinator;
  conn.token = options_.token;
  conn.tls_ca_pem = options_.tls_ca_pem;
  conn.tls_cert_pem = options_.tls_cert_pem;
  conn.tls_key_pem = options_.tls_key_pem;
  conn.clock_offset_ns = options_.clock_offset_ns;
  connection_ = std::make_unique<Connection>(conn, this);
  ExecutorOptions exec;
  exec.work_dir = options_.work_dir;
  exec.bench_dir = options_.bench_dir;
  exec.root = options_.root;
  exec.node_name = options_.node_name;
  exec.clock_offset_ns = options_.clock_offset_ns;
  exec.allow_read = options_.allow_read;
  exec.storage_roots = options_.storage_roots;
  exec.advertise = options_.advertise;
  // Kills are noted on the real system only, never inside a fixture root.
  if (options_.root.empty() || options_.root == "/") exec.kills_file = "/run/cmax/kills";
  RelayOptions relay;
  relay.work_dir = options_.work_dir;
  relay.clock_offset_ns = options_.clock_offset_ns;
  relay_ = std::make_unique<RendezvousRelay>(relay, connection_.get());
  executor_ = std::make_unique<Executor>(exec, connection_.get(), relay_.get());
  if (options_.watch) {
    WatchOptions w;
    w.bench_dir = options_.bench_dir;
    w.work_dir = options_.work_dir;
    w.boot_id = boot_id_;
    w.root = options_.root;
    w.services = options_.watch_services;
    w.filesystems = options_.watch_filesystems;
    w.fs_full_percent = options_.watch_fs_full_percent;
    w.interval_s = options_.watch_interval_s;
    watch_ = std::make_unique<WatchRunner>(w, connection_.get());
  }
}

Agent::~Agent() { Stop(); }

absl::Status Agent::Start() {
  std::error_code ec;
  std::filesystem::create_directories(options_.work_dir + "/tasks", ec);
  if (ec) {
    // Not fatal: each task then fails with the reason and the agent serves on.
    Log()->error("work dir {}: {}", options_.work_dir, ec.message());
  }
  for (const std::string& root : options_.storage_roots) {
    // A root the agent creates gets mode 0700 (what a plan writes there is
    // root's alone); an existing one is left as the operator made it.
    const bool created = std::filesystem::create_directories(root, ec);
    if (ec) {
      Log()->warn("storage root {}: {} (storage tasks there will not run)", root, ec.message());
      ec.clear();
    } else if (created) {
      chmod(root.c_str(), 0700);
    }
  }
  CMAX_RETURN_IF_ERROR(executor_->LoadStoredTasks());
  inventory_ = GatherInventory(options_.bench_dir, options_.root,
                               std::chrono::milliseconds(options_.inventory_timeout_ms));
  if (auto it = inventory_.facts().find("inventory_error");
      it != inventory_.facts().end()) {
    Log()->warn("inventory from /proc only: {}", it->second);
  }
  Log()->info("node {}: {} GPUs ({}), {} CPU cores, {:.1f} GiB; agent {} boot {}",
              options_.node_name, inventory_.gpu_count(), inventory_.gpu_model(),
              inventory_.cpu_cores(), inventory_.memory_gib(), kCmaxVersion, boot_id_);
  CMAX_RETURN_IF_ERROR(relay_->Start());
  RemediationRunner::Options r;
  r.allowed_units = options_.remediation_units;
  r.gpu_count = inventory_.gpu_count();
  r.work_dir = options_.work_dir;
  r.clock = AgentClock(options_.clock_offset_ns);
  Executor* executor = executor_.get();
  r.busy = [executor] { return executor->Stats().running > 0; };
  remediation_ = std::make_unique<RemediationRunner>(r, connection_.get());
  executor_->Start();
  if (watch_) watch_->Start();
  connection_->Start();
  started_ = true;
  return absl::OkStatus();
}

void Agent::Stop() {
  if (connection_) connection_->Stop();
  remediation_.reset();  // waits for a command under way
  if (executor_) executor_->Stop();
  if (watch_) watch_->Stop();
  if (relay_) relay_->Stop();
}

v1::Hello Agent::MakeHello() {
  v1::Hello hello;
  hello.set_node_name(options_.node_name);
  hello.set_agent_version(kCmaxVersion);
  *hello.mutable_inventory() = inventory_;
  for (const std::string& address :
       options_.advertise.empty() ? ReachableAddresses() : options_.advertise) {
    hello.add_addresses(address);
  }
  for (v1::HeldTask& held : executor_->HeldTasks()) *hello.add_held() = std::move(held);
  hello.set_boot_id(boot_id_);
  return hello;
}

void Agent::OnConnected(uint64_t generation) {
  executor_->OnConnected(generation);
  relay_->OnConnected(generation);
  if (watch_) watch_->OnConnected(generation);
  generation_ = generation;
  if (remediation_) remediation_->OnConnected(generation);
}

void Agent::OnMessage(const v1::CoordinatorMessage& message) {
  switch (message.msg_case()) {
    case v1::CoordinatorMessage::kAssign:
      executor_->Assign(message.assign());
      break;
    case v1::CoordinatorMessage::kCancel:
      executor_->Cancel(message.cancel());
      break;
    case v1::CoordinatorMessage::kAck:
      executor_->HandleAck(message.ack());
      break;
    case v1::CoordinatorMessage::kStatusAck:
      executor_->HandleStatusAck(message.status_ack());
      break;
    case v1::CoordinatorMessage::kWelcome:
    case v1::CoordinatorMessage::kPing:
      break;  // handled by the connection
    case v1::CoordinatorMessage::kRendezvous:
      relay_->OnReply(message.rendezvous());
      break;
    case v1::CoordinatorMessage::kRemediate:
      if (remediation_) remediation_->Post(generation_, message.remediate());
      break;
    case v1::CoordinatorMessage::kWatchAck:
      if (watch_) watch_->HandleAck(message.watch_ack().epoch(), message.watch_ack().next_seq());
      break;
    default:
      Log()->warn("unknown message from the coordinator (field {})",
                  static_cast<int>(message.msg_case()));
  }
}

std::string Agent::MetricsText() const {
  cmax::MetricsText m;
  const ExecutorStats st = executor_->Stats();
  m.Family("cmax_agent_build_info", "gauge", "cmax version of this agent, and its node name");
  m.Sample(1, {{"version", kCmaxVersion}, {"node", options_.node_name}});
  m.Family("cmax_agent_connected", "gauge", "1 while the stream to the coordinator is up");
  m.Sample(connection_->connected() ? 1 : 0);
  m.Family("cmax_agent_children_running", "gauge", "suite processes running");
  m.Sample(st.running);
  m.Family("cmax_agent_children_held", "gauge",
           "suite processes held: running, or ended with records or status not yet acknowledged");
  m.Sample(st.held);
  m.Family("cmax_agent_records_unacked", "gauge",
           "records sent to the coordinator and not yet acknowledged");
  m.Sample(static_cast<double>(st.unacked_records));
  m.Family("cmax_agent_spool_bytes", "gauge", "bytes of the held children's record spools");
  m.Sample(static_cast<double>(st.spool_bytes));
  m.Family("cmax_agent_last_task_end_timestamp_seconds", "gauge",
           "when a task of this suite last ended on this agent (Unix time)");
  for (const auto& [suite, ns] : st.last_end_unix_ns) {
    m.Sample(static_cast<double>(ns) / 1e9, {{"suite", suite}});
  }
  if (watch_) {
    const WatchStats w = watch_->Stats();
    m.Family("cmax_agent_watch_running", "gauge", "1 while cmax-watch, the passive watch, runs");
    m.Sample(w.running ? 1 : 0);
    m.Family("cmax_agent_watch_starts_total", "counter", "times cmax-watch was started");
    m.Sample(static_cast<double>(w.starts));
    m.Family("cmax_agent_watch_records_unacked", "gauge",
             "watch records not yet acknowledged by the coordinator");
    m.Sample(static_cast<double>(w.unacked_records));
  }
  return m.text();
}

}  // namespace cmax::agent
