// Who may call what on the coordinator's gRPC API (docs/security.md).
//
// Every caller presents a bearer token; the token's role decides the calls it
// may make:
//
//   agent  Connect (the agent stream) and nothing else
//   read   the read calls: agents, runs, watch, reports, export, history,
//          schedules listed
//   run    read, and SubmitRun and CancelRun
//   admin  everything an operator may do: run, and adding or changing
//          schedules (work that repeats unattended)
//
// The agent credential is never an operator's: a node's root holds it, and a
// record a node sends must not be able to turn into a run, a cancel or a
// drain of another node. Under mutual TLS a certificate that names a node the
// coordinator knows is a node's, and is refused on every operator call
// whatever token comes with it.
//
// Pure functions; thread-compatible.
#ifndef CMAX_COORDINATOR_CREDENTIALS_H_
#define CMAX_COORDINATOR_CREDENTIALS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cmax::coordinator {

// Ordered: each operator role may do what the roles below it may.
enum class Role { kNone = 0, kAgent, kRead, kRun, kAdmin };

// "agent", "read", "run", "admin"; "none".
absl::string_view RoleName(Role role);

// The secrets the coordinator was started with. Empty: not configured.
struct Credentials {
  std::string admin;  // --token-file; empty only with --no-token
  std::string run;    // --run-token-file
  std::string read;   // --read-token-file
  // --agent-token-file. Empty: agents present `admin` (the shared token of
  // older installations; the coordinator warns at start).
  std::string agent;

  bool open() const { return admin.empty(); }  // --no-token: no checks at all
};

// OK when the configured secrets are pairwise different and none is set
// without `admin`; else INVALID_ARGUMENT naming the two flags.
absl::Status ValidateCredentials(const Credentials& c);

// The role of the bearer token a caller presented (compared in constant
// time with each configured secret); kNone when it matches none. With
// `c.open()` every caller is kAdmin.
Role RoleOfToken(const Credentials& c, absl::string_view presented);

// What an operator call (every call but Connect) needs. `call` names the
// call for the error ("SubmitRun"). `certificate_names`: the client
// certificate's names (empty without one); `is_node(name)`: whether the
// coordinator knows a node of that name.
//   OK                 role >= needed, and no certificate name is a node's
//   UNAUTHENTICATED    the token matched no secret
//   PERMISSION_DENIED  the agent credential, a node's certificate, or a role
//                      below `needed`; the message says which and what to use
absl::Status AuthorizeOperatorCall(const Credentials& c, Role presented, Role needed,
                                   absl::string_view call,
                                   const std::vector<std::string>& certificate_names,
                                   const std::function<bool(const std::string&)>& is_node);

// What the agent stream needs: the agent credential, or (no agent credential
// configured) the admin token. UNAUTHENTICATED for a token that matched no
// secret; PERMISSION_DENIED for an operator's token where an agent
// credential is configured: an operator's token is not an agent's, as the
// agent's is not an operator's.
absl::Status AuthorizeAgentStream(const Credentials& c, Role presented);

// Under mutual TLS, the addresses an agent's Hello may declare (they become
// the peer addresses of group tasks and mpirun's --host): those its client
// certificate names (subject alternative names, IP or DNS) and the IP its
// stream comes from (`peer` as gRPC gives it: "ipv4:10.0.0.5:43210",
// "ipv6:[fd00::5]:43210"). Returns the declared addresses kept, in their
// order (the stream's IP alone when none is); the others go to `dropped`.
// With no certificate names (no mutual TLS) every address is kept.
std::vector<std::string> AddressesBoundToCertificate(
    const std::vector<std::string>& certificate_names, absl::string_view peer,
    const std::vector<std::string>& declared, std::vector<std::string>* dropped);

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_CREDENTIALS_H_
