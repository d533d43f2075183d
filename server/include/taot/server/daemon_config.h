// taot-planner's settings: the command line over the --config file (strict TOML), checked
// before anything starts. gRPC-free, so that it can be unit-tested and fuzzed on its own.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "taot/server/job.h"
#include "taot/server/log.h"

namespace taot::server {

// The largest --config file read; a settings file is a few hundred bytes.
inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;
// Bounds of the time settings, so that deadlines computed from them cannot overflow.
inline constexpr int kMaxGraceSeconds = 3600;
inline constexpr int kMaxRoundTimeoutMs = 600000;

struct DaemonSettings {
  JobConfig job;
  std::vector<std::string> params;
  int ranks_per_node = 0;
  std::string listen = "127.0.0.1:50051";
  std::string metrics_listen = "127.0.0.1:9464";
  int round_timeout_ms = 100;
  int max_message_mb = 64;
  int max_rounds_mb = 1024;
  int grace_s = 10;
  int drain_s = 3;
  std::string log_level = "info";
  std::string token_file;
  std::string tls_cert, tls_key, tls_client_ca;
  bool allow_unauthenticated = false;
  std::string config_file;
  std::vector<std::string> plugins;
  // Where taot-block plans: "cpu", or "cuda:N" (a microbatch's rounds in one launch on device N).
  std::string device = "cpu";
  // Derived by ConfigureDaemon.
  LogLevel level = LogLevel::kInfo;
  std::string token;
  std::optional<int> cuda_device;  // N of --device cuda:N
};

// Reads the command line over the --config file into `settings`: flags given on the command
// line win. The file is TOML whose keys are the long flag names; an unknown or repeated key, a
// syntax error or a value of the wrong type is an error naming the file and line. After --help
// (printed to stdout) it returns CANCELLED.
absl::Status ParseDaemonArgs(int argc, const char* const* argv, DaemonSettings& settings);

// Checks every setting against its limits and derives the rest (parameters, topology, log
// level, the job token from --token-file or else `env_token`, $TAOT_JOB_TOKEN). Refuses to
// serve beyond loopback without authentication unless --allow-unauthenticated says so.
absl::Status ConfigureDaemon(DaemonSettings& settings, std::optional<std::string_view> env_token);

// Whether a gRPC listen address is reachable only from this machine: 127.0.0.0/8, [::1],
// localhost, or a unix socket.
bool IsLoopbackListen(std::string_view address);

// The settings (by their flag names) that differ between `running` and `fresh` and that only a
// restart applies; SIGHUP applies the planner, its parameters and the log level live.
std::vector<std::string> SettingsNeedingRestart(const DaemonSettings& running, const DaemonSettings& fresh);

// Why `address` (host:port) cannot be bound, for an error after a server failed to listen on
// it: "address in use" when another socket listens there. OK when it can be bound now.
absl::Status ProbeListen(std::string_view address);

}  // namespace taot::server
