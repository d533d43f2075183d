// taot-planner: the per-job planner daemon. Ranks register and report their loads
// (taot.v1.Planner); operators watch and steer it (taot.v1.Admin, taotctl); Kubernetes probes
// it (grpc.health.v1). SIGTERM: NOT_SERVING while calls are still accepted (the drain), then
// in-flight calls finish; exit within the grace period. Settings: taot/server/daemon_config.h.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "taot/server/daemon_config.h"
#include "taot/server/job.h"
#include "taot/server/keepalive.h"
#include "taot/server/log.h"
#include "taot/server/metrics.h"
#include "taot/server/planner_service.h"
#include "taot/server/plugin_planner.h"
#include "taot/wire/credentials.h"

#if TAOT_DEVICE_PLANNER
#include "taot/kernels/device_block_planner.h"
#endif

namespace taot::server {
namespace {

// Plain TCP, TLS, or mutual TLS (a client CA: clients must present a certificate it signed).
// ConfigureDaemon has checked which files go together.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const DaemonSettings& s) {
  return wire::ServerCredentials(
      {{"--tls-cert", s.tls_cert}, {"--tls-key", s.tls_key}, {"--tls-client-ca", s.tls_client_ca}});
}

std::optional<std::string_view> EnvToken() {
  const char* env = std::getenv("TAOT_JOB_TOKEN");
  if (env == nullptr) return std::nullopt;
  return std::string_view(env);
}

// The settings from the command line and the --config file, checked.
absl::Status Settings(int argc, char** argv, DaemonSettings& s) {
  if (absl::Status parsed = ParseDaemonArgs(argc, argv, s); !parsed.ok()) return parsed;
  return ConfigureDaemon(s, EnvToken());
}

// SIGHUP: reads the settings again (the --config file under the same command line) and applies
// what can change while running, the planner with its parameters and the log level; every
// other change is named as needing a restart. An invalid file changes nothing.
void Reload(int argc, char** argv, const DaemonSettings& running, Job& job) {
  DaemonSettings fresh;
  if (absl::Status s = Settings(argc, argv, fresh); !s.ok()) {
    Log(LogLevel::kError, "reload refused; nothing changed", {{"error", std::string(s.message())}});
    return;
  }
  SetLogLevel(fresh.level);
  const JobStatus status = job.Status();
  if (fresh.job.planner != status.planner || fresh.job.params != status.params) {
    if (absl::Status swapped = job.SetPlanner(fresh.job.planner, fresh.job.params); !swapped.ok()) {
      Log(LogLevel::kError, "reload: planner refused; the old one stays", {{"error", std::string(swapped.message())}});
    } else {
      Log(LogLevel::kInfo, "reload: planner",
          {{"planner", fresh.job.planner}, {"version", std::to_string(job.Status().planner_version)}});
    }
  }
  if (std::vector<std::string> changed = SettingsNeedingRestart(running, fresh); !changed.empty()) {
    Log(LogLevel::kWarning, "reload: these changed settings take effect only after a restart",
        {{"settings", absl::StrJoin(changed, ",")}});
  }
  Log(LogLevel::kInfo, "reloaded", {{"config", running.config_file}});
}

// After SIGTERM: health says NOT_SERVING while calls are still accepted, so that Kubernetes
// takes the pod out of its endpoints before the port closes. A second SIGTERM or SIGINT ends it.
void Drain(absl::Duration drain, const sigset_t& signals) {
  const absl::Time end = absl::Now() + drain;
  for (absl::Duration left = drain; left > absl::ZeroDuration(); left = end - absl::Now()) {
    const timespec wait = absl::ToTimespec(left);
    const int signal = sigtimedwait(&signals, nullptr, &wait);
    if (signal == SIGTERM || signal == SIGINT) return;
  }
}

// Waits for signals on its own thread (they are blocked everywhere else): SIGHUP reloads;
// SIGTERM or SIGINT report NOT_SERVING, drain, and shut the server down with the rest of the
// grace period.
void HandleSignals(int argc, char** argv, const DaemonSettings& running, Job& job, grpc::Server& server,
                   sigset_t signals) {
  while (true) {
    int signal = 0;
    sigwait(&signals, &signal);
    if (signal == SIGHUP) {
      Reload(argc, argv, running, job);
      continue;
    }
    const absl::Time deadline = absl::Now() + absl::Seconds(running.grace_s);
    const absl::Duration drain = absl::Seconds(std::min(running.drain_s, running.grace_s));
    Log(LogLevel::kInfo, "shutting down",
        {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"},
         {"drain_s", absl::StrCat(absl::ToInt64Seconds(drain))},
         {"grace_s", std::to_string(running.grace_s)}});
    server.GetHealthCheckService()->SetServingStatus(false);
    Drain(drain, signals);
    server.Shutdown(absl::ToChronoTime(deadline));
    return;
  }
}

// The error for a server that could not bind `address`: "address in use" when that is why.
std::string ListenError(const std::string& address, std::string_view fallback) {
  absl::Status probe = ProbeListen(address);
  return probe.ok() ? std::string(fallback) : std::string(probe.message());
}

// /metrics on its own CivetWeb server. Its workers block on a connection until a request is
// read, so idle or half-sent connections (a port scan, a stalled client) must not hold all of
// them for long: more workers than scrapers, a short request timeout, no keep-alive.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> ServeMetrics(const std::string& address) {
  try {
    return std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", address, "num_threads", "8", "request_timeout_ms", "2000", "enable_keep_alive", "no"});
  } catch (const std::exception& e) {
    return absl::UnavailableError(ListenError(address, e.what()));
  }
}

// taot-block planned on --device cuda:N: the device is checked here, so that a daemon that cannot
// use it fails at its start, not at its first plan.
absl::Status UseDevice(const DaemonSettings& s, PlannerRegistry& planners) {
  if (!s.cuda_device) return absl::OkStatus();
#if TAOT_DEVICE_PLANNER
  if (absl::Status bound = kernels::PlanBlocksOnDevice(planners, *s.cuda_device); !bound.ok()) {
    return absl::Status(bound.code(), absl::StrCat("--device: ", bound.message()));
  }
  if (s.job.planner != "taot-block") {
    Log(LogLevel::kWarning, "--device plans taot-block only; the job's planner runs on the CPU",
        {{"device", s.device}, {"planner", s.job.planner}});
  }
  return absl::OkStatus();
#else
  (void)planners;
  return absl::FailedPreconditionError(absl::StrCat(
      "--device: ", s.device, " needs a taot-planner built with CUDA (this one was built without it); use cpu"));
#endif
}

std::string Host(const std::string& address) { return address.substr(0, address.rfind(':')); }

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
  DaemonSettings a;
  if (absl::Status configured = Settings(argc, argv, a); !configured.ok()) {
    if (configured.code() == absl::StatusCode::kCancelled) return 0;  // --help
    std::cerr << "taot-planner: error: " << configured.message() << " (see taot-planner --help)\n";
    return 2;
  }
  SetLogLevel(a.level);
  // The built-in planners, then the plugins: loaded before gRPC (credentials included) starts
  // its threads: loading a plugin may fork a child to try the library first.
  PlannerRegistry planners = PlannerRegistry::BuiltIn();
  absl::Status loaded = absl::OkStatus();
  for (const std::string& path : a.plugins) {
    absl::StatusOr<std::string> name = RegisterPlugin(path, planners);
    if (!name.ok()) {
      loaded = name.status();
      break;
    }
    Log(LogLevel::kInfo, "plugin loaded", {{"planner", *name}, {"path", path}});
  }
  if (loaded.ok()) loaded = UseDevice(a, planners);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = Credentials(a);
  if (loaded.ok()) loaded = credentials.status();
  a.job.registry = &planners;
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(*registry);
  a.job.observer = &metrics;
  absl::StatusOr<std::unique_ptr<Job>> job =
      loaded.ok() ? Job::Create(a.job) : absl::StatusOr<std::unique_ptr<Job>>(loaded);
  if (!job.ok()) {
    std::cerr << "taot-planner: error: " << job.status().message() << "\n";
    return 2;
  }
  if (!IsLoopbackListen(a.listen) && a.token.empty() && a.tls_client_ca.empty()) {
    Log(LogLevel::kWarning, "serving beyond loopback without authentication (--allow-unauthenticated)",
        {{"address", a.listen}});
  }

  std::unique_ptr<prometheus::Exposer> exposer;
  if (!a.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<prometheus::Exposer>> served = ServeMetrics(a.metrics_listen);
    if (!served.ok()) {
      Log(LogLevel::kError, "cannot serve metrics",
          {{"address", a.metrics_listen}, {"error", std::string(served.status().message())}});
      return 1;
    }
    exposer = *std::move(served);
    exposer->RegisterCollectable(registry);
    Log(LogLevel::kInfo, "metrics",
        {{"address", absl::StrCat(Host(a.metrics_listen), ":", exposer->GetListeningPorts().at(0))}});
  }
  PlannerService planner(**job, a.token);
  AdminService admin(**job, a.token);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(a.listen, *credentials, &port);
  // gRPC sets SO_REUSEPORT by default: a second daemon on the same address would start and
  // share its connections with the first.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  SetKeepalive(builder);
  builder.SetMaxReceiveMessageSize(a.max_message_mb << 20);
  builder.SetMaxSendMessageSize(a.max_message_mb << 20);
  builder.RegisterService(&planner);
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    Log(LogLevel::kError, "cannot listen",
        {{"address", a.listen}, {"error", ListenError(a.listen, "see gRPC's log above")}});
    return 1;
  }
  Log(LogLevel::kInfo, "listening",
      {{"address", absl::StrCat(Host(a.listen), ":", port)},
       {"job", a.job.job_id},
       {"world_size", std::to_string(a.job.world_size)},
       {"experts", std::to_string(a.job.experts)},
       {"planner", a.job.planner},
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

// What cannot be checked up front (memory running out, a library's exception) ends the daemon
// with a message and status 1, never an abort.
int main(int argc, char** argv) {
  try {
    return taot::server::Main(argc, argv);
  } catch (const std::bad_alloc&) {
    std::cerr << "taot-planner: error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "taot-planner: error: " << e.what() << "\n";
  }
  return 1;
}
