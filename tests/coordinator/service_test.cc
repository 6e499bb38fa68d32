// The coordinator's gRPC face in one process: the agent streams, the token
// check on them, their ends reaching the core, and shutdown with streams
// still open. Everything on 127.0.0.1.
#include "coordinator/service.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "tests/coordinator/fake_session.h"
#include "tests/scratch_dir.h"

namespace cmax::coordinator {
namespace {

using Stream = grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>;

// A core, its service and a server on an ephemeral loopback port.
struct Served {
  explicit Served(Credentials credentials = {.admin = "secret token"}) {
    CoreOptions o;
    o.data_dir = scratch.path;
    auto c = CoordinatorCore::Create(o);
    REQUIRE(c.ok());
    core = std::move(*c);
    core->Start();
    service = std::make_unique<CoordinatorService>(core.get(), std::move(credentials));
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service.get());
    server = builder.BuildAndStart();
    REQUIRE(server != nullptr);
    REQUIRE(port > 0);
    channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                  grpc::InsecureChannelCredentials());
    stub = v1::Coordinator::NewStub(channel);
  }
  ~Served() { Stop(); }
  void Stop() {
    if (!server) return;
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(3));
    core->Stop();
    server.reset();
  }
  void Authorize(grpc::ClientContext* ctx, const std::string& token = "secret token") {
    ctx->AddMetadata("authorization", "Bearer " + token);
  }
  // Agents in `state` per ListAgents (the callback path, with the token).
  int CountAgents(const std::string& state) {
    grpc::ClientContext ctx;
    Authorize(&ctx);
    v1::ListAgentsResponse resp;
    auto st = stub->ListAgents(&ctx, v1::ListAgentsRequest(), &resp);
    if (!st.ok()) return -1;
    int n = 0;
    for (const auto& a : resp.agents()) n += a.state() == state;
    return n;
  }
  bool WaitForAgents(const std::string& state, int n) {
    for (int i = 0; i < 200; ++i) {
      if (CountAgents(state) == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  cmax::testing::ScratchDir scratch;  // first: removed after the core is gone
  std::unique_ptr<CoordinatorCore> core;
  std::unique_ptr<CoordinatorService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Coordinator::Stub> stub;
};

struct Agent {
  std::unique_ptr<grpc::ClientContext> ctx = std::make_unique<grpc::ClientContext>();
  std::unique_ptr<Stream> stream;
};

// Opens an agent stream, says Hello as `node`, and reads until the Welcome
// and the first Ping have come (either order); answers the ping.
Agent Connect(Served& s, const std::string& node, const std::string& token = "secret token") {
  Agent a;
  s.Authorize(a.ctx.get(), token);
  a.stream = s.stub->Connect(a.ctx.get());
  v1::AgentMessage hello;
  *hello.mutable_hello() = HelloFrom(node);
  REQUIRE(a.stream->Write(hello));
  bool welcome = false, ping = false;
  v1::CoordinatorMessage m;
  while ((!welcome || !ping) && a.stream->Read(&m)) {
    welcome |= m.has_welcome();
    if (m.has_ping()) {
      ping = true;
      v1::AgentMessage pong;
      pong.mutable_pong()->set_t1_ns(m.ping().t1_ns());
      REQUIRE(a.stream->Write(pong));
    }
  }
  INFO(node);
  REQUIRE(welcome);
  REQUIRE(ping);
  return a;
}

}  // namespace

TEST_CASE("agent streams are welcomed and pinged, and their ends reach the core", "[service]") {
  Served s;
  std::vector<Agent> agents;
  for (int i = 0; i < 24; ++i) agents.push_back(Connect(s, absl::StrCat("node-", i)));
  CHECK(s.WaitForAgents("connected", 24));
  // Half the agents close their streams: the coordinator answers each with
  // its status, and the core marks those nodes disconnected.
  for (int i = 0; i < 12; ++i) {
    agents[i].stream->WritesDone();
    v1::CoordinatorMessage m;
    while (agents[i].stream->Read(&m)) {
    }
    grpc::Status st = agents[i].stream->Finish();
    INFO(st.error_message());
    CHECK(st.error_code() == grpc::StatusCode::UNAVAILABLE);
    CHECK(st.error_message() == "stream closed by the agent");
  }
  CHECK(s.WaitForAgents("disconnected", 12));
  CHECK(s.CountAgents("connected") == 12);
}

TEST_CASE("an agent stream without the right token is refused and never registered",
          "[service][security]") {
  Served s;
  for (const std::string token : {"", "wrong token"}) {
    grpc::ClientContext ctx;
    if (!token.empty()) s.Authorize(&ctx, token);
    auto stream = s.stub->Connect(&ctx);
    v1::AgentMessage hello;
    *hello.mutable_hello() = HelloFrom("intruder");
    stream->Write(hello);  // may fail once the refusal is in
    v1::CoordinatorMessage m;
    CHECK_FALSE(stream->Read(&m));
    grpc::Status st = stream->Finish();
    INFO("token '" << token << "': " << st.error_message());
    CHECK(st.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  }
  CHECK(s.CountAgents("connected") == 0);
  CHECK(s.CountAgents("disconnected") == 0);
  // Control: the right token is let in.
  Agent a = Connect(s, "node-0");
  CHECK(s.WaitForAgents("connected", 1));
}

TEST_CASE("each role calls what it may: the agent credential only the agent stream, an "
          "operator's token never the agent stream",
          "[service][security]") {
  Served s({.admin = "admin token", .run = "run token", .read = "read token",
            .agent = "agent token"});
  // An operator's token on the agent stream: refused, never registered.
  for (const std::string token : {"admin token", "run token", "read token"}) {
    grpc::ClientContext ctx;
    s.Authorize(&ctx, token);
    auto stream = s.stub->Connect(&ctx);
    v1::AgentMessage hello;
    *hello.mutable_hello() = HelloFrom("operator");
    stream->Write(hello);
    v1::CoordinatorMessage m;
    CHECK_FALSE(stream->Read(&m));
    grpc::Status st = stream->Finish();
    INFO(token << ": " << st.error_message());
    CHECK(st.error_code() == grpc::StatusCode::PERMISSION_DENIED);
    CHECK(absl::StrContains(st.error_message(), "is not an agent's credential"));
  }
  Agent a = Connect(s, "node-0", "agent token");
  auto list = [&](const std::string& token) {
    grpc::ClientContext ctx;
    s.Authorize(&ctx, token);
    v1::ListAgentsResponse resp;
    return s.stub->ListAgents(&ctx, v1::ListAgentsRequest(), &resp);
  };
  auto submit = [&](const std::string& token) {
    grpc::ClientContext ctx;
    s.Authorize(&ctx, token);
    v1::SubmitRunRequest req;
    v1::SubmitRunResponse resp;
    return s.stub->SubmitRun(&ctx, req, &resp);
  };
  auto schedule = [&](const std::string& token) {
    grpc::ClientContext ctx;
    s.Authorize(&ctx, token);
    v1::AddScheduleRequest req;
    v1::AddScheduleResponse resp;
    return s.stub->AddSchedule(&ctx, req, &resp);
  };
  auto cancel = [&](const std::string& token) {
    grpc::ClientContext ctx;
    s.Authorize(&ctx, token);
    v1::CancelRunRequest req;
    req.set_run_id("r-none");
    v1::CancelRunResponse resp;
    return s.stub->CancelRun(&ctx, req, &resp);
  };
  // The agent credential: refused every operator call.
  for (const grpc::Status& st :
       {list("agent token"), submit("agent token"), schedule("agent token"),
        cancel("agent token")}) {
    INFO(st.error_message());
    CHECK(st.error_code() == grpc::StatusCode::PERMISSION_DENIED);
    CHECK(absl::StrContains(st.error_message(), "accepted on the agent stream alone"));
  }
  // read: lists; neither submits, cancels nor schedules.
  CHECK(list("read token").ok());
  for (const grpc::Status& st : {submit("read token"), cancel("read token")}) {
    INFO(st.error_message());
    CHECK(st.error_code() == grpc::StatusCode::PERMISSION_DENIED);
    CHECK(absl::StrContains(st.error_message(), "needs the run role; this token has the read"));
  }
  // run: submits (the empty plan is refused for what it is, not for who
  // sent it), but schedules nothing; admin gets past the check too.
  grpc::Status run_submit = submit("run token");
  INFO(run_submit.error_message());
  CHECK(run_submit.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  grpc::Status run_schedule = schedule("run token");
  CHECK(run_schedule.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(absl::StrContains(run_schedule.error_message(), "AddSchedule needs the admin role"));
  grpc::Status admin_schedule = schedule("admin token");
  INFO(admin_schedule.error_message());
  CHECK(admin_schedule.error_code() != grpc::StatusCode::PERMISSION_DENIED);
  CHECK(admin_schedule.error_code() != grpc::StatusCode::UNAUTHENTICATED);
  // A token that matches no role.
  CHECK(list("no such token").error_code() == grpc::StatusCode::UNAUTHENTICATED);
}

TEST_CASE("the coordinator shuts down with agent streams open, and the agents see the end",
          "[service]") {
  Served s;
  std::vector<Agent> agents;
  for (int i = 0; i < 16; ++i) agents.push_back(Connect(s, absl::StrCat("node-", i)));
  REQUIRE(s.WaitForAgents("connected", 16));
  const auto t0 = std::chrono::steady_clock::now();
  s.Stop();  // server Shutdown, the core stopped
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("stop took " << stop_s << " s");
  CHECK(stop_s < 10);
  for (auto& a : agents) {
    v1::CoordinatorMessage m;
    while (a.stream->Read(&m)) {
    }
    CHECK_FALSE(a.stream->Finish().ok());
  }
}

}  // namespace cmax::coordinator
