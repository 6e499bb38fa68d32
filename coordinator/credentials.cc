#include "coordinator/credentials.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/secrets.h"

namespace cmax::coordinator {
namespace {

// The flag each role's secret comes from, for error messages.
absl::string_view FlagOf(Role role) {
  switch (role) {
    case Role::kAgent:
      return "--agent-token-file";
    case Role::kRead:
      return "--read-token-file";
    case Role::kRun:
      return "--run-token-file";
    case Role::kAdmin:
      return "--token-file";
    case Role::kNone:
      break;
  }
  return "";
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kAgent:
      return "agent";
    case Role::kRead:
      return "read";
    case Role::kRun:
      return "run";
    case Role::kAdmin:
      return "admin";
    case Role::kNone:
      break;
  }
  return "none";
}

absl::Status ValidateCredentials(const Credentials& c) {
  const std::pair<Role, const std::string*> secrets[] = {
      {Role::kAdmin, &c.admin}, {Role::kRun, &c.run}, {Role::kRead, &c.read},
      {Role::kAgent, &c.agent}};
  for (const auto& [role, secret] : secrets) {
    if (role != Role::kAdmin && !secret->empty() && c.admin.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(FlagOf(role), " needs --token-file"));
    }
  }
  for (size_t i = 0; i < std::size(secrets); ++i) {
    for (size_t j = i + 1; j < std::size(secrets); ++j) {
      if (!secrets[i].second->empty() && *secrets[i].second == *secrets[j].second) {
        return absl::InvalidArgumentError(
            absl::StrCat(FlagOf(secrets[j].first), " holds the same token as ",
                         FlagOf(secrets[i].first), ": each role needs a secret of its own"));
      }
    }
  }
  return absl::OkStatus();
}

Role RoleOfToken(const Credentials& c, absl::string_view presented) {
  if (c.open()) return Role::kAdmin;
  const std::string given(presented);
  // Every configured secret is compared, whichever matches, so the time
  // taken says nothing about which role a guess came close to.
  Role role = Role::kNone;
  const std::pair<Role, const std::string*> secrets[] = {
      {Role::kAdmin, &c.admin}, {Role::kRun, &c.run}, {Role::kRead, &c.read},
      {Role::kAgent, &c.agent}};
  for (const auto& [r, secret] : secrets) {
    if (!secret->empty() && SameSecret(given, *secret) && role == Role::kNone) role = r;
  }
  return role;
}

absl::Status AuthorizeOperatorCall(const Credentials& c, Role presented, Role needed,
                                   absl::string_view call,
                                   const std::vector<std::string>& certificate_names,
                                   const std::function<bool(const std::string&)>& is_node) {
  for (const std::string& name : certificate_names) {
    if (is_node && is_node(name)) {
      return absl::PermissionDeniedError(absl::StrCat(
          call, ": the client certificate names node '", name,
          "': a node's certificate never acts as an operator; use an operator's certificate "
          "(deploy/gen-certs.sh ... cmaxctl)"));
    }
  }
  if (c.open()) return absl::OkStatus();
  if (presented == Role::kNone) {
    return absl::UnauthenticatedError("missing or wrong bearer token (see --token-file)");
  }
  if (presented == Role::kAgent) {
    return absl::PermissionDeniedError(absl::StrCat(
        call, ": this is the agent credential, accepted on the agent stream alone; operators "
              "use the operator token (cmaxctl --token-file, /etc/cmax/token)"));
  }
  if (presented < needed) {
    return absl::PermissionDeniedError(absl::StrCat(
        call, " needs the ", RoleName(needed), " role; this token has the ", RoleName(presented),
        " role (the coordinator's ", FlagOf(needed), needed == Role::kAdmin ? "" : " or --token-file",
        " holds one that may)"));
  }
  return absl::OkStatus();
}

absl::Status AuthorizeAgentStream(const Credentials& c, Role presented) {
  if (c.open()) return absl::OkStatus();
  const Role agent_role = c.agent.empty() ? Role::kAdmin : Role::kAgent;
  if (presented == agent_role) return absl::OkStatus();
  if (presented == Role::kNone) {
    return absl::UnauthenticatedError("missing or wrong bearer token (see --token-file)");
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "an operator's token (", RoleName(presented),
      " role) is not an agent's credential: agents present the coordinator's "
      "--agent-token-file (/etc/cmax/agent-token)"));
}

std::vector<std::string> AddressesBoundToCertificate(
    const std::vector<std::string>& certificate_names, absl::string_view peer,
    const std::vector<std::string>& declared, std::vector<std::string>* dropped) {
  if (certificate_names.empty()) return declared;
  // "ipv4:10.0.0.5:43210" -> "10.0.0.5"; "ipv6:[fd00::5]:43210" -> "fd00::5".
  std::string peer_ip;
  if (absl::ConsumePrefix(&peer, "ipv4:")) {
    peer_ip = std::string(peer.substr(0, peer.rfind(':')));
  } else if (absl::ConsumePrefix(&peer, "ipv6:") && absl::ConsumePrefix(&peer, "[")) {
    peer_ip = std::string(peer.substr(0, peer.find(']')));
  }
  std::vector<std::string> kept;
  for (const std::string& address : declared) {
    const bool named = address == peer_ip ||
                       std::find(certificate_names.begin(), certificate_names.end(), address) !=
                           certificate_names.end();
    if (named) {
      kept.push_back(address);
    } else if (dropped) {
      dropped->push_back(address);
    }
  }
  if (kept.empty() && !peer_ip.empty()) kept.push_back(peer_ip);
  return kept;
}

}  // namespace cmax::coordinator
