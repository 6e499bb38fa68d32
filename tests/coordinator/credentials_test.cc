// Roles, secrets and certificate-bound addresses (coordinator/credentials.h).
#include "coordinator/credentials.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"

namespace cmax::coordinator {
namespace {

const Credentials kAll = {.admin = "admin", .run = "run", .read = "read", .agent = "agent"};

bool NoNode(const std::string&) { return false; }

}  // namespace

TEST_CASE("each secret has one role, and two roles never share one", "[credentials][security]") {
  CHECK(RoleOfToken(kAll, "admin") == Role::kAdmin);
  CHECK(RoleOfToken(kAll, "run") == Role::kRun);
  CHECK(RoleOfToken(kAll, "read") == Role::kRead);
  CHECK(RoleOfToken(kAll, "agent") == Role::kAgent);
  CHECK(RoleOfToken(kAll, "agen") == Role::kNone);
  CHECK(RoleOfToken(kAll, "") == Role::kNone);
  CHECK(RoleOfToken(Credentials{}, "anything") == Role::kAdmin);  // --no-token

  CHECK(ValidateCredentials(kAll).ok());
  absl::Status twin = ValidateCredentials({.admin = "same", .agent = "same"});
  CHECK(absl::StrContains(twin.message(),
                          "--agent-token-file holds the same token as --token-file"));
  absl::Status read_run = ValidateCredentials({.admin = "a", .run = "x", .read = "x"});
  CHECK(absl::StrContains(read_run.message(), "--read-token-file holds the same token as "
                                              "--run-token-file"));
  absl::Status lone = ValidateCredentials({.agent = "agent"});
  CHECK(absl::StrContains(lone.message(), "--agent-token-file needs --token-file"));
}

TEST_CASE("operator calls: the role decides, the agent credential and a node's certificate "
          "never pass",
          "[credentials][security]") {
  CHECK(AuthorizeOperatorCall(kAll, Role::kRead, Role::kRead, "ListRuns", {}, NoNode).ok());
  CHECK(AuthorizeOperatorCall(kAll, Role::kAdmin, Role::kRun, "SubmitRun", {}, NoNode).ok());
  absl::Status low = AuthorizeOperatorCall(kAll, Role::kRun, Role::kAdmin, "AddSchedule", {}, NoNode);
  CHECK(absl::IsPermissionDenied(low));
  CHECK(absl::StrContains(low.message(), "AddSchedule needs the admin role; this token has the "
                                         "run role"));
  absl::Status agent = AuthorizeOperatorCall(kAll, Role::kAgent, Role::kRead, "ListAgents", {}, NoNode);
  CHECK(absl::IsPermissionDenied(agent));
  CHECK(absl::StrContains(agent.message(), "accepted on the agent stream alone"));
  CHECK(absl::IsUnauthenticated(
      AuthorizeOperatorCall(kAll, Role::kNone, Role::kRead, "ListRuns", {}, NoNode)));
  // A node's certificate with the admin token, and under --no-token too.
  auto is_node = [](const std::string& n) { return n == "node-1"; };
  for (const Credentials& c : {kAll, Credentials{}}) {
    absl::Status cert = AuthorizeOperatorCall(c, Role::kAdmin, Role::kRead, "ListRuns",
                                              {"node-1", "10.0.0.11"}, is_node);
    CHECK(absl::IsPermissionDenied(cert));
    CHECK(absl::StrContains(cert.message(), "names node 'node-1'"));
  }
  CHECK(AuthorizeOperatorCall(kAll, Role::kAdmin, Role::kRead, "ListRuns", {"cmaxctl"}, is_node)
            .ok());
}

TEST_CASE("the agent stream takes the agent credential, or the shared token where none is "
          "configured",
          "[credentials][security]") {
  CHECK(AuthorizeAgentStream(kAll, Role::kAgent).ok());
  CHECK(absl::IsPermissionDenied(AuthorizeAgentStream(kAll, Role::kAdmin)));
  CHECK(absl::IsPermissionDenied(AuthorizeAgentStream(kAll, Role::kRead)));
  CHECK(absl::IsUnauthenticated(AuthorizeAgentStream(kAll, Role::kNone)));
  const Credentials shared = {.admin = "admin"};
  CHECK(AuthorizeAgentStream(shared, Role::kAdmin).ok());
  CHECK(AuthorizeAgentStream(Credentials{}, Role::kAdmin).ok());
}

TEST_CASE("under mutual TLS an agent declares only the addresses its certificate or its "
          "connection names",
          "[credentials][security]") {
  std::vector<std::string> dropped;
  auto kept = AddressesBoundToCertificate({"node-1", "10.0.0.11"}, "ipv4:10.0.0.12:40000",
                                          {"10.0.0.11", "10.0.0.12", "192.0.2.66"}, &dropped);
  CHECK(kept == std::vector<std::string>{"10.0.0.11", "10.0.0.12"});
  CHECK(dropped == std::vector<std::string>{"192.0.2.66"});
  // Nothing it declared is bound: the address it connects from stands in.
  dropped.clear();
  kept = AddressesBoundToCertificate({"node-1"}, "ipv6:[fd00::5]:40000", {"192.0.2.66"}, &dropped);
  CHECK(kept == std::vector<std::string>{"fd00::5"});
  CHECK(dropped == std::vector<std::string>{"192.0.2.66"});
  // Without client certificates nothing is bound (the token is the credential).
  kept = AddressesBoundToCertificate({}, "ipv4:10.0.0.12:40000", {"192.0.2.66"}, nullptr);
  CHECK(kept == std::vector<std::string>{"192.0.2.66"});
}

}  // namespace cmax::coordinator
