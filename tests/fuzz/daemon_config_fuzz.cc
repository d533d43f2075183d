// taot-planner's --config reader (strict TOML over the command line's options) and the checks
// after it, on any file content: at start and on every SIGHUP the daemon reads a file an
// operator (or a broken ConfigMap) wrote.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.h"
#include "taot/planner/plan_request.h"
#include "taot/server/daemon_config.h"
#include "taot/server/log.h"

namespace {

// The settings a daemon started with flags alone would run with: what a reload compares to.
taot::server::DaemonSettings Running() {
  taot::server::DaemonSettings settings;
  const char* const argv[] = {"taot-planner", "--job-id", "fuzz", "--world-size", "4", "--experts", "8"};
  taot::fuzz::Require(taot::server::ParseDaemonArgs(7, argv, settings).ok(), "the flags alone parse");
  taot::fuzz::Require(taot::server::ConfigureDaemon(settings, std::nullopt).ok(), "the flags alone configure");
  return settings;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using taot::fuzz::Require;
  static taot::fuzz::ScratchFile file("taot-planner.toml");
  static const taot::server::DaemonSettings running = Running();
  const std::string& path = file.Write(taot::fuzz::AsText(data, size));
  const char* const argv[] = {"taot-planner", "--config", path.c_str()};
  taot::server::DaemonSettings settings;
  const absl::Status parsed = taot::server::ParseDaemonArgs(3, argv, settings);
  if (!parsed.ok()) {
    Require(!parsed.message().empty(), "a refused --config file gets a message");
    return 0;
  }
  // Files the settings name are not this input: reading whatever path the fuzzer spells (a FIFO,
  // /dev/stdin) would only hang.
  settings.token_file.clear();
  settings.tls_cert.clear();
  settings.tls_key.clear();
  settings.tls_client_ca.clear();
  const absl::Status configured = taot::server::ConfigureDaemon(settings, "fuzz-token");
  if (!configured.ok()) {
    Require(!configured.message().empty(), "refused settings get a message");
    return 0;
  }
  // What ConfigureDaemon promises; that experts divide among the ranks is Job::Create's check.
  const taot::server::JobConfig& job = settings.job;
  Require(taot::CheckRequestSize(job.world_size, job.experts).ok(), "accepted sizes are within the planner's limits");
  Require(job.slots_per_rank >= 0 && job.slots_per_rank <= job.experts, "accepted slots are within [0, experts]");
  Require(settings.round_timeout_ms >= 1 && settings.round_timeout_ms <= taot::server::kMaxRoundTimeoutMs &&
              settings.grace_s >= 0 && settings.grace_s <= taot::server::kMaxGraceSeconds,
          "accepted times are within their bounds");
  Require(!settings.token.empty(), "the token from the environment is used");
  taot::server::SettingsNeedingRestart(running, settings);
  return 0;
}
