#include "taot/wire/credentials.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace taot::wire {
namespace {

// A readable file; gRPC parses the PEM only at the handshake, which the daemon's tests cover.
class CredentialsTest : public ::testing::Test {
 protected:
  // A file of this process and this test alone: ctest runs the tests of this fixture in parallel
  // processes, and other checkouts share the temporary folder.
  void SetUp() override {
    path_ = absl::StrCat(testing::TempDir(), "/taot_credentials_test.", getpid(), ".",
                         testing::UnitTest::GetInstance()->current_test_info()->name(), ".pem");
    std::ofstream(path_) << "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n";
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
  const std::string missing_ = "/nonexistent/taot.pem";
};

TEST_F(CredentialsTest, NoFilesIsPlaintext) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> channel = ChannelCredentials({});
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_NE(*channel, nullptr);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> server = ServerCredentials({});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_NE(*server, nullptr);
}

TEST_F(CredentialsTest, GivenFilesAreRead) {
  EXPECT_TRUE(ChannelCredentials({{"tls_ca", path_}, {}, {}}).ok());
  EXPECT_TRUE(ChannelCredentials({{"tls_ca", path_}, {"tls_cert", path_}, {"tls_key", path_}}).ok());
  EXPECT_TRUE(ServerCredentials({{"--tls-cert", path_}, {"--tls-key", path_}, {}}).ok());
  EXPECT_TRUE(ServerCredentials({{"--tls-cert", path_}, {"--tls-key", path_}, {"--tls-client-ca", path_}}).ok());
}

TEST_F(CredentialsTest, AFileThatCannotBeReadIsNamedAsTheCallerNamesIt) {
  absl::Status s = ChannelCredentials({{"tls_ca", missing_}, {}, {}}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "tls_ca: cannot read '/nonexistent/taot.pem'");
  s = ChannelCredentials({{"tls_ca", path_}, {"tls_cert", path_}, {"tls_key", missing_}}).status();
  EXPECT_EQ(s.message(), "tls_key: cannot read '/nonexistent/taot.pem'");
  s = ServerCredentials({{"--tls-cert", path_}, {"--tls-key", path_}, {"--tls-client-ca", missing_}}).status();
  EXPECT_EQ(s.message(), "--tls-client-ca: cannot read '/nonexistent/taot.pem'");
  s = ServerCredentials({{"--tls-cert", missing_}, {"--tls-key", path_}, {}}).status();
  EXPECT_EQ(s.message(), "--tls-cert: cannot read '/nonexistent/taot.pem'");
}

TEST_F(CredentialsTest, ACertificateNeedsItsKey) {
  absl::Status s = ChannelCredentials({{"tls_ca", path_}, {"tls_cert", path_}, {"tls_key", ""}}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "tls_cert, tls_key: give both for mutual TLS, or neither");
  s = ServerCredentials({{"--tls-cert", ""}, {"--tls-key", path_}, {}}).status();
  EXPECT_EQ(s.message(), "--tls-cert, --tls-key: give both for mutual TLS, or neither");
  s = ServerCredentials({{"--tls-cert", ""}, {"--tls-key", ""}, {"--tls-client-ca", path_}}).status();
  EXPECT_EQ(s.message(), "--tls-client-ca: needs --tls-cert and --tls-key");
}

}  // namespace
}  // namespace taot::wire
