// Shared by the rendezvous relay's own files only (agent/rendezvous_*.cc);
// nothing outside them includes it. What the relay does is described in
// agent/rendezvous_relay.h; its code lies in one file per idea:
//
//   rendezvous_relay.cc      the relay thread: start, stop, the wake pipe and
//                            the poll loop over every socket;
//   rendezvous_endpoints.cc  the group table: opening a group's Unix socket
//                            (and TCP listener with its random secret),
//                            accepting connections, closing connections and
//                            groups;
//   rendezvous_wire.cc       the ranks' side: reading JSON request lines, the
//                            TCP secret, per-line checks and limits, writing
//                            replies and errors back;
//   rendezvous_requests.cc   the coordinator's side: sending requests over
//                            the stream, resending after a reconnect, routing
//                            replies (barrier instants into the real clock),
//                            request timeouts and unauthenticated TCP
//                            connections that stay silent.
#ifndef CMAX_AGENT_RENDEZVOUS_RELAY_INTERNAL_H_
#define CMAX_AGENT_RENDEZVOUS_RELAY_INTERNAL_H_

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/rendezvous_relay.h"

namespace cmax::agent {

// `what: strerror(errno)` as an internal error.
inline absl::Status RelayErrno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

struct RendezvousRelay::Group {
  std::string name;
  std::set<int> ranks;
  std::string socket_path;
  int unix_fd = -1;
  int tcp_fd = -1;
  std::string secret;
  std::string tcp_address;
  int connections = 0;
};

struct RendezvousRelay::Conn {
  uint64_t id = 0;
  int fd = -1;
  std::string group;
  bool tcp = false;
  bool authed = false;
  int64_t accepted_mono_ns = 0;
  std::string in;
  std::string out;
  int outstanding = 0;
  bool close_after_flush = false;
};

}  // namespace cmax::agent

#endif  // CMAX_AGENT_RENDEZVOUS_RELAY_INTERNAL_H_
