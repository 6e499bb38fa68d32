#include "coordinator/ctl/client.h"

#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/net_address.h"
#include "common/secrets.h"
#include "common/status_macros.h"
#include "coordinator/ctl/progress.h"

namespace cmax::ctl {

absl::StatusOr<std::unique_ptr<Client>> Client::Create(const ClientOptions& options) {
  auto c = std::unique_ptr<Client>(new Client());
  c->address_ = options.coordinator;
  if (!options.token_file.empty()) {
    CMAX_ASSIGN_OR_RETURN(c->token_, ReadTokenFile(options.token_file));
  }
  const bool tls = !options.tls_ca.empty() || !options.tls_cert.empty();
  CMAX_RETURN_IF_ERROR(CheckTokenTransport("cmaxctl", options.coordinator, !c->token_.empty(),
                                           tls, options.allow_insecure));
  if (!c->token_.empty() && !tls && !IsLoopbackTarget(options.coordinator)) {
    std::fprintf(stderr,
                 "cmaxctl: INSECURE: --allow-insecure: sending the token in clear text to %s\n",
                 options.coordinator.c_str());
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca.empty()) {
      CMAX_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadSmallFile(options.tls_ca));
    }
    if (!options.tls_cert.empty() || !options.tls_key.empty()) {
      CMAX_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadSmallFile(options.tls_cert));
      CMAX_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadSmallFile(options.tls_key));
    }
    creds = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  c->channel_ = grpc::CreateCustomChannel(options.coordinator, creds, args);
  c->stub_ = v1::Coordinator::NewStub(c->channel_);
  return c;
}

std::unique_ptr<grpc::ClientContext> Client::Context(int deadline_seconds) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
  if (deadline_seconds > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(deadline_seconds));
  }
  return ctx;
}

std::string Describe(const grpc::Status& status, const std::string& address) {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::StrCat("cannot reach the coordinator at ", address, ": ",
                        status.error_message());
  }
  if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    return absl::StrCat("the coordinator refused the credentials: ", status.error_message());
  }
  if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    return absl::StrCat("the coordinator refused this credential the call: ",
                        status.error_message());
  }
  return status.error_message();
}

int RpcError(const grpc::Status& status, const Client& client) {
  std::fprintf(stderr, "cmaxctl: %s\n", Describe(status, client.address()).c_str());
  return ExitCodeFor(status);
}

int ExitCodeFor(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitUnfinished;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return kExitCredentials;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return kExitUsage;
    default:
      return kExitFailed;
  }
}

}  // namespace cmax::ctl
