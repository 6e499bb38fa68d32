// cmax-scale-agents: one process hosting N simulated agents that speak the
// real agent protocol (Hello, Pong, RecordBatch with sequence numbers, task
// status, acks) over real gRPC to a real cmax-coordinator, then submits a
// plan, waits for the run and its scorecard, and prints what it measured.
// benchmarks/scale/README.md and docs/scale.md describe the figures.
//
// Threads: gRPC's callback executor (bounded by gRPC, a few per core) runs
// every stream's reactions; one timer thread reconnects dropped agents; the
// main thread drives the phases and samples the coordinator's /proc entry.
// Streams share --channels HTTP/2 connections (a distinct channel argument
// per channel keeps gRPC from merging them into one subchannel).
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <optional>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmarks/scale/measure.h"
#include "benchmarks/scale/sim_node.h"
#include "cmax/v1/service.grpc.pb.h"
#include "common/args.h"
#include "common/plan_parser.h"
#include "common/time_util.h"

namespace cmax::scale {
namespace {

// The command line (main() fills it with ArgParser): defaults here, help
// texts in AddOptions.
struct Options {
  std::string target = "127.0.0.1:8470";
  int64_t agents = 1000;
  int64_t channels = 0;
  std::string prefix = "sim";
  std::string plan;
  int64_t coordinator_pid = 0;
  double idle_seconds = 10;
  double settle_seconds = 0;
  double timeout = 600;
  double slow_gpu = 0, flap_port = 0, sdc = 0, hang = 0, disconnect = 0;
  uint64_t seed = 1;
  int64_t batch = 500;
  int64_t max_unacked = 2000;
  std::string json_out;
};
Options opts;


struct Stats {
  std::atomic<int> welcomed{0};        // agents that got their first Welcome
  std::atomic<int> connected_now{0};   // streams open and welcomed
  std::atomic<int> with_assignment{0}; // agents that got at least one assignment
  std::atomic<int64_t> assignments{0};
  std::atomic<int64_t> records_sent{0};
  std::atomic<int64_t> records_acked{0};  // by cumulative acks
  std::atomic<int64_t> status_acked{0};   // tasks whose end status was acknowledged
  std::atomic<int64_t> pongs{0};
  std::atomic<int> closed_by_coordinator{0};  // streams the coordinator ended unasked
  std::atomic<int> dropped_on_purpose{0};
  std::atomic<int64_t> first_record_ns{0};
  std::atomic<int64_t> last_ack_ns{0};
  std::atomic<int64_t> last_first_assign_ns{0};  // when the last agent got its first task
  std::atomic<int64_t> last_status_ack_ns{0};
  std::mutex mu;
  std::vector<std::string> close_reasons;  // first few, for the report
};

class Timer {
 public:
  Timer() : thread_([this] { Loop(); }) {}
  ~Timer() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void After(double seconds, std::function<void()> fn) {
    std::lock_guard<std::mutex> l(mu_);
    q_.push({Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(seconds)),
             seq_++, std::move(fn)});
    cv_.notify_all();
  }

 private:
  struct Item {
    Clock::time_point at;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Item& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      if (q_.empty()) {
        cv_.wait(l);
        continue;
      }
      if (cv_.wait_until(l, q_.top().at) == std::cv_status::timeout || Clock::now() >= q_.top().at) {
        if (q_.empty() || Clock::now() < q_.top().at) continue;
        auto fn = q_.top().fn;
        q_.pop();
        l.unlock();
        fn();
        l.lock();
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q_;
  uint64_t seq_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

class SimAgent;

// One connection of one agent: a callback reactor, deleted in OnDone.
class Stream final : public grpc::ClientBidiReactor<v1::AgentMessage, v1::CoordinatorMessage> {
 public:
  explicit Stream(std::shared_ptr<SimAgent> agent) : agent_(std::move(agent)) {}
  void Begin(v1::Coordinator::Stub* stub);
  void Push(v1::AgentMessage m);  // queue one write (one in flight)
  size_t Queued() {
    std::lock_guard<std::mutex> l(wmu_);
    return writes_.size();
  }
  void Cancel() { context_.TryCancel(); }

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& s) override;

 private:
  std::shared_ptr<SimAgent> agent_;
  grpc::ClientContext context_;
  v1::CoordinatorMessage in_;
  std::mutex wmu_;
  std::deque<v1::AgentMessage> writes_;
  bool writing_ = false;
  bool write_failed_ = false;
};

// An agent's state across its connections.
class SimAgent : public std::enable_shared_from_this<SimAgent> {
 public:
  SimAgent(SimNode node, v1::Coordinator::Stub* stub, Stats* stats, Timer* timer)
      : node_(std::move(node)), stub_(stub), stats_(stats), timer_(timer) {}

  void Connect() {
    std::lock_guard<std::mutex> l(mu_);
    auto* s = new Stream(shared_from_this());
    stream_ = s;
    welcomed_ = false;
    s->Begin(stub_);
    v1::AgentMessage hello;
    auto* h = hello.mutable_hello();
    h->set_node_name(node_.name);
    h->set_agent_version("cmax-scale-agents (simulated)");
    *h->mutable_inventory() = SimInventory(node_);
    h->add_addresses(absl::StrCat("127.0.0.1"));
    h->set_boot_id(absl::StrCat("sim-", node_.index, "-", boot_));
    if (task_) {
      auto* held = h->add_held();
      held->set_task_id(task_->task_id());
      held->set_attempt(task_->attempt());
      held->set_running(!end_sent_ || !ended_);
      // Resend from the last acknowledged record, as the real agent does.
      next_seq_ = acked_;
      end_sent_ = false;
    }
    s->Push(std::move(hello));
  }

  // Reactor thread.
  void OnMessage(Stream* s, const v1::CoordinatorMessage& m) {
    std::lock_guard<std::mutex> l(mu_);
    if (s != stream_) return;
    switch (m.msg_case()) {
      case v1::CoordinatorMessage::kWelcome:
        if (!welcomed_) {
          welcomed_ = true;
          stats_->connected_now++;
          if (!ever_welcomed_) {
            ever_welcomed_ = true;
            stats_->welcomed++;
          }
        }
        PumpLocked();
        break;
      case v1::CoordinatorMessage::kPing: {
        v1::AgentMessage pong;
        pong.mutable_pong()->set_t1_ns(m.ping().t1_ns());
        pong.mutable_pong()->set_t2_ns(NowUnixNs());
        pong.mutable_pong()->set_t3_ns(NowUnixNs());
        s->Push(std::move(pong));
        stats_->pongs++;
        break;
      }
      case v1::CoordinatorMessage::kAssign: {
        if (task_ && task_->task_id() == m.assign().task_id() &&
            task_->attempt() == m.assign().attempt()) {
          break;  // the same assignment again after a reconnect
        }
        stats_->assignments++;
        // The next assignment can overtake the last task's StatusAck (the
        // coordinator schedules before it acknowledges).
        if (task_ && end_sent_) awaiting_ack_[task_->task_id()] = task_->attempt();
        if (!first_assigned_) {
          first_assigned_ = true;
          stats_->with_assignment++;
          stats_->last_first_assign_ns = NowUnixNs();
        }
        task_ = m.assign();
        count_ = SimRecordCount(node_, task_->suite());
        next_seq_ = 0;
        acked_ = 0;
        end_sent_ = false;
        ended_ = false;
        started_ns_ = NowUnixNs();
        v1::AgentMessage st;
        auto* ts = st.mutable_status();
        ts->set_task_id(task_->task_id());
        ts->set_attempt(task_->attempt());
        ts->set_state(v1::TASK_RUNNING);
        ts->set_started_unix_ns(started_ns_);
        s->Push(std::move(st));
        PumpLocked();
        break;
      }
      case v1::CoordinatorMessage::kAck: {
        const auto& a = m.ack();
        if (!task_ || a.task_id() != task_->task_id() || a.attempt() != task_->attempt()) break;
        if (a.next_seq() > acked_) {
          stats_->records_acked += a.next_seq() - acked_;
          stats_->last_ack_ns = NowUnixNs();
          acked_ = a.next_seq();
        }
        PumpLocked();
        break;
      }
      case v1::CoordinatorMessage::kStatusAck: {
        const auto& a = m.status_ack();
        if (auto it = awaiting_ack_.find(a.task_id());
            it != awaiting_ack_.end() && it->second == a.attempt()) {
          awaiting_ack_.erase(it);
        } else if (!task_ || a.task_id() != task_->task_id() ||
                   a.attempt() != task_->attempt() || !end_sent_) {
          break;
        } else {
          task_.reset();
        }
        stats_->status_acked++;
        stats_->last_status_ack_ns = NowUnixNs();
        ++tasks_done_;
        break;
      }
      case v1::CoordinatorMessage::kCancel: {
        const auto& c = m.cancel();
        if (!task_ || c.task_id() != task_->task_id() || c.attempt() != task_->attempt()) break;
        hung_ = false;
        EndLocked(v1::TASK_CANCELLED, "cancelled by the coordinator: " + c.reason());
        break;
      }
      default:
        break;
    }
  }

  void OnWritten(Stream* s) {
    std::lock_guard<std::mutex> l(mu_);
    if (s == stream_) PumpLocked();
  }

  void OnEnded(Stream* s, const grpc::Status& status) {
    std::lock_guard<std::mutex> l(mu_);
    if (s != stream_) return;
    stream_ = nullptr;
    if (welcomed_) stats_->connected_now--;
    welcomed_ = false;
    if (stopping_) return;
    if (!dropping_) {
      stats_->closed_by_coordinator++;
      std::lock_guard<std::mutex> sl(stats_->mu);
      if (stats_->close_reasons.size() < 5) {
        stats_->close_reasons.push_back(
            absl::StrCat(node_.name, ": ", status.error_code(), " ", status.error_message()));
      }
    }
    dropping_ = false;
    ++boot_;
    auto self = shared_from_this();
    timer_->After(dropped_once_ ? 2.0 : 1.0, [self] { self->Connect(); });
  }

  void Stop() {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    if (stream_) stream_->Cancel();
  }

 private:
  // Sends what the window allows: records, then the end status.
  void PumpLocked() {
    if (!stream_ || !welcomed_ || !task_) return;
    while (stream_->Queued() < 2 && next_seq_ < count_ && next_seq_ - acked_ < max_unacked_) {
      if (node_.disconnect && !dropped_once_ && next_seq_ >= count_ / 2) {
        dropped_once_ = true;
        dropping_ = true;
        stats_->dropped_on_purpose++;
        stream_->Cancel();
        return;
      }
      v1::AgentMessage m;
      auto* batch = m.mutable_records();
      int64_t end = std::min({count_, next_seq_ + batch_, acked_ + max_unacked_});
      // A dropping node sends half its first task, then drops the stream.
      if (node_.disconnect && !dropped_once_ && next_seq_ < count_ / 2) {
        end = std::min(end, count_ / 2);
      }
      for (; next_seq_ < end; ++next_seq_) {
        auto* r = batch->add_records();
        r->set_task_id(task_->task_id());
        r->set_attempt(task_->attempt());
        r->set_seq(next_seq_);
        *r->mutable_record() =
            SimRecordAt(node_, task_->suite(), next_seq_, started_ns_ + next_seq_ * 1000);
      }
      int64_t zero = 0;
      stats_->first_record_ns.compare_exchange_strong(zero, NowUnixNs());
      stats_->records_sent += batch->records_size();
      stream_->Push(std::move(m));
    }
    if (next_seq_ >= count_ && !end_sent_ && !ended_) {
      if (hung_) return;
      if (node_.hang && !hung_once_) {
        hung_once_ = true;
        hung_ = true;  // never ends by itself; the coordinator times it out
        return;
      }
      EndLocked(v1::TASK_COMPLETED, "");
    } else if (next_seq_ >= count_ && ended_ && !end_sent_) {
      SendEndLocked();
    }
  }

  void EndLocked(v1::TaskState state, const std::string& message) {
    ended_ = true;
    end_state_ = state;
    end_message_ = message;
    if (next_seq_ >= count_ || state == v1::TASK_CANCELLED) SendEndLocked();
  }
  void SendEndLocked() {
    if (!stream_ || !welcomed_ || end_sent_) return;
    v1::AgentMessage st;
    auto* ts = st.mutable_status();
    ts->set_task_id(task_->task_id());
    ts->set_attempt(task_->attempt());
    ts->set_state(end_state_);
    ts->set_exit_code(end_state_ == v1::TASK_COMPLETED ? 0 : -1);
    ts->set_message(end_message_);
    ts->set_record_count(std::min(next_seq_, count_));
    ts->set_started_unix_ns(started_ns_);
    ts->set_ended_unix_ns(NowUnixNs());
    end_sent_ = true;
    stream_->Push(std::move(st));
  }

  const SimNode node_;
  v1::Coordinator::Stub* stub_;
  Stats* stats_;
  Timer* timer_;
  std::mutex mu_;
  Stream* stream_ = nullptr;
  bool welcomed_ = false, ever_welcomed_ = false, stopping_ = false;
  bool dropping_ = false, dropped_once_ = false, hung_ = false, hung_once_ = false;
  int boot_ = 0;
  std::optional<v1::TaskAssignment> task_;
  int64_t count_ = 0, next_seq_ = 0, acked_ = 0, started_ns_ = 0;
  bool end_sent_ = false, ended_ = false;
  v1::TaskState end_state_ = v1::TASK_COMPLETED;
  std::string end_message_;
  int tasks_done_ = 0;
  bool first_assigned_ = false;
  std::map<std::string, int> awaiting_ack_;  // ended tasks whose StatusAck is due

 public:
  int64_t batch_ = 500, max_unacked_ = 2000;
};

void Stream::Begin(v1::Coordinator::Stub* stub) {
  stub->async()->Connect(&context_, this);
  StartRead(&in_);
  StartCall();
}

void Stream::Push(v1::AgentMessage m) {
  std::lock_guard<std::mutex> l(wmu_);
  if (write_failed_) return;
  writes_.push_back(std::move(m));
  if (writing_) return;
  writing_ = true;
  StartWrite(&writes_.front());
}

void Stream::OnWriteDone(bool ok) {
  {
    std::lock_guard<std::mutex> l(wmu_);
    writes_.pop_front();
    if (!ok) {
      write_failed_ = true;
      writes_.clear();
      writing_ = false;
      return;
    }
    if (writes_.empty()) {
      writing_ = false;
    } else {
      StartWrite(&writes_.front());
    }
  }
  agent_->OnWritten(this);
}

void Stream::OnReadDone(bool ok) {
  if (!ok) return;  // OnDone follows
  agent_->OnMessage(this, in_);
  in_.Clear();
  StartRead(&in_);
}

void Stream::OnDone(const grpc::Status& s) {
  agent_->OnEnded(this, s);
  delete this;
}

// --- /proc sampling of the coordinator.
struct ProcSample {
  double cpu_s = 0;     // utime + stime
  int64_t rss_kb = 0;   // VmRSS
  int64_t hwm_kb = 0;   // VmHWM
  int threads = 0;
  int fds = 0;
};
ProcSample Sample(int pid) {
  ProcSample p;
  if (pid <= 0) return p;
  std::ifstream st(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  std::getline(st, line);
  auto close = line.rfind(')');
  if (close != std::string::npos) {
    std::istringstream in(line.substr(close + 2));
    std::string f;
    std::vector<std::string> fields;
    while (in >> f) fields.push_back(f);
    // Fields after the name start at 3 (state); utime is 14, stime 15.
    if (fields.size() > 13) {
      p.cpu_s = (std::stod(fields[11]) + std::stod(fields[12])) / sysconf(_SC_CLK_TCK);
    }
  }
  p.rss_kb = std::max<int64_t>(0, StatusKb("VmRSS", pid));
  p.hwm_kb = std::max<int64_t>(0, StatusKb("VmHWM", pid));
  p.threads = static_cast<int>(std::max<int64_t>(0, StatusKb("Threads", pid)));
  return p;
}

// CPU seconds (utime + stime) of `pid`'s threads named `comm` (the
// coordinator names its threads: cmax-core, cmax-scorecard, cmax-export).
double ThreadCpu(int pid, const std::string& comm) {
  double total = 0;
  if (pid <= 0) return total;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), ec)) {
    std::ifstream st(e.path() / "stat");
    std::string line;
    std::getline(st, line);
    auto open = line.find('(');
    auto close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    if (line.substr(open + 1, close - open - 1) != comm) continue;
    std::istringstream in(line.substr(close + 2));
    std::vector<std::string> fields;
    std::string f;
    while (in >> f) fields.push_back(f);
    if (fields.size() > 13) {
      total += (std::stod(fields[11]) + std::stod(fields[12])) / sysconf(_SC_CLK_TCK);
    }
  }
  return total;
}

// The whole machine's busy and total CPU time from /proc/stat, in clock
// ticks over all cores (busy: everything but idle and iowait).
struct MachineCpu {
  double busy = 0, total = 0;
};
MachineCpu SampleMachine() {
  MachineCpu m;
  std::ifstream st("/proc/stat");
  std::string cpu;
  st >> cpu;  // "cpu": the sum over the cores
  for (int i = 0; i < 8; ++i) {
    double v = 0;
    st >> v;
    m.total += v;
    if (i != 3 && i != 4) m.busy += v;  // 3 idle, 4 iowait
  }
  return m;
}

class Report {
 public:
  void Add(const std::string& key, const std::string& value, const std::string& note = "") {
    std::printf("%-40s %s%s%s\n", key.c_str(), value.c_str(), note.empty() ? "" : "  ",
                note.c_str());
    std::fflush(stdout);
    json_.push_back(absl::StrFormat("\"%s\": \"%s\"", key, value));
  }
  void Write(const std::string& path) {
    if (path.empty()) return;
    std::ofstream out(path);
    out << "{";
    for (size_t i = 0; i < json_.size(); ++i) out << (i ? ",\n " : "") << json_[i];
    out << "}\n";
  }

 private:
  std::vector<std::string> json_;
};

std::string F(double v, int digits = 2) { return absl::StrFormat("%.*f", digits, v); }

int Main() {
  if (opts.agents < 1 || opts.agents > 1000000) {
    std::fprintf(stderr, "cmax-scale-agents: --agents must be 1..1000000\n");
    return 2;
  }
  const int n = static_cast<int>(opts.agents);
  for (double f : {opts.slow_gpu, opts.flap_port, opts.sdc, opts.hang, opts.disconnect}) {
    if (f < 0 || f > 1) {
      std::fprintf(stderr, "cmax-scale-agents: fault fractions must be 0..1\n");
      return 2;
    }
  }
  if (opts.batch < 1 || opts.max_unacked < 1) {
    std::fprintf(stderr, "cmax-scale-agents: --batch and --max-unacked must be >= 1\n");
    return 2;
  }
  if (opts.channels > 64) {
    std::fprintf(stderr, "cmax-scale-agents: --channels must be 1..64\n");
    return 2;
  }
  const int channels = opts.channels > 0 ? static_cast<int>(opts.channels)
                                         : std::min(64, std::max(1, n / 500));
  if (opts.coordinator_pid < 0 || opts.coordinator_pid > INT32_MAX) {
    std::fprintf(stderr, "cmax-scale-agents: --coordinator-pid must be a pid (or 0)\n");
    return 2;
  }
  const std::string target = opts.target;
  if (target.rfind("127.", 0) != 0 && target.rfind("localhost:", 0) != 0 &&
      target.rfind("[::1]", 0) != 0) {
    std::fprintf(stderr, "cmax-scale-agents: --target must be a loopback address\n");
    return 2;
  }
  std::optional<v1::Plan> plan;
  if (!opts.plan.empty()) {
    auto p = LoadPlanFile(opts.plan);
    if (!p.ok()) {
      std::fprintf(stderr, "cmax-scale-agents: %s\n", std::string(p.status().message()).c_str());
      return 2;
    }
    plan = *p;
  }
  const int pid = static_cast<int>(opts.coordinator_pid);
  const auto t0 = Clock::now();
  const double timeout = opts.timeout;
  auto left = [&] { return timeout - SecondsSince(t0); };

  SimFaults faults;
  faults.slow_gpu = opts.slow_gpu;
  faults.flap_port = opts.flap_port;
  faults.sdc = opts.sdc;
  faults.hang = opts.hang;
  faults.disconnect = opts.disconnect;
  faults.seed = opts.seed;

  std::vector<std::shared_ptr<grpc::Channel>> chans;
  std::vector<std::unique_ptr<v1::Coordinator::Stub>> stubs;
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("cmax.scale.channel", c);  // distinct args: distinct connections
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(16 << 20);
    chans.push_back(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
    stubs.push_back(v1::Coordinator::NewStub(chans.back()));
  }
  Report report;
  report.Add("agents", absl::StrCat(n), absl::StrCat("(", n * kSimGpus, " simulated GPUs)"));
  report.Add("channels", absl::StrCat(channels));
  const ProcSample before = Sample(pid);
  report.Add("coordinator_rss_before_mb", F(before.rss_kb / 1024.0, 1));

  Stats stats;
  Timer timer;
  std::vector<std::shared_ptr<SimAgent>> agents;
  agents.reserve(n);
  const std::string prefix = opts.prefix;
  for (int i = 0; i < n; ++i) {
    agents.push_back(std::make_shared<SimAgent>(MakeSimNode(i, prefix, faults),
                                                stubs[i % channels].get(), &stats, &timer));
    agents.back()->batch_ = opts.batch;
    agents.back()->max_unacked_ = opts.max_unacked;
  }
  int faulty[5] = {0, 0, 0, 0, 0};
  for (int i = 0; i < n; ++i) {
    SimNode s = MakeSimNode(i, prefix, faults);
    faulty[0] += s.slow_gpu;
    faulty[1] += s.flap_port;
    faulty[2] += s.sdc;
    faulty[3] += s.hang;
    faulty[4] += s.disconnect;
  }
  report.Add("faulty_nodes", absl::StrFormat("slow_gpu %d, flap_port %d, sdc %d, hang %d, "
                                             "disconnect %d", faulty[0], faulty[1], faulty[2],
                                             faulty[3], faulty[4]));
  for (auto& a : agents) a->Connect();
  while (stats.welcomed < n && left() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double connect_s = SecondsSince(t0);
  report.Add("connect_all_s", stats.welcomed == n ? F(connect_s) : "not reached",
             absl::StrCat("(", stats.welcomed.load(), " of ", n, " welcomed)"));
  const ProcSample connected = Sample(pid);
  report.Add("coordinator_rss_connected_mb", F(connected.rss_kb / 1024.0, 1));
  report.Add("coordinator_rss_per_agent_kb",
             F(static_cast<double>(connected.rss_kb - before.rss_kb) / n, 1));
  report.Add("coordinator_threads", absl::StrCat(connected.threads));

  // Idle: every agent connected, no run; after --settle_seconds.
  if (const double settle = std::min(opts.settle_seconds, std::max(0.0, left() - 1));
      settle > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(settle));
  }
  const double idle = std::min(opts.idle_seconds, std::max(0.0, left() - 1));
  if (pid > 0 && idle > 0) {
    const int64_t pongs0 = stats.pongs;
    const ProcSample a = Sample(pid);
    const auto ti = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(idle));
    const ProcSample b = Sample(pid);
    const double dt = SecondsSince(ti);
    report.Add("coordinator_idle_cpu_pct", F(100 * (b.cpu_s - a.cpu_s) / dt, 1),
               "(% of one core, all agents connected, no run)");
    report.Add("heartbeats_per_s", F((stats.pongs - pongs0) / dt, 0));
  }
  report.Add("agents_lost_idle", absl::StrCat(stats.closed_by_coordinator.load()));

  if (plan && left() > 0) {
    v1::SubmitRunRequest req;
    *req.mutable_plan() = *plan;
    v1::SubmitRunResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    const int64_t submit_ns = NowUnixNs();
    const auto ts = Clock::now();
    // CPU spent from the submit to the last end status acknowledged: the
    // coordinator's (all threads, and its core thread alone), this
    // process's (the load generator) and the machine's (everything on it,
    // other work included): what bounds the ingest rate on a shared machine.
    const ProcSample cpu0 = Sample(pid);
    const ProcSample self0 = Sample(getpid());
    const double core0 = ThreadCpu(pid, "cmax-core");
    const MachineCpu machine0 = SampleMachine();
    grpc::Status s = stubs[0]->SubmitRun(&ctx, req, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "cmax-scale-agents: SubmitRun: %s\n", s.error_message().c_str());
      report.Write(opts.json_out);
      return 1;
    }
    report.Add("run_id", resp.run_id());
    report.Add("tasks", absl::StrCat(resp.tasks()));
    report.Add("submit_rpc_s", F(SecondsSince(ts)));
    const int nodes = resp.nodes_size();
    while (stats.with_assignment < nodes && left() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    report.Add("submit_to_all_nodes_assigned_s",
               stats.with_assignment >= nodes
                   ? F((stats.last_first_assign_ns - submit_ns) / 1e9)
                   : "not reached",
               absl::StrCat("(", stats.with_assignment.load(), " of ", nodes,
                            " nodes got their first task)"));
    const int64_t expect_tasks = resp.tasks();
    // Until every end status is acknowledged, or (tasks of lost agents end
    // at the coordinator, not here) the coordinator counts every task ended.
    bool coordinator_done = false;
    auto polled = Clock::now();
    while (stats.status_acked < expect_tasks && left() > 0 && !coordinator_done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (stats.closed_by_coordinator == 0 || SecondsSince(polled) < 1.0) continue;
      polled = Clock::now();
      v1::ListRunsRequest g;
      g.set_limit(5);
      v1::ListRunsResponse gr;
      grpc::ClientContext gc;
      gc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      if (!stubs[0]->ListRuns(&gc, g, &gr).ok()) continue;
      for (const auto& r : gr.runs()) {
        if (r.run_id() == resp.run_id() && r.tasks_total() > 0 &&
            r.tasks_done() >= r.tasks_total()) {
          coordinator_done = true;
        }
      }
    }
    const bool all_done = stats.status_acked >= expect_tasks || coordinator_done;
    const double ingest_s = (stats.last_ack_ns - stats.first_record_ns) / 1e9;
    report.Add("records_sent", absl::StrCat(stats.records_sent.load()));
    report.Add("records_acked", absl::StrCat(stats.records_acked.load()));
    report.Add("tasks_ended_acked", absl::StrCat(stats.status_acked.load(), " of ", expect_tasks));
    report.Add("ingest_s", F(ingest_s), "(first record sent .. last ack)");
    report.Add("ingest_records_per_s",
               ingest_s > 0 ? F(stats.records_acked / ingest_s, 0) : "n/a",
               "(stored and acknowledged)");
    const ProcSample after_ingest = Sample(pid);
    const ProcSample self1 = Sample(getpid());
    const double core1 = ThreadCpu(pid, "cmax-core");
    const MachineCpu machine1 = SampleMachine();
    if (pid > 0 && stats.records_acked > 0) {
      const double per = 1e6 / static_cast<double>(stats.records_acked);
      report.Add("ingest_coordinator_cpu_us_per_record",
                 F((after_ingest.cpu_s - cpu0.cpu_s) * per, 1),
                 "(all its threads, submit .. last end status acked)");
      report.Add("ingest_core_thread_cpu_us_per_record", F((core1 - core0) * per, 1),
                 "(the cmax-core thread alone)");
      report.Add("ingest_generator_cpu_us_per_record", F((self1.cpu_s - self0.cpu_s) * per, 1),
                 "(this load generator)");
      const double total = machine1.total - machine0.total;
      report.Add("ingest_machine_busy_pct",
                 total > 0 ? F(100 * (machine1.busy - machine0.busy) / total, 0) : "n/a",
                 absl::StrCat("(all ", sysconf(_SC_NPROCESSORS_ONLN),
                              " cores, other work on the machine included)"));
    }
    report.Add("coordinator_rss_after_ingest_mb", F(after_ingest.rss_kb / 1024.0, 1));
    report.Add("agents_lost_ingest", absl::StrCat(stats.closed_by_coordinator.load()));

    // Scorecard: from the last end status acknowledged until the run shows
    // its tier (the coordinator stores it once the scorecard is written).
    if (all_done) {
      const int lost_before = stats.closed_by_coordinator;
      const int connected_before = stats.connected_now;
      const int64_t pongs0 = stats.pongs;
      std::atomic<bool> sampling{true};
      std::atomic<int64_t> peak_kb{after_ingest.rss_kb};
      std::thread sampler([&] {
        while (sampling) {
          int64_t kb = Sample(pid).rss_kb;
          if (kb > peak_kb) peak_kb = kb;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      });
      const auto tsc = Clock::now();
      std::string tier, report_dir, state;
      // ListRuns (a few rows of the store), not GetRun: GetRun copies every
      // task of a running run on the core thread, 40,000 at 10,000 nodes.
      while (left() > 0) {
        v1::ListRunsRequest g;
        g.set_limit(5);
        v1::ListRunsResponse gr;
        grpc::ClientContext gc;
        gc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(
                                                               static_cast<int>(left()) + 1));
        bool found = false;
        if (stubs[0]->ListRuns(&gc, g, &gr).ok()) {
          for (const auto& r : gr.runs()) {
            if (r.run_id() != resp.run_id() || r.tier().empty()) continue;
            tier = r.tier();
            report_dir = r.report_dir();
            state = r.state();
            found = true;
          }
        }
        if (found) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      const double build_s = (NowUnixNs() - stats.last_status_ack_ns) / 1e9;
      const double wait_s = SecondsSince(tsc);
      sampling = false;
      sampler.join();
      const ProcSample end = Sample(pid);
      report.Add("scorecard_s", tier.empty() ? "not reached" : F(build_s),
                 "(last end status acknowledged .. run shows its tier)");
      report.Add("scorecard_wait_s", F(wait_s));
      report.Add("coordinator_peak_rss_scorecard_mb", F(peak_kb / 1024.0, 1),
                 "(sampled every 50 ms)");
      report.Add("coordinator_vmhwm_mb", F(end.hwm_kb / 1024.0, 1));
      report.Add("heartbeats_during_scorecard_per_s", F((stats.pongs - pongs0) / wait_s, 0));
      report.Add("agents_lost_scorecard", absl::StrCat(stats.closed_by_coordinator - lost_before),
                 absl::StrCat("(connected before ", connected_before, ", after ",
                              stats.connected_now.load(), ")"));
      report.Add("run_state", state);
      report.Add("tier", tier);
      report.Add("report_dir", report_dir);
    }
  }
  // Agents the coordinator lists as lost.
  {
    v1::ListAgentsRequest lr;
    v1::ListAgentsResponse la;
    grpc::ClientContext lc;
    lc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    if (stubs[0]->ListAgents(&lc, lr, &la).ok()) {
      int lost = 0, listed = 0;
      for (const auto& a : la.agents()) {
        if (a.node_name().rfind(prefix, 0) != 0) continue;
        ++listed;
        lost += a.state() == "lost" || a.state() == "disconnected";
      }
      report.Add("coordinator_lists_lost_or_disconnected", absl::StrCat(lost, " of ", listed));
    }
  }
  report.Add("streams_closed_by_coordinator", absl::StrCat(stats.closed_by_coordinator.load()));
  report.Add("streams_dropped_on_purpose", absl::StrCat(stats.dropped_on_purpose.load()));
  {
    std::lock_guard<std::mutex> l(stats.mu);
    for (const auto& r : stats.close_reasons) report.Add("close_reason", r);
  }
  report.Add("elapsed_s", F(SecondsSince(t0)));
  report.Write(opts.json_out);
  for (auto& a : agents) a->Stop();
  // Give the reactors a moment to finish before the channels go.
  for (int i = 0; i < 200 && stats.connected_now > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return 0;
}

}  // namespace
}  // namespace cmax::scale

namespace cmax::scale {
namespace {

// Registers the command line's options (their defaults are Options's).
void AddOptions(ArgParser& p, std::string* seed) {
  p.AddString("target", &opts.target, "coordinator HOST:PORT (loopback only; default 127.0.0.1:8470)");
  p.AddInt("agents", &opts.agents, "simulated agents (8 simulated GPUs each; default 1000)");
  p.AddInt("channels", &opts.channels,
           "HTTP/2 connections the streams share (0: one per 500 agents, 1..64)");
  p.AddString("prefix", &opts.prefix, "node names are PREFIX00000, PREFIX00001, ... (default sim)");
  p.AddString("plan", &opts.plan, "plan YAML to submit once all are connected (empty: no run)");
  p.AddInt("coordinator-pid", &opts.coordinator_pid,
           "pid whose CPU and memory are sampled (0: none)");
  p.AddDouble("idle-seconds", &opts.idle_seconds,
              "seconds the idle coordinator's CPU is measured (default 10)");
  p.AddDouble("settle-seconds", &opts.settle_seconds,
              "seconds to wait after all are connected before the idle CPU is measured (the "
              "heartbeat period doubles at most once a period: 50 s at 50,000 agents about 60 s "
              "after they connected)");
  p.AddDouble("timeout", &opts.timeout,
              "seconds the whole benchmark may take; then it reports and exits (default 600)");
  p.AddDouble("slow-gpu", &opts.slow_gpu, "fraction of nodes with a slow GPU (gemm, GPU 3 at 70%)");
  p.AddDouble("flap-port", &opts.flap_port, "fraction of nodes with a flapping IB port (health)");
  p.AddDouble("sdc", &opts.sdc,
              "fraction of nodes whose GPU 5 gives a wrong digest (consistency)");
  p.AddDouble("hang", &opts.hang, "fraction of nodes whose first task never ends");
  p.AddDouble("disconnect", &opts.disconnect,
              "fraction of nodes whose stream drops halfway through their first task (they "
              "reconnect after 2 s and resend from their last ack)");
  // uint64: ArgParser's integers are int64, so it is read as text and
  // checked here.
  p.AddString("seed", seed, "which nodes get the faults (default 1)");
  p.SetCheck("seed", [](const std::string& v) {
    uint64_t x = 0;
    return absl::SimpleAtoi(v, &x) ? absl::OkStatus()
                                   : absl::InvalidArgumentError(absl::StrCat(
                                         "--seed: '", v, "' is not an unsigned integer"));
  });
  p.AddInt("batch", &opts.batch,
           "records per RecordBatch (the real agent's max_batch_records; default 500)");
  p.AddInt("max-unacked", &opts.max_unacked,
           "records in flight per task before waiting for an ack (default 2000)");
  p.AddString("json-out", &opts.json_out, "also write the figures as one JSON object to this file");
}

// Option names as documented before ArgParser (absl flags): --idle_seconds
// as well as --idle-seconds. Rewrites a long option's name (never a value,
// nor anything after "--") to its dashed spelling.
std::vector<std::string> DashedNames(int argc, char** argv) {
  std::vector<std::string> args;
  bool after_separator = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") after_separator = true;
    if (!after_separator && a.size() > 2 && a[0] == '-' && a[1] == '-') {
      const size_t end = std::min(a.find('='), a.size());
      std::replace(a.begin() + 2, a.begin() + static_cast<std::ptrdiff_t>(end), '_', '-');
    }
    args.push_back(std::move(a));
  }
  return args;
}

}  // namespace
}  // namespace cmax::scale

int main(int argc, char** argv) {
  cmax::ArgParser p(
      "cmax-scale-agents --agents N --target 127.0.0.1:PORT [--plan FILE] [--coordinator-pid P]",
      "Hosts N simulated agents (8 simulated GPUs each, every record marked simulated) over "
      "real gRPC, submits the plan and prints connect time, idle CPU, memory per agent, "
      "ingest rate and scorecard time. Options are spelled with dashes or underscores "
      "(--idle-seconds, --idle_seconds). See benchmarks/scale/README.md.");
  std::string seed = "1";
  cmax::scale::AddOptions(p, &seed);
  // ParseToolArgs on the rewritten names: argv[0] first, as it expects.
  std::vector<std::string> args = cmax::scale::DashedNames(argc, argv);
  std::vector<char*> ptrs = {argv[0]};
  for (auto& a : args) ptrs.push_back(a.data());
  if (const int code = cmax::ParseToolArgs(p, static_cast<int>(ptrs.size()), ptrs.data());
      code >= 0) {
    return code;
  }
  if (!p.positional().empty()) {
    std::fprintf(stderr, "cmax-scale-agents: unexpected argument '%s'\n\n%s",
                 p.positional().front().c_str(), p.Help().c_str());
    return 2;
  }
  (void)absl::SimpleAtoi(seed, &cmax::scale::opts.seed);  // checked by the parser
  return cmax::scale::Main();
}
