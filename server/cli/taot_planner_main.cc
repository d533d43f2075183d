// taot-planner: the per-job planner daemon. Ranks register and report their loads
// (taot.v1.Planner); operators watch and steer it (taot.v1.Admin, taotctl); Kubernetes probes
// it (grpc.health.v1). SIGTERM: NOT_SERVING, in-flight calls finish, exit within the grace
// period.
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "taot/server/job.h"
#include "taot/server/log.h"
#include "taot/server/metrics.h"
#include "taot/server/planner_service.h"

namespace taot::server {
namespace {

struct Args {
  JobConfig job;
  std::vector<std::string> params;
  int ranks_per_node = 0;
  std::string listen = "127.0.0.1:50051";
  std::string metrics_listen = "127.0.0.1:9464";
  int round_timeout_ms = 100;
  int max_message_mb = 64;
  int grace_s = 10;
  std::string log_level = "info";
  std::string token_file;
  std::string tls_cert, tls_key, tls_client_ca;
  // Filled by Configure.
  std::string token;
  std::shared_ptr<grpc::ServerCredentials> credentials;
};

absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read '", path, "'"));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Plain TCP, TLS, or mutual TLS (a client CA: clients must present a certificate it signed).
absl::Status ConfigureTransport(Args& a) {
  if (a.tls_cert.empty() != a.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key: give both or neither");
  }
  if (a.tls_cert.empty()) {
    if (!a.tls_client_ca.empty()) return absl::InvalidArgumentError("--tls-client-ca: needs --tls-cert and --tls-key");
    a.credentials = grpc::InsecureServerCredentials();
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> cert = ReadFile("--tls-cert", a.tls_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile("--tls-key", a.tls_key);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!a.tls_client_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadFile("--tls-client-ca", a.tls_client_ca);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  a.credentials = grpc::SslServerCredentials(options);
  return absl::OkStatus();
}

// The job token from --token-file, else from $TAOT_JOB_TOKEN; none: no check.
absl::Status ConfigureToken(Args& a) {
  if (!a.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadFile("--token-file", a.token_file);
    if (!token.ok()) return token.status();
    a.token = std::string(absl::StripAsciiWhitespace(*token));
    if (a.token.empty()) return absl::InvalidArgumentError(absl::StrCat("--token-file: '", a.token_file, "' is empty"));
  } else if (const char* env = std::getenv("TAOT_JOB_TOKEN"); env != nullptr) {
    a.token = std::string(absl::StripAsciiWhitespace(env));
  }
  return absl::OkStatus();
}

absl::Status Configure(Args& a) {
  for (const std::string& item : a.params) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--param: must be key=value, got '", item, "'"));
    }
    a.job.params[kv[0]] = kv[1];
  }
  if (a.ranks_per_node < 0) return absl::InvalidArgumentError("--ranks-per-node: must be >= 1");
  if (a.ranks_per_node > 0) {
    std::vector<int> nodes;
    for (int r = 0; r < a.job.world_size; ++r) nodes.push_back(r / a.ranks_per_node);
    a.job.node_of_rank = nodes;
  }
  if (a.round_timeout_ms <= 0) return absl::InvalidArgumentError("--round-timeout-ms: must be >= 1");
  a.job.round_timeout = absl::Milliseconds(a.round_timeout_ms);
  if (a.max_message_mb <= 0 || a.max_message_mb > 2047) {
    return absl::InvalidArgumentError("--max-message-mb: must be in [1, 2047]");
  }
  if (a.grace_s < 0) return absl::InvalidArgumentError("--grace-s: must be >= 0");
  LogLevel level;
  if (!ParseLogLevel(a.log_level, level)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level: must be debug, info, warning or error, got '", a.log_level, "'"));
  }
  SetLogLevel(level);
  if (absl::Status s = ConfigureToken(a); !s.ok()) return s;
  return ConfigureTransport(a);
}

// Waits for SIGTERM or SIGINT on its own thread (they are blocked everywhere else), then
// reports NOT_SERVING and shuts the server down with the grace period.
void AwaitTermination(grpc::Server& server, int grace_s, sigset_t signals) {
  int signal = 0;
  sigwait(&signals, &signal);
  Log(LogLevel::kInfo, "shutting down", {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"},
                                        {"grace_s", std::to_string(grace_s)}});
  server.GetHealthCheckService()->SetServingStatus(false);
  server.Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(grace_s));
}

int Main(int argc, char** argv) {
  // Block the termination signals before anything starts a thread (gRPC's, the metrics
  // server's), so that only AwaitTermination's sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Debian's Abseil checks every mutex acquisition for lock-order cycles (a debugging aid that
  // showed up in the load benchmark's profile); the daemon's lock order is fixed.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"taot-planner: the per-job expert replica planner daemon (gRPC, taot.v1)"};
  Args a;
  app.add_option("--job-id", a.job.job_id, "The training job this daemon serves")->required();
  app.add_option("--world-size", a.job.world_size, "Expert-parallel ranks R")->required();
  app.add_option("--experts", a.job.experts, "Experts per MoE layer (a multiple of R)")->required();
  app.add_option("--slots", a.job.slots_per_rank, "Guest slots per rank, K")->capture_default_str();
  app.add_option("--expert-bytes", a.job.expert_bytes, "Bytes of one expert's weights (for the figures)");
  app.add_option("--ranks-per-node", a.ranks_per_node,
                 "Ranks per node (rank r on node r / G); default: grouped by the node names ranks register with");
  app.add_option("--inter-node-cost", a.job.inter_node_cost, "λ, the cost of a cross-node transfer")->capture_default_str();
  app.add_option("--planner", a.job.planner, "Planner (taot planners lists them)")->capture_default_str();
  app.add_option("--param", a.params, "Planner parameter key=value (repeatable)");
  app.add_option("--listen", a.listen, "Address to serve on (port 0: any free port)")->capture_default_str();
  app.add_option("--metrics-listen", a.metrics_listen, "Address of /metrics for Prometheus (empty: none)")
      ->capture_default_str();
  app.add_option("--round-timeout-ms", a.round_timeout_ms, "How long a round waits for its last row")->capture_default_str();
  app.add_option("--max-message-mb", a.max_message_mb, "Largest request or response")->capture_default_str();
  app.add_option("--grace-s", a.grace_s, "Seconds in-flight calls get after SIGTERM")->capture_default_str();
  app.add_option("--log-level", a.log_level, "debug, info, warning or error")->capture_default_str();
  app.add_option("--token-file", a.token_file,
                 "File holding the job token every call must carry (default: $TAOT_JOB_TOKEN, else none)");
  app.add_option("--tls-cert", a.tls_cert, "Server certificate (PEM) for TLS");
  app.add_option("--tls-key", a.tls_key, "Server private key (PEM) for TLS");
  app.add_option("--tls-client-ca", a.tls_client_ca, "CA (PEM) that signs client certificates: mutual TLS");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "taot-planner: error: " << e.what() << " (see taot-planner --help)\n";
    return 2;
  }
  absl::Status configured = Configure(a);
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(*registry);
  a.job.observer = &metrics;
  absl::StatusOr<std::unique_ptr<Job>> job =
      configured.ok() ? Job::Create(a.job) : absl::StatusOr<std::unique_ptr<Job>>(configured);
  if (!job.ok()) {
    std::cerr << "taot-planner: error: " << job.status().message() << "\n";
    return 2;
  }

  std::unique_ptr<prometheus::Exposer> exposer;
  if (!a.metrics_listen.empty()) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(a.metrics_listen);
    } catch (const std::exception& e) {
      Log(LogLevel::kError, "cannot serve metrics", {{"address", a.metrics_listen}, {"error", e.what()}});
      return 1;
    }
    exposer->RegisterCollectable(registry);
    const std::string host = a.metrics_listen.substr(0, a.metrics_listen.rfind(':'));
    Log(LogLevel::kInfo, "metrics", {{"address", absl::StrCat(host, ":", exposer->GetListeningPorts().at(0))}});
  }
  PlannerService planner(**job, a.token);
  AdminService admin(**job, a.token);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(a.listen, a.credentials, &port);
  builder.SetMaxReceiveMessageSize(a.max_message_mb << 20);
  builder.SetMaxSendMessageSize(a.max_message_mb << 20);
  builder.RegisterService(&planner);
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    Log(LogLevel::kError, "cannot listen", {{"address", a.listen}});
    return 1;
  }
  const std::string host = a.listen.substr(0, a.listen.rfind(':'));
  Log(LogLevel::kInfo, "listening",
      {{"address", absl::StrCat(host, ":", port)}, {"job", a.job.job_id}, {"world_size", std::to_string(a.job.world_size)},
       {"experts", std::to_string(a.job.experts)}, {"planner", a.job.planner},
       {"tls", a.tls_cert.empty() ? "off" : (a.tls_client_ca.empty() ? "on" : "mutual")},
       {"token", a.token.empty() ? "none" : "required"}});
  std::thread terminator(AwaitTermination, std::ref(*server), a.grace_s, signals);
  server->Wait();
  terminator.join();
  Log(LogLevel::kInfo, "stopped");
  return 0;
}

}  // namespace
}  // namespace taot::server

int main(int argc, char** argv) { return taot::server::Main(argc, argv); }
