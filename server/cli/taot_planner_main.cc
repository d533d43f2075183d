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
#include "taot/server/plugin_planner.h"

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
  std::string config_file;
  std::vector<std::string> plugins;
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

// The command line, over the --config file's settings (TOML or INI; keys are the long flag
// names, e.g. `world-size = 16`, `param = ["target_imbalance_pct=5"]`): flags win. --help
// prints and comes back CANCELLED.
absl::Status ParseArgs(int argc, char** argv, Args& a) {
  CLI::App app{"taot-planner: the per-job expert replica planner daemon (gRPC, taot.v1)"};
  app.set_config("--config", "", "Settings file (TOML); flags given on the command line win");
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
  app.add_flag("--predictive", a.job.predictive,
               "Place every planned layer's next step from the start (WatchPlacements); otherwise from the first "
               "watcher");
  app.add_option("--plugin", a.plugins,
                 "Planner plugin to load (a shared library, taot/planner_plugin.h; repeatable); its name joins "
                 "--planner's choices");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      app.exit(e);
      return absl::CancelledError("help");
    }
    return absl::InvalidArgumentError(e.what());
  }
  a.config_file = app.get_config_ptr()->as<std::string>();
  return absl::OkStatus();
}

// SIGHUP: reads the settings again (the --config file under the same command line) and applies
// what can change while running, the planner with its parameters and the log level; other
// changes are logged as needing a restart. An invalid file changes nothing.
void Reload(int argc, char** argv, const Args& running, Job& job) {
  Args fresh;
  absl::Status s = ParseArgs(argc, argv, fresh);
  if (s.ok()) s = Configure(fresh);
  if (!s.ok()) {
    // Configure may have set the new log level before it failed: restore the running one.
    if (LogLevel level; ParseLogLevel(running.log_level, level)) SetLogLevel(level);
    Log(LogLevel::kError, "reload refused; nothing changed", {{"error", std::string(s.message())}});
    return;
  }
  const JobStatus status = job.Status();
  if (fresh.job.planner != status.planner || fresh.job.params != status.params) {
    if (absl::Status swapped = job.SetPlanner(fresh.job.planner, fresh.job.params); !swapped.ok()) {
      Log(LogLevel::kError, "reload: planner refused; the old one stays", {{"error", std::string(swapped.message())}});
    } else {
      Log(LogLevel::kInfo, "reload: planner", {{"planner", fresh.job.planner},
                                              {"version", std::to_string(job.Status().planner_version)}});
    }
  }
  const JobConfig& was = running.job;
  const JobConfig& now = fresh.job;
  if (now.job_id != was.job_id || now.world_size != was.world_size || now.experts != was.experts ||
      now.slots_per_rank != was.slots_per_rank || now.node_of_rank != was.node_of_rank ||
      now.inter_node_cost != was.inter_node_cost || fresh.listen != running.listen ||
      fresh.metrics_listen != running.metrics_listen || fresh.round_timeout_ms != running.round_timeout_ms ||
      fresh.token != running.token || fresh.tls_cert != running.tls_cert || fresh.tls_key != running.tls_key ||
      fresh.tls_client_ca != running.tls_client_ca || fresh.max_message_mb != running.max_message_mb) {
    Log(LogLevel::kWarning, "reload: job, topology, timeouts, addresses, token and TLS settings changed in the "
                            "file take effect only after a restart");
  }
  Log(LogLevel::kInfo, "reloaded", {{"config", running.config_file}});
}

// Waits for signals on its own thread (they are blocked everywhere else): SIGHUP reloads;
// SIGTERM or SIGINT report NOT_SERVING and shut the server down with the grace period.
void HandleSignals(int argc, char** argv, const Args& running, Job& job, grpc::Server& server, sigset_t signals) {
  while (true) {
    int signal = 0;
    sigwait(&signals, &signal);
    if (signal == SIGHUP) {
      Reload(argc, argv, running, job);
      continue;
    }
    Log(LogLevel::kInfo, "shutting down", {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"},
                                          {"grace_s", std::to_string(running.grace_s)}});
    server.GetHealthCheckService()->SetServingStatus(false);
    server.Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(running.grace_s));
    return;
  }
}

int Main(int argc, char** argv) {
  // Block the signals before anything starts a thread (gRPC's, the metrics server's), so that
  // only HandleSignals's sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Debian's Abseil checks every mutex acquisition for lock-order cycles (a debugging aid that
  // showed up in the load benchmark's profile); the daemon's lock order is fixed.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  Args a;
  if (absl::Status parsed = ParseArgs(argc, argv, a); !parsed.ok()) {
    if (parsed.code() == absl::StatusCode::kCancelled) return 0;  // --help
    std::cerr << "taot-planner: error: " << parsed.message() << " (see taot-planner --help)\n";
    return 2;
  }
  absl::Status configured = Configure(a);
  // The built-in planners, then the plugins.
  PlannerRegistry planners = PlannerRegistry::BuiltIn();
  for (const std::string& path : a.plugins) {
    if (!configured.ok()) break;
    absl::StatusOr<std::string> name = RegisterPlugin(path, planners);
    if (!name.ok()) {
      configured = name.status();
      break;
    }
    Log(LogLevel::kInfo, "plugin loaded", {{"planner", *name}, {"path", path}});
  }
  a.job.registry = &planners;
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
  std::thread terminator(HandleSignals, argc, argv, std::cref(a), std::ref(**job), std::ref(*server), signals);
  server->Wait();
  terminator.join();
  Log(LogLevel::kInfo, "stopped");
  return 0;
}

}  // namespace
}  // namespace taot::server

int main(int argc, char** argv) { return taot::server::Main(argc, argv); }
