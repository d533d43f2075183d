// TLS credentials from PEM files, for both ends of the wire: the daemon's server, and the
// clients that call it (libtaot_client, taotctl). Errors name the file as the caller's user
// knows it (a flag, an option field).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"

namespace taot::wire {

struct PemFile {
  std::string field;  // how errors name it: "--tls-cert", "tls_ca"
  std::string path;   // empty: not given
};

// A client's: `ca` signed the daemon's certificate (empty: the system's roots); `cert` and `key`
// (both or neither) are the client's own, for mutual TLS. All three empty: plaintext.
struct ClientTls {
  PemFile ca, cert, key;
};
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(const ClientTls& tls);

// The daemon's: `cert` and `key` (both or neither; neither: plaintext), and `client_ca` for
// mutual TLS (clients must present a certificate it signed).
struct ServerTls {
  PemFile cert, key, client_ca;
};
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const ServerTls& tls);

}  // namespace taot::wire
