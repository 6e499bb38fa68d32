#include "common/rendezvous_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cmax/v1/rendezvous.pb.h"
#include "common/time_util.h"
#include "google/protobuf/util/json_util.h"

namespace cmax {
namespace {

// A reply line holds at most a 64 KiB value, base64 encoded, plus framing.
constexpr size_t kMaxReplyLine = 256 * 1024;
// How long after a request's own timeout the client still waits for the
// agent's answer (the agent answers on its own by then).
constexpr int64_t kReplyGraceMs = 15000;
constexpr int64_t kConnectTimeoutMs = 10000;
constexpr size_t kMaxKeyBytes = 256;           // coordinator/rendezvous.h
constexpr size_t kMaxValueBytes = 64 * 1024;

std::string Env(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

bool EnvInt(const char* name, int* out) {
  std::string v = Env(name);
  return !v.empty() && absl::SimpleAtoi(v, out);
}

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", strerror(errno)));
}

// Waits until `fd` is ready for `events` or `deadline_mono_ns` passes.
// OK when ready; DEADLINE_EXCEEDED when not.
absl::Status WaitFd(int fd, short events, int64_t deadline_mono_ns) {
  for (;;) {
    int64_t left_ms = (deadline_mono_ns - MonotonicNs()) / 1000000;
    if (left_ms <= 0) return absl::DeadlineExceededError("timed out");
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 60000)));
    if (r > 0) return absl::OkStatus();
    if (r < 0 && errno != EINTR) return Errno("poll");
  }
}

absl::StatusOr<int> ConnectUnix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous socket path '", path, "' is empty or too long"));
  }
  memcpy(addr.sun_path, path.data(), path.size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    absl::Status s = Errno(absl::StrCat("cannot reach the agent at unix:", path));
    close(fd);
    return s;
  }
  return fd;
}

absl::StatusOr<int> ConnectTcp(const std::string& host_port) {
  size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous address 'tcp://", host_port, "' is not HOST:PORT"));
  }
  std::string host = host_port.substr(0, colon);
  std::string port = host_port.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int gai = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (gai != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", host_port, ": ", gai_strerror(gai)));
  }
  absl::Status last = absl::UnavailableError("no address");
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                   ai->ai_protocol);
    if (s < 0) {
      last = Errno("socket");
      continue;
    }
    int r = connect(s, ai->ai_addr, ai->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      absl::Status w = WaitFd(s, POLLOUT, MonotonicNs() + kConnectTimeoutMs * 1000000);
      int err = 0;
      socklen_t len = sizeof(err);
      if (w.ok() && getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        r = 0;
      } else {
        errno = w.ok() ? err : ETIMEDOUT;
      }
    }
    if (r != 0) {
      last = Errno(absl::StrCat("cannot reach the agent at tcp://", host_port));
      close(s);
      continue;
    }
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fd = s;
  }
  freeaddrinfo(res);
  if (fd < 0) return last;
  return fd;
}

absl::Status WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("writing to the agent");
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// The coordinator's and agent's reasons, as a status code a caller can test.
absl::Status ErrorToStatus(const std::string& op, const std::string& error) {
  std::string msg = absl::StrCat("rendezvous ", op, ": ", error);
  if (absl::StrContains(error, "timed out")) return absl::DeadlineExceededError(msg);
  if (absl::StrContains(error, "unknown group") || absl::StrContains(error, "group ended") ||
      absl::StrContains(error, "not part of the group") ||
      absl::StrContains(error, "not launched")) {
    return absl::FailedPreconditionError(msg);
  }
  if (absl::StrContains(error, "exceeds") || absl::StrContains(error, "must be") ||
      absl::StrContains(error, "outside") || absl::StrContains(error, "unknown op") ||
      absl::StrContains(error, "too many") || absl::StrContains(error, "malformed") ||
      absl::StrContains(error, "too long")) {
    return absl::InvalidArgumentError(msg);
  }
  if (absl::StrContains(error, "coordinator") || absl::StrContains(error, "secret")) {
    return absl::UnavailableError(msg);
  }
  return absl::UnknownError(msg);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RendezvousClient>> RendezvousClient::FromEnvironment() {
  std::string address = Env("CMAX_RENDEZVOUS");
  if (address.empty()) {
    return absl::FailedPreconditionError(
        "not a rank of a group task: CMAX_RENDEZVOUS is not set (run this suite with "
        "scope gang, barrier or pairs)");
  }
  GroupPlace place;
  place.group = Env("CMAX_GROUP");
  if (EnvInt("CMAX_RANK", &place.rank)) {
    EnvInt("CMAX_WORLD_SIZE", &place.world_size);
    EnvInt("CMAX_LOCAL_RANK", &place.local_rank);
    EnvInt("CMAX_LOCAL_WORLD_SIZE", &place.local_world_size);
  } else if (EnvInt("OMPI_COMM_WORLD_RANK", &place.rank)) {
    EnvInt("OMPI_COMM_WORLD_SIZE", &place.world_size);
    EnvInt("OMPI_COMM_WORLD_LOCAL_RANK", &place.local_rank);
    EnvInt("OMPI_COMM_WORLD_LOCAL_SIZE", &place.local_world_size);
  } else if (EnvInt("SLURM_PROCID", &place.rank)) {
    EnvInt("SLURM_NTASKS", &place.world_size);
    EnvInt("SLURM_LOCALID", &place.local_rank);
    if (!EnvInt("SLURM_NTASKS_PER_NODE", &place.local_world_size)) {
      place.local_world_size = 1;
    }
  } else {
    return absl::FailedPreconditionError(
        "CMAX_RENDEZVOUS is set but no rank is (CMAX_RANK, OMPI_COMM_WORLD_RANK or "
        "SLURM_PROCID)");
  }
  if (place.rank < 0 || place.world_size < 1 || place.rank >= place.world_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank ", place.rank, " outside world size ", place.world_size));
  }
  return Connect(address, place, Env("CMAX_RENDEZVOUS_SECRET"));
}

absl::StatusOr<std::unique_ptr<RendezvousClient>> RendezvousClient::Connect(
    const std::string& address, const GroupPlace& place, const std::string& secret) {
  absl::StatusOr<int> fd = absl::InvalidArgumentError("");
  if (absl::StartsWith(address, "unix:")) {
    fd = ConnectUnix(address.substr(5));
  } else if (absl::StartsWith(address, "tcp://")) {
    if (secret.empty()) {
      return absl::FailedPreconditionError(
          "a tcp:// rendezvous needs CMAX_RENDEZVOUS_SECRET");
    }
    fd = ConnectTcp(address.substr(6));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "rendezvous address '", address.substr(0, 200), "' is neither unix:PATH nor tcp://HOST:PORT"));
  }
  if (!fd.ok()) return fd.status();
  std::unique_ptr<RendezvousClient> client(new RendezvousClient(*fd, place));
  if (!secret.empty()) {
    // The secret is hex; it needs no JSON escaping. Anything else is refused
    // rather than escaped, so it never reaches the wire malformed.
    for (char ch : secret) {
      if (!isxdigit(static_cast<unsigned char>(ch))) {
        return absl::InvalidArgumentError("CMAX_RENDEZVOUS_SECRET is not hexadecimal");
      }
    }
    if (absl::Status s = WriteAll(*fd, absl::StrCat("{\"secret\": \"", secret, "\"}\n"));
        !s.ok()) {
      return s;
    }
  }
  return client;
}

RendezvousClient::~RendezvousClient() {
  if (fd_ >= 0) close(fd_);
}

absl::Status RendezvousClient::Set(const std::string& key, const std::string& value) {
  absl::StatusOr<std::string> r = Call("set", key, value, absl::Seconds(30));
  return r.status();
}

absl::StatusOr<std::string> RendezvousClient::Get(const std::string& key,
                                                  absl::Duration timeout) {
  return Call("get", key, "", timeout);
}

absl::StatusOr<int64_t> RendezvousClient::Barrier(const std::string& name,
                                                  absl::Duration timeout) {
  absl::StatusOr<std::string> r = Call("barrier", name, "", timeout);
  if (!r.ok()) return r.status();
  int64_t start = 0;
  if (!absl::SimpleAtoi(*r, &start)) {
    return absl::InternalError(
        absl::StrCat("barrier '", name, "': the start instant '", r->substr(0, 64),
                     "' is not a number"));
  }
  return start;
}

absl::StatusOr<std::string> RendezvousClient::Call(const std::string& op,
                                                   const std::string& key,
                                                   const std::string& value,
                                                   absl::Duration timeout) {
  if (fd_ < 0) return absl::UnavailableError("the connection to the agent is closed");
  // The coordinator's limits, checked here too so a rank learns of them
  // without a round trip (coordinator/rendezvous.h).
  if (key.empty() || key.size() > kMaxKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous ", op, ": key must be 1 to ", kMaxKeyBytes, " bytes"));
  }
  if (value.size() > kMaxValueBytes) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous ", op, ": value of ", value.size(),
                                                   " bytes exceeds ", kMaxValueBytes));
  }
  int64_t timeout_ms = absl::ToInt64Milliseconds(timeout);
  if (timeout_ms <= 0) timeout_ms = 1;
  v1::RendezvousRequest req;
  req.set_request_id(++next_id_);
  req.set_op(op);
  req.set_key(key);
  req.set_value(value);
  req.set_timeout_ms(timeout_ms);
  req.set_rank(place_.rank);
  std::string line;
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(req, &line, print).ok()) {
    return absl::InternalError("cannot encode the request");
  }
  line.push_back('\n');
  absl::Status written = WriteAll(fd_, line);
  if (!written.ok()) {
    // The agent may have refused the request and closed: its reason is
    // more useful than EPIPE.
    char buf[4096];
    if (WaitFd(fd_, POLLIN, MonotonicNs() + 1000000000).ok()) {
      ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) buffer_.append(buf, static_cast<size_t>(n));
    }
    size_t nl = buffer_.find('\n');
    v1::RendezvousReply reply;
    if (nl != std::string::npos &&
        google::protobuf::util::JsonStringToMessage(buffer_.substr(0, nl), &reply).ok() &&
        !reply.ok()) {
      buffer_.erase(0, nl + 1);
      return ErrorToStatus(op, reply.error());
    }
    return written;
  }

  const int64_t deadline = MonotonicNs() + (timeout_ms + kReplyGraceMs) * 1000000;
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string reply_line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      v1::RendezvousReply reply;
      google::protobuf::util::JsonParseOptions parse;
      parse.ignore_unknown_fields = true;
      if (!google::protobuf::util::JsonStringToMessage(reply_line, &reply, parse).ok()) {
        return absl::InternalError(
            absl::StrCat("malformed reply from the agent: ", reply_line.substr(0, 200)));
      }
      // request_id 0: a connection-level error (bad secret, oversized line).
      if (reply.request_id() != 0 && reply.request_id() != req.request_id()) continue;
      if (!reply.ok()) return ErrorToStatus(op, reply.error());
      return reply.value();
    }
    if (buffer_.size() > kMaxReplyLine) {
      return absl::InternalError("reply from the agent exceeds 256 KiB");
    }
    absl::Status w = WaitFd(fd_, POLLIN, deadline);
    if (!w.ok()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rendezvous ", op, " '", key, "': no answer from the agent within ",
          timeout_ms + kReplyGraceMs, " ms"));
    }
    char buf[16384];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("reading from the agent");
    }
    if (n == 0) {
      close(fd_);
      fd_ = -1;
      return absl::UnavailableError(
          absl::StrCat("rendezvous ", op, " '", key, "': the agent closed the connection"));
    }
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace cmax
