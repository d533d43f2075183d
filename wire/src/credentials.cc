#include "taot/wire/credentials.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace taot::wire {
namespace {

absl::StatusOr<std::string> ReadPem(const PemFile& file) {
  std::ifstream in(file.path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(file.field, ": cannot read '", file.path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::Status BothOrNeither(const PemFile& cert, const PemFile& key) {
  if (cert.path.empty() == key.path.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(cert.field, ", ", key.field, ": give both for mutual TLS, or neither"));
}

// Reads `file` into `out` when it is given.
absl::Status ReadIfGiven(const PemFile& file, std::string& out) {
  if (file.path.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> pem = ReadPem(file);
  if (!pem.ok()) return pem.status();
  out = *std::move(pem);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(const ClientTls& tls) {
  if (tls.ca.path.empty() && tls.cert.path.empty() && tls.key.path.empty()) return grpc::InsecureChannelCredentials();
  if (absl::Status s = BothOrNeither(tls.cert, tls.key); !s.ok()) return s;
  grpc::SslCredentialsOptions ssl;
  for (auto [file, out] : {std::pair{&tls.ca, &ssl.pem_root_certs}, std::pair{&tls.cert, &ssl.pem_cert_chain},
                           std::pair{&tls.key, &ssl.pem_private_key}}) {
    if (absl::Status s = ReadIfGiven(*file, *out); !s.ok()) return s;
  }
  return grpc::SslCredentials(ssl);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const ServerTls& tls) {
  if (absl::Status s = BothOrNeither(tls.cert, tls.key); !s.ok()) return s;
  if (tls.cert.path.empty()) {
    if (!tls.client_ca.path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(tls.client_ca.field, ": needs ", tls.cert.field, " and ", tls.key.field));
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  if (absl::Status s = ReadIfGiven(tls.cert, pair.cert_chain); !s.ok()) return s;
  if (absl::Status s = ReadIfGiven(tls.key, pair.private_key); !s.ok()) return s;
  options.pem_key_cert_pairs.push_back(std::move(pair));
  if (!tls.client_ca.path.empty()) {
    if (absl::Status s = ReadIfGiven(tls.client_ca, options.pem_root_certs); !s.ok()) return s;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace taot::wire
