// How cmaxctl reaches the coordinator: address, TLS and bearer token.
#ifndef CMAX_COORDINATOR_CTL_CLIENT_H_
#define CMAX_COORDINATOR_CTL_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cmax/v1/service.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace cmax::ctl {

struct ClientOptions {
  std::string coordinator = "127.0.0.1:8470";
  std::string token_file;
  std::string tls_ca;    // server CA: TLS on when set
  std::string tls_cert;  // client certificate (mutual TLS)
  std::string tls_key;
  // Send the token without TLS to a non-loopback coordinator (warned on
  // stderr); without it Create refuses (see common/net_address.h).
  bool allow_insecure = false;
};

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Create(const ClientOptions& options);
  // A context carrying the token and a deadline (0: none).
  std::unique_ptr<grpc::ClientContext> Context(int deadline_seconds = 30) const;
  v1::Coordinator::Stub* stub() { return stub_.get(); }
  const std::string& address() const { return address_; }

 private:
  std::string address_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

// "cannot reach the coordinator at X: ..." for UNAVAILABLE, the message
// otherwise.
std::string Describe(const grpc::Status& status, const std::string& address);

// Prints Describe's line to stderr ("cmaxctl: ...") and returns
// ExitCodeFor(status).
int RpcError(const grpc::Status& status, const Client& client);
// The exit code for a failed call (the codes README.md lists): 3 unreachable
// or timed out, 6 credentials refused, 2 a request the coordinator refused,
// 1 anything else.
int ExitCodeFor(const grpc::Status& status);

}  // namespace cmax::ctl

#endif  // CMAX_COORDINATOR_CTL_CLIENT_H_
