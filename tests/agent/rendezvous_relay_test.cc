// The agent's rendezvous relay with real sockets and the real rank-side
// client (common/rendezvous_client.h); the coordinator is played by the test
// through a fake outbox.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "agent/rendezvous_relay.h"
#include "common/rendezvous_client.h"
#include "tests/agent/test_util.h"

using cmax::GroupPlace;
using cmax::RendezvousClient;
using cmax::agent::RelayEndpoint;
using cmax::agent::RelayOptions;
using cmax::agent::RendezvousRelay;
using cmax::agent::testing::TempDir;
using cmax::agent::testing::WaitFor;
using namespace std::chrono_literals;

namespace {

class FakeOutbox : public cmax::agent::Outbox {
 public:
  bool Send(uint64_t generation, cmax::v1::AgentMessage m) override {
    absl::MutexLock lock(&mu_);
    if (!up_ || generation != generation_) return false;
    sent_.push_back(std::move(m));
    return true;
  }
  bool HasRoom(uint64_t) const override { return true; }
  void SetUp(bool up, uint64_t generation) {
    absl::MutexLock lock(&mu_);
    up_ = up;
    generation_ = generation;
  }
  std::vector<cmax::v1::RendezvousRequest> Requests() {
    absl::MutexLock lock(&mu_);
    std::vector<cmax::v1::RendezvousRequest> out;
    for (const auto& m : sent_) out.push_back(m.rendezvous());
    return out;
  }
  size_t count() {
    absl::MutexLock lock(&mu_);
    return sent_.size();
  }

 private:
  absl::Mutex mu_;
  bool up_ = true;
  uint64_t generation_ = 1;
  std::vector<cmax::v1::AgentMessage> sent_;
};

GroupPlace Place(int rank, int world) {
  GroupPlace p;
  p.group = "run1.0.gang";
  p.rank = rank;
  p.world_size = world;
  return p;
}

cmax::v1::RendezvousReply Reply(uint64_t id, bool ok, const std::string& value,
                                const std::string& error = "") {
  cmax::v1::RendezvousReply r;
  r.set_request_id(id);
  r.set_ok(ok);
  r.set_value(value);
  r.set_error(error);
  return r;
}

struct Fixture {
  explicit Fixture(int64_t clock_offset_ns = 0) {
    RelayOptions o;
    o.work_dir = dir.path();
    o.clock_offset_ns = clock_offset_ns;
    o.grace_ms = 500;
    relay = std::make_unique<RendezvousRelay>(o, &outbox);
    REQUIRE(relay->Start().ok());
    relay->OnConnected(1);
  }
  TempDir dir;
  FakeOutbox outbox;
  std::unique_ptr<RendezvousRelay> relay;
};

}  // namespace

TEST_CASE("a rank's set goes up with the group and an agent id, the reply comes back",
          "[agent][rendezvous]") {
  Fixture f;
  auto ep = f.relay->Open("run1.0.gang", {0, 1}, "");
  REQUIRE(ep.ok());
  CHECK(ep->address == "unix:" + ep->socket_path);
  // Private: socket 0600 in a 0700 directory.
  struct stat st;
  REQUIRE(stat(ep->socket_path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(stat((f.dir.path() + "/rv").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);

  auto client = RendezvousClient::Connect(ep->address, Place(1, 2), "");
  REQUIRE(client.ok());
  auto done = std::async(std::launch::async, [&] { return (*client)->Set("addr/1", "10.0.0.2"); });
  REQUIRE(WaitFor([&] { return f.outbox.count() == 1; }, 5000ms));
  auto req = f.outbox.Requests()[0];
  CHECK(req.group() == "run1.0.gang");
  CHECK(req.op() == "set");
  CHECK(req.key() == "addr/1");
  CHECK(req.value() == "10.0.0.2");
  CHECK(req.rank() == 1);
  CHECK(req.request_id() > 0);
  f.relay->OnReply(Reply(req.request_id(), true, ""));
  CHECK(done.get().ok());

  // A second request gets a different agent id.
  auto get = std::async(std::launch::async,
                        [&] { return (*client)->Get("addr/0", absl::Seconds(5)); });
  REQUIRE(WaitFor([&] { return f.outbox.count() == 2; }, 5000ms));
  auto req2 = f.outbox.Requests()[1];
  CHECK(req2.request_id() != req.request_id());
  f.relay->OnReply(Reply(req2.request_id(), true, "10.0.0.1"));
  auto got = get.get();
  REQUIRE(got.ok());
  CHECK(*got == "10.0.0.1");

  // Errors from the coordinator reach the rank as status codes.
  auto big = std::async(std::launch::async, [&] { return (*client)->Set("big", "x"); });
  REQUIRE(WaitFor([&] { return f.outbox.count() == 3; }, 5000ms));
  f.relay->OnReply(Reply(f.outbox.Requests()[2].request_id(), false, "",
                         "value of 70000 bytes exceeds 65536"));
  absl::Status s = big.get();
  CHECK(absl::IsInvalidArgument(s));
  CHECK(std::string(s.message()).find("exceeds") != std::string::npos);

  f.relay->Close("run1.0.gang");
  CHECK(access(ep->socket_path.c_str(), F_OK) != 0);
  CHECK(f.relay->open_groups() == 0);
}

TEST_CASE("the relay refuses a rank it did not launch and oversized lines",
          "[agent][rendezvous]") {
  Fixture f;
  auto ep = f.relay->Open("run1.0.gang", {0, 1}, "");
  REQUIRE(ep.ok());
  auto client = RendezvousClient::Connect(ep->address, Place(2, 4), "");
  REQUIRE(client.ok());
  absl::Status s = (*client)->Set("k", "v");
  CHECK(absl::IsFailedPrecondition(s));
  CHECK(std::string(s.message()).find("rank 2 was not launched by this agent") !=
        std::string::npos);
  CHECK(f.outbox.count() == 0);

  // A line over 128 KiB (written raw: the client refuses such values
  // itself) is refused and the connection closed.
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, ep->socket_path.c_str(), sizeof(addr.sun_path) - 1);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  std::string line = "{\"op\": \"set\", \"key\": \"k\", \"value\": \"" +
                     std::string(140 * 1024, 'A') + "\"}\n";
  (void)!send(fd, line.data(), line.size(), MSG_NOSIGNAL);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) reply.append(buf, n);
  close(fd);
  CHECK(reply.find("too long") != std::string::npos);
  CHECK(f.outbox.count() == 0);
  // The client refuses an oversized value before sending it.
  auto ok_client = RendezvousClient::Connect(ep->address, Place(0, 2), "");
  REQUIRE(ok_client.ok());
  absl::Status big = (*ok_client)->Set("k", std::string(65 * 1024, 'x'));
  CHECK(absl::IsInvalidArgument(big));
  CHECK(f.outbox.count() == 0);
}

TEST_CASE("a barrier's start instant is converted from the agent's test clock",
          "[agent][rendezvous]") {
  Fixture f(400 * 1000000LL);  // the agent's clock runs 400 ms ahead
  auto ep = f.relay->Open("g", {0}, "");
  REQUIRE(ep.ok());
  auto client = RendezvousClient::Connect(ep->address, Place(0, 1), "");
  REQUIRE(client.ok());
  auto b = std::async(std::launch::async,
                      [&] { return (*client)->Barrier("start", absl::Seconds(5)); });
  REQUIRE(WaitFor([&] { return f.outbox.count() == 1; }, 5000ms));
  f.relay->OnReply(Reply(f.outbox.Requests()[0].request_id(), true, "1700000000400000000"));
  auto start = b.get();
  REQUIRE(start.ok());
  CHECK(*start == 1700000000000000000LL);
}

TEST_CASE("requests wait while the stream is down and go out after the reconnect",
          "[agent][rendezvous]") {
  Fixture f;
  f.outbox.SetUp(false, 1);
  auto ep = f.relay->Open("g", {0}, "");
  REQUIRE(ep.ok());
  auto client = RendezvousClient::Connect(ep->address, Place(0, 1), "");
  REQUIRE(client.ok());
  auto get = std::async(std::launch::async,
                        [&] { return (*client)->Get("k", absl::Seconds(10)); });
  REQUIRE(WaitFor([&] { return f.relay->pending_requests() == 1; }, 5000ms));
  std::this_thread::sleep_for(200ms);
  CHECK(f.outbox.count() == 0);
  f.outbox.SetUp(true, 2);
  f.relay->OnConnected(2);
  REQUIRE(WaitFor([&] { return f.outbox.count() == 1; }, 5000ms));
  f.relay->OnReply(Reply(f.outbox.Requests()[0].request_id(), true, "v"));
  auto v = get.get();
  REQUIRE(v.ok());
  CHECK(*v == "v");

  // Never reconnected: the request fails cleanly at its timeout.
  f.outbox.SetUp(false, 2);
  auto late = (*client)->Get("k2", absl::Milliseconds(300));
  CHECK(absl::IsDeadlineExceeded(late.status()));
  CHECK(std::string(late.status().message()).find("coordinator") != std::string::npos);
}

TEST_CASE("over TCP a rank must present the task's secret", "[agent][rendezvous]") {
  Fixture f;
  auto ep = f.relay->Open("g", {0, 1}, "127.0.0.1");
  REQUIRE(ep.ok());
  REQUIRE(ep->address.rfind("tcp://127.0.0.1:", 0) == 0);
  CHECK(ep->secret.size() == 32);
  auto wrong = RendezvousClient::Connect(ep->address, Place(1, 2), std::string(32, 'a'));
  REQUIRE(wrong.ok());
  absl::Status s = (*wrong)->Set("k", "v");
  CHECK_FALSE(s.ok());
  CHECK(std::string(s.message()).find("secret") != std::string::npos);
  CHECK(f.outbox.count() == 0);

  auto right = RendezvousClient::Connect(ep->address, Place(1, 2), ep->secret);
  REQUIRE(right.ok());
  auto set = std::async(std::launch::async, [&] { return (*right)->Set("k", "v"); });
  REQUIRE(WaitFor([&] { return f.outbox.count() == 1; }, 5000ms));
  f.relay->OnReply(Reply(f.outbox.Requests()[0].request_id(), true, ""));
  CHECK(set.get().ok());
  f.relay->Close("g");
  // After Close nothing answers on that port.
  auto after = RendezvousClient::Connect(ep->address, Place(1, 2), ep->secret);
  if (after.ok()) {
    CHECK_FALSE((*after)->Set("k", "v").ok());
  }
}
