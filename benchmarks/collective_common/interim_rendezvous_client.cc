// INTERIM implementation of common/rendezvous_client.h, compiled into the
// collective suites ONLY while common/rendezvous_client.cc does not exist
// (see benchmarks/collective_common/CMakeLists.txt). The real client is being
// written elsewhere; drop this file once it lands. It speaks the contract of
// the header: one JSON line per cmax.v1.RendezvousRequest and per reply, over
// unix:/path or tcp://host:port (tcp sends {"secret": "..."} first).
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cmax/v1/rendezvous.pb.h"
#include "common/rendezvous_client.h"
#include "google/protobuf/util/json_util.h"

namespace cmax {
namespace {

absl::Status WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat("rendezvous write: ", strerror(errno)));
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

int EnvInt(const char* a, const char* b, const char* c, int def) {
  for (const char* name : {a, b, c}) {
    if (name == nullptr) continue;
    const char* v = std::getenv(name);
    int out = 0;
    if (v != nullptr && absl::SimpleAtoi(v, &out)) return out;
  }
  return def;
}

absl::StatusOr<int> Dial(const std::string& address) {
  if (absl::StartsWith(address, "unix:")) {
    const std::string path = address.substr(5);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (path.size() >= sizeof(sa.sun_path)) return absl::InvalidArgumentError("socket path too long");
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::InternalError(strerror(errno));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
      const std::string why = strerror(errno);
      ::close(fd);
      return absl::UnavailableError(absl::StrCat("connect ", address, ": ", why));
    }
    return fd;
  }
  if (absl::StartsWith(address, "tcp://")) {
    std::string hp = address.substr(6);
    size_t colon = hp.rfind(':');
    if (colon == std::string::npos) return absl::InvalidArgumentError("tcp address without port");
    std::string host = hp.substr(0, colon), port = hp.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot resolve ", address));
    }
    int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -1 : ::connect(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0) {
      const std::string why = strerror(errno);
      if (fd >= 0) ::close(fd);
      return absl::UnavailableError(absl::StrCat("connect ", address, ": ", why));
    }
    return fd;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown rendezvous address '", address, "'"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<RendezvousClient>> RendezvousClient::FromEnvironment() {
  const char* addr = std::getenv("CMAX_RENDEZVOUS");
  if (addr == nullptr || *addr == '\0') {
    return absl::FailedPreconditionError("not a rank of a group task (no CMAX_RENDEZVOUS)");
  }
  GroupPlace place;
  if (const char* g = std::getenv("CMAX_GROUP")) place.group = g;
  place.rank = EnvInt("CMAX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", 0);
  place.world_size = EnvInt("CMAX_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", 1);
  place.local_rank = EnvInt("CMAX_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", 0);
  place.local_world_size =
      EnvInt("CMAX_LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", nullptr, 1);
  const char* secret = std::getenv("CMAX_RENDEZVOUS_SECRET");
  return Connect(addr, place, secret ? secret : "");
}

absl::StatusOr<std::unique_ptr<RendezvousClient>> RendezvousClient::Connect(
    const std::string& address, const GroupPlace& place, const std::string& secret) {
  auto fd = Dial(address);
  if (!fd.ok()) return fd.status();
  if (absl::StartsWith(address, "tcp://")) {
    if (auto s = WriteAll(*fd, absl::StrCat("{\"secret\": \"", secret, "\"}\n")); !s.ok()) {
      ::close(*fd);
      return s;
    }
  }
  return std::unique_ptr<RendezvousClient>(new RendezvousClient(*fd, place));
}

RendezvousClient::~RendezvousClient() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<std::string> RendezvousClient::Call(const std::string& op, const std::string& key,
                                                   const std::string& value,
                                                   absl::Duration timeout) {
  v1::RendezvousRequest req;
  req.set_op(op);
  req.set_key(key);
  req.set_value(value);
  req.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  req.set_rank(place_.rank);
  req.set_group(place_.group);
  std::string line;
  google::protobuf::util::JsonPrintOptions po;
  po.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(req, &line, po).ok()) {
    return absl::InternalError("cannot encode rendezvous request");
  }
  line.push_back('\n');
  if (auto s = WriteAll(fd_, line); !s.ok()) return s;
  // The agent answers within the request's timeout; allow a margin.
  const absl::Time deadline = absl::Now() + timeout + absl::Seconds(10);
  while (true) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string reply_line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      v1::RendezvousReply reply;
      google::protobuf::util::JsonParseOptions jo;
      jo.ignore_unknown_fields = true;
      if (!google::protobuf::util::JsonStringToMessage(reply_line, &reply, jo).ok()) {
        return absl::InternalError(absl::StrCat("bad rendezvous reply: ", reply_line));
      }
      if (!reply.ok()) {
        if (absl::StrContains(reply.error(), "timeout") ||
            absl::StrContains(reply.error(), "deadline")) {
          return absl::DeadlineExceededError(reply.error());
        }
        return absl::UnavailableError(reply.error());
      }
      return reply.value();
    }
    const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left_ms <= 0) return absl::DeadlineExceededError(absl::StrCat("rendezvous ", op, " ", key));
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("rendezvous connection closed");
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

absl::Status RendezvousClient::Set(const std::string& key, const std::string& value) {
  return Call("set", key, value, absl::Seconds(30)).status();
}

absl::StatusOr<std::string> RendezvousClient::Get(const std::string& key, absl::Duration timeout) {
  return Call("get", key, "", timeout);
}

absl::StatusOr<int64_t> RendezvousClient::Barrier(const std::string& name,
                                                  absl::Duration timeout) {
  auto v = Call("barrier", name, "", timeout);
  if (!v.ok()) return v.status();
  int64_t at = 0;
  if (!absl::SimpleAtoi(*v, &at)) at = absl::ToUnixNanos(absl::Now());
  return at;
}

}  // namespace cmax
