// The whole agent (connection + executor) against a small in-process fake
// coordinator: a gRPC server on 127.0.0.1 that implements Connect.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "agent/agent.h"
#include "agent/connection.h"
#include "agent/task_store.h"
#include "cmax/v1/service.grpc.pb.h"
#include "common/subprocess.h"
#include "common/time_util.h"
#include "common/version.h"
#include "test_util.h"

using namespace std::chrono_literals;
using cmax::agent::testing::TempDir;
using cmax::agent::testing::WaitFor;
namespace v1 = cmax::v1;

namespace {

// One stream at a time; remembers everything every stream received.
class FakeCoordinator final : public v1::Coordinator::Service {
 public:
  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::AgentMessage>*
                           stream) override {
    {
      absl::MutexLock lock(&mu_);
      ++streams_;
      context_ = context;
      stream_ = stream;
      auto md = context->client_metadata().find("authorization");
      if (md != context->client_metadata().end()) {
        authorization_ = std::string(md->second.data(), md->second.size());
      }
    }
    v1::AgentMessage m;
    while (stream->Read(&m)) {
      absl::MutexLock lock(&mu_);
      received_.push_back({streams_, m});
    }
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
    stream_ = nullptr;
    return grpc::Status::OK;
  }

  bool Send(const v1::CoordinatorMessage& m) {
    absl::MutexLock lock(&mu_);
    return stream_ != nullptr && stream_->Write(m);
  }
  void BreakStream() {
    absl::MutexLock lock(&mu_);
    if (context_) context_->TryCancel();
  }
  int streams() const {
    absl::MutexLock lock(&mu_);
    return streams_;
  }
  bool connected() const {
    absl::MutexLock lock(&mu_);
    return stream_ != nullptr;
  }
  std::string authorization() const {
    absl::MutexLock lock(&mu_);
    return authorization_;
  }
  // Messages received on stream number `stream` (1-based).
  std::vector<v1::AgentMessage> Received(int stream) const {
    absl::MutexLock lock(&mu_);
    std::vector<v1::AgentMessage> out;
    for (const auto& [s, m] : received_) {
      if (s == stream) out.push_back(m);
    }
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  int streams_ = 0;
  grpc::ServerContext* context_ = nullptr;
  grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::AgentMessage>* stream_ = nullptr;
  std::string authorization_;
  std::vector<std::pair<int, v1::AgentMessage>> received_;
};

struct Server {
  Server() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&fake);
    server = builder.BuildAndStart();
  }
  ~Server() { server->Shutdown(std::chrono::system_clock::now() + 1s); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  FakeCoordinator fake;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

cmax::agent::AgentOptions Options(const std::string& address,
                                  const std::string& work_dir) {
  cmax::agent::AgentOptions o;
  o.coordinator = address;
  o.node_name = "node-a";
  o.work_dir = work_dir;
  o.token = "s3cret";
  o.bench_dir = CMAX_TEST_BIN_DIR;
  o.inventory_timeout_ms = 5000;
  return o;
}

template <typename Pred>
std::optional<v1::AgentMessage> FindMessage(const std::vector<v1::AgentMessage>& ms,
                                            Pred pred) {
  for (const auto& m : ms) {
    if (pred(m)) return m;
  }
  return std::nullopt;
}

bool HasEndStatus(const std::vector<v1::AgentMessage>& ms, const std::string& task) {
  return FindMessage(ms,
                     [&](const v1::AgentMessage& m) {
                       return m.has_status() && m.status().task_id() == task &&
                              m.status().state() == v1::TASK_COMPLETED;
                     })
      .has_value();
}

std::set<int64_t> Seqs(const std::vector<v1::AgentMessage>& ms, const std::string& task) {
  std::set<int64_t> seqs;
  for (const auto& m : ms) {
    for (const auto& r : m.records().records()) {
      if (r.task_id() == task) seqs.insert(r.seq());
    }
  }
  return seqs;
}

}  // namespace

TEST_CASE("the agent says Hello, answers Ping and resends after a broken stream",
          "[agent][connection]") {
  Server server;
  TempDir dir;
  cmax::agent::Agent agent(Options(server.address(), dir.path()));
  REQUIRE(agent.Start().ok());

  // Hello first, with the node name, version, boot id and the bearer token.
  REQUIRE(WaitFor([&] { return !server.fake.Received(1).empty(); }, 20s));
  v1::AgentMessage first = server.fake.Received(1).front();
  REQUIRE(first.has_hello());
  CHECK(first.hello().node_name() == "node-a");
  CHECK(first.hello().agent_version() == cmax::kCmaxVersion);
  CHECK(first.hello().boot_id() == agent.boot_id());
  CHECK(first.hello().boot_id().size() == 32);
  CHECK_FALSE(first.hello().addresses().empty());
  CHECK(first.hello().inventory().cpu_cores() > 0);
  CHECK(server.fake.authorization() == "Bearer s3cret");

  // Ping → Pong with t1 echoed and t1 <= t2 <= t3 in the agent's clock.
  v1::CoordinatorMessage ping;
  const int64_t t1 = cmax::NowUnixNs();
  ping.mutable_ping()->set_t1_ns(t1);
  REQUIRE(server.fake.Send(ping));
  REQUIRE(WaitFor(
      [&] {
        return FindMessage(server.fake.Received(1), [](auto& m) { return m.has_pong(); })
            .has_value();
      },
      5s));
  auto pong =
      FindMessage(server.fake.Received(1), [](auto& m) { return m.has_pong(); })->pong();
  CHECK(pong.t1_ns() == t1);
  CHECK(pong.t2_ns() >= t1);
  CHECK(pong.t3_ns() >= pong.t2_ns());
  CHECK(pong.t3_ns() - t1 < 5'000'000'000);

  // A task: its records and end status arrive on stream 1.
  v1::CoordinatorMessage assign;
  auto* a = assign.mutable_assign();
  a->set_task_id("t-conn");
  a->set_suite("selftest");
  a->add_args("--records=7");
  a->set_timeout_seconds(30);
  REQUIRE(server.fake.Send(assign));
  REQUIRE(WaitFor([&] { return HasEndStatus(server.fake.Received(1), "t-conn"); }, 20s));
  CHECK(Seqs(server.fake.Received(1), "t-conn").size() == 8);
  // Acknowledge the first 3 records only.
  v1::CoordinatorMessage ack;
  ack.mutable_ack()->set_task_id("t-conn");
  ack.mutable_ack()->set_next_seq(3);
  REQUIRE(server.fake.Send(ack));
  std::this_thread::sleep_for(300ms);

  // Break the stream: the agent reconnects, reports the task as held and
  // resends the unacknowledged records and the end status.
  server.fake.BreakStream();
  REQUIRE(WaitFor(
      [&] {
        return server.fake.streams() >= 2 &&
               HasEndStatus(server.fake.Received(2), "t-conn");
      },
      20s));
  auto second = server.fake.Received(2);
  REQUIRE(second.front().has_hello());
  CHECK(second.front().hello().boot_id() == agent.boot_id());
  REQUIRE(second.front().hello().held_size() == 1);
  CHECK(second.front().hello().held(0).task_id() == "t-conn");
  CHECK_FALSE(second.front().hello().held(0).running());
  std::set<int64_t> resent = Seqs(second, "t-conn");
  CHECK(resent == std::set<int64_t>{3, 4, 5, 6, 7});

  // Everything acknowledged: the task directory goes away.
  ack.mutable_ack()->set_next_seq(8);
  REQUIRE(server.fake.Send(ack));
  v1::CoordinatorMessage sack;
  sack.mutable_status_ack()->set_task_id("t-conn");
  REQUIRE(server.fake.Send(sack));
  cmax::agent::TaskStore store(dir.path());
  CHECK(WaitFor([&] { return !store.Exists({"t-conn", 0, 0}); }, 5s));
  agent.Stop();
}

TEST_CASE("the agent keeps dialling until the coordinator appears",
          "[agent][connection]") {
  // Find a free port, then start the agent before anything listens there.
  int port = 0;
  {
    Server probe;
    port = probe.port;
  }
  TempDir dir;
  auto opts = Options("127.0.0.1:" + std::to_string(port), dir.path());
  opts.clock_offset_ns = int64_t{3600} * 1000000000;  // an hour ahead
  cmax::agent::Agent agent(opts);
  REQUIRE(agent.Start().ok());
  std::this_thread::sleep_for(1500ms);  // a few failed dials

  FakeCoordinator fake;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(&fake);
  auto server = builder.BuildAndStart();
  REQUIRE(server);
  REQUIRE(WaitFor([&] { return !fake.Received(1).empty(); }, 20s));
  CHECK(fake.Received(1).front().hello().node_name() == "node-a");

  // The shifted clock shows in the Pong.
  v1::CoordinatorMessage ping;
  const int64_t t1 = cmax::NowUnixNs();
  ping.mutable_ping()->set_t1_ns(t1);
  REQUIRE(fake.Send(ping));
  REQUIRE(WaitFor(
      [&] {
        return FindMessage(fake.Received(1), [](auto& m) { return m.has_pong(); })
            .has_value();
      },
      5s));
  auto pong = FindMessage(fake.Received(1), [](auto& m) { return m.has_pong(); })->pong();
  const int64_t hour = int64_t{3600} * 1000000000;
  CHECK(pong.t2_ns() - t1 > hour - 5'000'000'000);
  CHECK(pong.t2_ns() - t1 < hour + 5'000'000'000);
  agent.Stop();
  server->Shutdown(std::chrono::system_clock::now() + 1s);
}

namespace {

// A handler that only answers the Hello: the Connection alone, no executor.
class HelloOnly : public cmax::agent::ConnectionHandler {
 public:
  explicit HelloOnly(std::string node = "node-quiet") : node_(std::move(node)) {}
  v1::Hello MakeHello() override {
    v1::Hello h;
    h.set_node_name(node_);
    return h;
  }
  void OnConnected(uint64_t) override {}
  void OnMessage(const v1::CoordinatorMessage&) override {}

 private:
  const std::string node_;
};

}  // namespace

TEST_CASE("a connected agent waits as long as the heartbeat period the last Ping gave",
          "[agent][connection]") {
  // The coordinator's period grows with the fleet (to 50 s at 50,000
  // agents) after an agent was welcomed with 1 s: the agent must follow
  // the Ping's interval, or it drops a healthy stream at max(30 s, 5 of the
  // Welcome's periods). Here the floor is 1 s so the case takes seconds.
  Server server;
  cmax::agent::ConnectionOptions o;
  o.target = server.address();
  o.min_silence_ms = 1000;
  HelloOnly handler;
  cmax::agent::Connection connection(o, &handler);
  connection.Start();
  REQUIRE(WaitFor([&] { return server.fake.connected() && connection.connected(); }, 20s));
  v1::CoordinatorMessage welcome;
  welcome.mutable_welcome()->set_heartbeat_interval_ms(100);  // gives up after 1 s
  REQUIRE(server.fake.Send(welcome));
  v1::CoordinatorMessage ping;
  ping.mutable_ping()->set_t1_ns(cmax::NowUnixNs());
  ping.mutable_ping()->set_interval_ms(1000);  // 5 s now
  REQUIRE(server.fake.Send(ping));
  std::this_thread::sleep_for(3s);
  CHECK(server.fake.streams() == 1);
  CHECK(connection.generation() == 1);

  // A shorter period again: silence past max(1 s, 5 x 100 ms) ends the
  // stream and the agent dials a new one.
  ping.mutable_ping()->set_interval_ms(100);
  REQUIRE(server.fake.Send(ping));
  CHECK(WaitFor([&] { return server.fake.streams() >= 2; }, 10s));
  connection.Stop();
}

namespace {

// A handler whose every message waits `hold` (a task store's fsync behind a
// storage suite's writes), counting what it handled.
class SlowHandler final : public HelloOnly {
 public:
  explicit SlowHandler(std::chrono::milliseconds hold) : HelloOnly("node-slow-disk"), hold_(hold) {}
  void OnMessage(const v1::CoordinatorMessage& m) override {
    std::this_thread::sleep_for(hold_);
    absl::MutexLock lock(&mu_);
    handled_.push_back(m.cancel().task_id());
  }
  std::vector<std::string> handled() const {
    absl::MutexLock lock(&mu_);
    return handled_;
  }

 private:
  const std::chrono::milliseconds hold_;
  mutable absl::Mutex mu_;
  std::vector<std::string> handled_;
};

}  // namespace

TEST_CASE("a handler held up by its disk does not hold up the answers to Pings",
          "[agent][connection]") {
  // The coordinator calls an agent lost when its pongs stop; a handler that
  // waits seconds on an fsync must not make a healthy node look lost.
  Server server;
  cmax::agent::ConnectionOptions o;
  o.target = server.address();
  SlowHandler handler(1500ms);
  cmax::agent::Connection connection(o, &handler);
  connection.Start();
  REQUIRE(WaitFor([&] { return server.fake.connected() && connection.connected(); }, 20s));
  for (const char* id : {"t1", "t2"}) {  // 3 s of handling queued
    v1::CoordinatorMessage cancel;
    cancel.mutable_cancel()->set_task_id(id);
    REQUIRE(server.fake.Send(cancel));
  }
  const auto sent = std::chrono::steady_clock::now();
  v1::CoordinatorMessage ping;
  ping.mutable_ping()->set_t1_ns(cmax::NowUnixNs());
  REQUIRE(server.fake.Send(ping));
  auto pong = [&] {
    return FindMessage(server.fake.Received(1),
                       [](const v1::AgentMessage& m) { return m.has_pong(); })
        .has_value();
  };
  REQUIRE(WaitFor(pong, 10s));
  const auto answered = std::chrono::steady_clock::now() - sent;
  CHECK(answered < 1000ms);  // not after the 3 s the handler still needs
  CHECK(handler.handled().size() < 2);
  // Every message is still handled, in the order it came.
  REQUIRE(WaitFor([&] { return handler.handled().size() == 2; }, 10s));
  CHECK(handler.handled() == std::vector<std::string>{"t1", "t2"});
  connection.Stop();
}

namespace {

// Runs openssl; false (with a warning) when it fails.
bool OpenSsl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = cmax::RunCommand(argv, std::chrono::seconds(30));
  if (!r.ok() || !r->exit.exited || r->exit.code != 0) {
    WARN("openssl failed: " << (r.ok() ? r->err : std::string(r.status().message())));
    return false;
  }
  return true;
}

}  // namespace

TEST_CASE("with --tls-ca the agent connects over TLS and verifies the server",
          "[agent][connection]") {
  if (cmax::FindExecutable("openssl").empty()) {
    FAIL("openssl not installed: cannot make test certificates");
  }
  TempDir certs;
  const std::string d = certs.path();
  cmax::agent::testing::AppendFile(d + "/ext.cnf", "subjectAltName=IP:127.0.0.1\n");
  const std::vector<std::string> ec = {"-newkey", "ec", "-pkeyopt",
                                       "ec_paramgen_curve:prime256v1", "-nodes"};
  std::vector<std::string> ca = {"req", "-x509"};
  ca.insert(ca.end(), ec.begin(), ec.end());
  ca.insert(ca.end(), {"-keyout", d + "/ca.key", "-out", d + "/ca.pem", "-days", "1",
                       "-subj", "/CN=cmax test CA"});
  std::vector<std::string> csr = {"req"};
  csr.insert(csr.end(), ec.begin(), ec.end());
  csr.insert(csr.end(), {"-keyout", d + "/srv.key", "-out", d + "/srv.csr", "-subj",
                         "/CN=127.0.0.1"});
  if (!OpenSsl(ca) || !OpenSsl(csr) ||
      !OpenSsl({"x509", "-req", "-in", d + "/srv.csr", "-CA", d + "/ca.pem", "-CAkey",
                d + "/ca.key", "-CAcreateserial", "-out", d + "/srv.pem", "-days", "1",
                "-extfile", d + "/ext.cnf"})) {
    FAIL("could not make test certificates");
  }
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({cmax::agent::testing::ReadFile(d + "/srv.key"),
                                    cmax::agent::testing::ReadFile(d + "/srv.pem")});
  FakeCoordinator fake;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(ssl), &port);
  builder.RegisterService(&fake);
  auto server = builder.BuildAndStart();
  REQUIRE(server);
  const std::string address = "127.0.0.1:" + std::to_string(port);

  SECTION("an agent without the CA cannot talk to it") {
    TempDir dir;
    cmax::agent::Agent agent(Options(address, dir.path()));
    REQUIRE(agent.Start().ok());
    std::this_thread::sleep_for(1500ms);
    CHECK(fake.Received(1).empty());
    agent.Stop();
  }
  SECTION("an agent with the CA says Hello") {
    TempDir dir;
    auto opts = Options(address, dir.path());
    opts.tls_ca_pem = cmax::agent::testing::ReadFile(d + "/ca.pem");
    cmax::agent::Agent agent(opts);
    REQUIRE(agent.Start().ok());
    REQUIRE(WaitFor([&] { return !fake.Received(1).empty(); }, 20s));
    CHECK(fake.Received(1).front().hello().node_name() == "node-a");
    CHECK(fake.authorization() == "Bearer s3cret");
    agent.Stop();
  }
  server->Shutdown(std::chrono::system_clock::now() + 1s);
}

TEST_CASE("the cmax-agent daemon runs a task and stops its child on SIGTERM",
          "[agent][connection][daemon]") {
  Server server;
  TempDir dir;
  cmax::agent::testing::AppendFile(dir.path() + "/token", "t0ken-from-file\n");
  cmax::SpawnOptions spawn;
  spawn.argv = {std::string(CMAX_TEST_BIN_DIR) + "/cmax-agent",
                "--coordinator",
                server.address(),
                "--node-name",
                "daemon-1",
                "--work-dir",
                dir.path() + "/work",
                "--token-file",
                dir.path() + "/token",
                "--log-level=info"};
  spawn.stderr_path = dir.path() + "/agent.log";
  auto agent = cmax::Subprocess::Spawn(spawn);
  REQUIRE(agent.ok());
  REQUIRE(WaitFor([&] { return !server.fake.Received(1).empty(); }, 20s));
  CHECK(server.fake.Received(1).front().hello().node_name() == "daemon-1");
  CHECK(server.fake.authorization() == "Bearer t0ken-from-file");

  v1::CoordinatorMessage assign;
  auto* a = assign.mutable_assign();
  a->set_task_id("d-sleep");
  a->set_suite("selftest");
  a->add_args("--mode=sleep");
  a->add_args("--seconds=60");
  a->set_timeout_seconds(120);
  REQUIRE(server.fake.Send(assign));
  REQUIRE(WaitFor(
      [&] {
        return FindMessage(server.fake.Received(1),
                           [](auto& m) {
                             return m.has_status() &&
                                    m.status().state() == v1::TASK_RUNNING;
                           })
            .has_value();
      },
      20s));
  const std::string spool = dir.path() + "/work/tasks/d-sleep.a0.r0/records.jsonl";
  CHECK(WaitFor([&] { return !cmax::agent::testing::ReadFile(spool).empty(); }, 10s));

  const int child =
      cmax::agent::testing::PidWithCwd(dir.path() + "/work/tasks/d-sleep.a0.r0");
  REQUIRE(child > 0);
  auto start = std::chrono::steady_clock::now();
  kill((*agent)->pid(), SIGTERM);
  cmax::ExitInfo exit = (*agent)->Wait();
  CHECK(exit.exited);
  CHECK(exit.code == 0);
  CHECK(std::chrono::steady_clock::now() - start < 8s);
  // The child is gone with it.
  CHECK(kill(child, 0) != 0);
  CHECK(cmax::agent::testing::PidWithCwd(dir.path() + "/work/tasks/d-sleep.a0.r0") == 0);
  std::string log = cmax::agent::testing::ReadFile(dir.path() + "/agent.log");
  CHECK_THAT(log, Catch::Contains("stopping (agent shutting down)"));
  CHECK(log.find("t0ken-from-file") == std::string::npos);  // never logged
}
