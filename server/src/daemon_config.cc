#include "taot/server/daemon_config.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <istream>
#include <map>
#include <memory>
#include <type_traits>
#include <utility>

#include <toml++/toml.h>
#include <CLI/CLI.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "taot/planner/plan_request.h"
#include "taot/planner/topology.h"

namespace taot::server {
namespace {

// Keys, paths and library messages are quoted at most this long in an error.
constexpr size_t kMaxQuoted = 64;

std::string Quoted(std::string_view text) {
  if (text.size() <= kMaxQuoted) return absl::StrCat("'", std::string(text), "'");
  return absl::StrCat("'", std::string(text.substr(0, kMaxQuoted)), "...'");
}

// What a setting holds, from the C++ type of its field; a --config value must be of that kind.
enum class Kind { kInteger, kNumber, kString, kStrings, kBool };

template <typename T>
constexpr Kind KindOf() {
  if constexpr (std::is_same_v<T, bool>) {
    return Kind::kBool;
  } else if constexpr (std::is_integral_v<T>) {
    return Kind::kInteger;
  } else if constexpr (std::is_floating_point_v<T>) {
    return Kind::kNumber;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return Kind::kString;
  } else {
    static_assert(std::is_same_v<T, std::vector<std::string>>);
    return Kind::kStrings;
  }
}

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kInteger:
      return "an integer";
    case Kind::kNumber:
      return "a number";
    case Kind::kString:
      return "a string";
    case Kind::kStrings:
      return "a string or an array of strings";
    case Kind::kBool:
      return "true or false";
  }
  return "";
}

// Adds options to the command line and remembers each one's kind for the --config reader.
class Flags {
 public:
  explicit Flags(CLI::App& app) : app_(app) {}

  template <typename T>
  CLI::Option* Option(const std::string& name, T& value, const std::string& help) {
    kinds_[name.substr(2)] = KindOf<T>();
    return app_.add_option(name, value, help);
  }
  CLI::Option* Flag(const std::string& name, bool& value, const std::string& help) {
    kinds_[name.substr(2)] = Kind::kBool;
    return app_.add_flag(name, value, help);
  }
  const std::map<std::string, Kind, std::less<>>& kinds() const { return kinds_; }

 private:
  CLI::App& app_;
  std::map<std::string, Kind, std::less<>> kinds_;
};

// One --config problem, at a line of the file.
struct ConfigProblem {
  uint32_t line = 0;
  std::string what;
};

std::string NumberText(double v) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof(text), v);
  return std::string(text, result.ptr);
}

// The command-line words a TOML value stands for, or why it is not of the setting's kind.
std::optional<std::vector<std::string>> Inputs(const toml::node& value, Kind kind) {
  switch (kind) {
    case Kind::kInteger:
      if (const auto* v = value.as_integer()) return std::vector<std::string>{std::to_string(v->get())};
      break;
    case Kind::kNumber:
      if (const auto* v = value.as_integer()) return std::vector<std::string>{std::to_string(v->get())};
      if (const auto* v = value.as_floating_point()) return std::vector<std::string>{NumberText(v->get())};
      break;
    case Kind::kString:
      if (const auto* v = value.as_string()) return std::vector<std::string>{v->get()};
      break;
    case Kind::kBool:
      if (const auto* v = value.as_boolean()) return std::vector<std::string>{v->get() ? "true" : "false"};
      break;
    case Kind::kStrings:
      if (const auto* v = value.as_string()) return std::vector<std::string>{v->get()};
      if (const auto* array = value.as_array()) {
        std::vector<std::string> words;
        for (const toml::node& item : *array) {
          const auto* s = item.as_string();
          if (s == nullptr) return std::nullopt;
          words.push_back(s->get());
        }
        return words;
      }
      break;
  }
  return std::nullopt;
}

// The --config reader: strict TOML through toml++ (a repeated key or a syntax error is toml++'s
// parse error, with its line), every key one of the long flag names, every value of its kind.
// CLI11 then applies the items to the options the command line left unset.
class StrictToml : public CLI::ConfigBase {
 public:
  StrictToml(const Flags& flags, const CLI::App& app) : flags_(flags), app_(app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    const std::string where = absl::StrCat("--config ", Quoted(app_.get_config_ptr()->as<std::string>()));
    std::string text(kMaxConfigBytes + 1, '\0');
    input.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(input.gcount()));
    if (text.size() > kMaxConfigBytes) {
      throw CLI::ConfigError(absl::StrCat(where, ": larger than ", kMaxConfigBytes, " bytes"));
    }
    toml::table table;
    try {
      table = toml::parse(text);
    } catch (const toml::parse_error& e) {
      std::string what(e.description());
      if (what.size() > 2 * kMaxQuoted) what = absl::StrCat(what.substr(0, 2 * kMaxQuoted), "...");
      throw CLI::ConfigError(absl::StrCat(where, ": line ", e.source().begin.line, ": ", what));
    }
    std::vector<CLI::ConfigItem> settings;
    std::optional<ConfigProblem> first;
    auto problem = [&first](uint32_t line, std::string what) {
      if (!first || line < first->line) first = ConfigProblem{line, std::move(what)};
    };
    for (const auto& [key, value] : table) {
      const uint32_t line = key.source().begin.line;
      const auto kind = flags_.kinds().find(key.str());
      if (kind == flags_.kinds().end()) {
        problem(line,
                absl::StrCat("unknown key ", Quoted(key.str()), " (the keys are taot-planner's long flag names)"));
        continue;
      }
      std::optional<std::vector<std::string>> inputs = Inputs(value, kind->second);
      if (!inputs) {
        problem(line, absl::StrCat(kind->first, ": must be ", std::string(KindName(kind->second))));
        continue;
      }
      if (inputs->empty()) continue;  // an empty array sets nothing
      CLI::ConfigItem item;
      item.name = kind->first;
      item.inputs = *std::move(inputs);
      settings.push_back(std::move(item));
    }
    if (first) throw CLI::ConfigError(absl::StrCat(where, ": line ", first->line, ": ", first->what));
    return settings;
  }

 private:
  const Flags& flags_;
  const CLI::App& app_;
};

void AddOptions(Flags& f, DaemonSettings& s) {
  f.Option("--job-id", s.job.job_id, "The training job this daemon serves")->required();
  f.Option("--world-size", s.job.world_size, "Expert-parallel ranks R")->required();
  f.Option("--experts", s.job.experts, "Experts per MoE layer (a multiple of R)")->required();
  f.Option("--slots", s.job.slots_per_rank, "Guest slots per rank, K")->capture_default_str();
  f.Option("--expert-bytes", s.job.expert_bytes, "Bytes of one expert's weights (for the figures)");
  f.Option("--ranks-per-node", s.ranks_per_node,
           "Ranks per node (rank r on node r / G); default: grouped by the node names ranks register with");
  f.Option("--inter-node-cost", s.job.inter_node_cost, "λ, the cost of a cross-node transfer")->capture_default_str();
  f.Option("--planner", s.job.planner, "Planner (taot planners lists them)")->capture_default_str();
  f.Option("--param", s.params, "Planner parameter key=value (repeatable)");
  f.Option("--listen", s.listen,
           "Address to serve on (port 0: any free port); beyond loopback it needs a job token, mutual TLS or "
           "--allow-unauthenticated")
      ->capture_default_str();
  f.Option("--metrics-listen", s.metrics_listen, "Address of /metrics for Prometheus (empty: none)")
      ->capture_default_str();
  f.Option("--round-timeout-ms", s.round_timeout_ms, "How long a round waits for its last row")->capture_default_str();
  f.Option("--max-message-mb", s.max_message_mb, "Largest request or response")->capture_default_str();
  f.Option("--max-rounds-mb", s.max_rounds_mb,
           "Memory for the rounds kept (R x E x 8 bytes each); a row for a new round past it is refused "
           "(RESOURCE_EXHAUSTED) once settled rounds are dropped")
      ->capture_default_str();
  f.Option("--grace-s", s.grace_s, "Seconds after SIGTERM until the daemon exits, the drain included")
      ->capture_default_str();
  f.Option("--drain-s", s.drain_s,
           "Seconds after SIGTERM that the daemon still accepts calls while health reports NOT_SERVING "
           "(at most --grace-s)")
      ->capture_default_str();
  f.Option("--log-level", s.log_level, "debug, info, warning or error")->capture_default_str();
  f.Option("--token-file", s.token_file,
           "File holding the job token every call must carry (default: $TAOT_JOB_TOKEN, else none)");
  f.Option("--tls-cert", s.tls_cert, "Server certificate (PEM) for TLS");
  f.Option("--tls-key", s.tls_key, "Server private key (PEM) for TLS");
  f.Option("--tls-client-ca", s.tls_client_ca, "CA (PEM) that signs client certificates: mutual TLS");
  f.Flag("--allow-unauthenticated", s.allow_unauthenticated,
         "Serve beyond loopback without a job token or mutual TLS (anyone who reaches the port may call)");
  f.Flag("--predictive", s.job.predictive,
         "Place every planned layer's next step from the start (WatchPrefetches); otherwise from the first "
         "watcher");
  f.Option("--planning-threads", s.job.planning_threads,
           "Threads that plan the rounds of a microbatch that are ready together, each layer on one (the same "
           "plans; not for plugins, or for taot-block on a --device, which plans them in one launch)")
      ->capture_default_str();
  f.Option("--device", s.device,
           "Where taot-block plans: cpu, or cuda:N to plan the rounds of a microbatch that are ready together "
           "in one launch on CUDA device N (the same plans; other planners stay on the CPU)")
      ->capture_default_str();
  f.Option("--plugin", s.plugins,
           "Planner plugin to load (a shared library, taot/planner_plugin.h; repeatable); its name joins "
           "--planner's choices");
}

absl::Status InRange(std::string_view flag, int64_t value, int64_t low, int64_t high) {
  if (value >= low && value <= high) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(flag), ": must be in [", low, ", ", high, "], got ", value));
}

bool IsUnixSocket(std::string_view address) {
  return address.starts_with("unix:") || address.starts_with("unix-abstract:");
}

// host and port of "host:port" or "[v6]:port"; the port as text.
std::optional<std::pair<std::string, std::string>> SplitHostPort(std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return std::make_pair(std::string(host), std::string(address.substr(colon + 1)));
}

absl::Status CheckListen(std::string_view flag, std::string_view address) {
  if (IsUnixSocket(address)) return absl::OkStatus();
  const auto host_port = SplitHostPort(address);
  int port = -1;
  if (!host_port || !absl::SimpleAtoi(host_port->second, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(flag), ": must be host:port with a port in [0, 65535], got ", Quoted(address)));
  }
  return absl::OkStatus();
}

absl::Status ConfigureJob(DaemonSettings& s) {
  for (const std::string& item : s.params) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--param: must be key=value, got ", Quoted(item)));
    }
    s.job.params[kv[0]] = kv[1];
  }
  // The planner's own size limits, before anything is sized by them.
  if (absl::Status size = CheckRequestSize(s.job.world_size, s.job.experts, "--world-size", "--experts"); !size.ok()) {
    return size;
  }
  // More guest slots than experts never help; the bound keeps R x K within R x E.
  if (absl::Status k = InRange("--slots", s.job.slots_per_rank, 0, s.job.experts); !k.ok()) return k;
  if (s.job.expert_bytes < 0) return absl::InvalidArgumentError("--expert-bytes: must be >= 0");
  // The planner's rule for λ, on a one-rank topology.
  if (absl::StatusOr<Topology> t = Topology::FromNodes({0}, s.job.inter_node_cost); !t.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--inter-node-cost: ", t.status().message()));
  }
  if (absl::Status g = InRange("--ranks-per-node", s.ranks_per_node, 0, s.job.world_size); !g.ok()) return g;
  if (s.ranks_per_node > 0) {
    std::vector<int> nodes;
    for (int r = 0; r < s.job.world_size; ++r) nodes.push_back(r / s.ranks_per_node);
    s.job.node_of_rank = nodes;
  }
  return absl::OkStatus();
}

// The highest N of --device cuda:N: CUDA numbers devices from 0, and no machine has this many.
constexpr int kMaxCudaDevice = 1023;

absl::Status ConfigureDevice(DaemonSettings& s) {
  s.cuda_device.reset();
  if (s.device == "cpu") return absl::OkStatus();
  int n = -1;
  if (!s.device.starts_with("cuda:") || !absl::SimpleAtoi(s.device.substr(5), &n) || n < 0 || n > kMaxCudaDevice ||
      s.device.find_first_of(" +") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device: must be cpu or cuda:N with N in [0, ", kMaxCudaDevice, "], got ", Quoted(s.device)));
  }
  s.cuda_device = n;
  return absl::OkStatus();
}

absl::Status ConfigureTimes(DaemonSettings& s) {
  if (absl::Status t = InRange("--round-timeout-ms", s.round_timeout_ms, 1, kMaxRoundTimeoutMs); !t.ok()) return t;
  s.job.round_timeout = absl::Milliseconds(s.round_timeout_ms);
  if (absl::Status m = InRange("--max-message-mb", s.max_message_mb, 1, 2047); !m.ok()) return m;
  if (absl::Status m = InRange("--max-rounds-mb", s.max_rounds_mb, 1, 1 << 20); !m.ok()) return m;
  s.job.max_round_bytes = int64_t{s.max_rounds_mb} << 20;
  if (absl::Status g = InRange("--grace-s", s.grace_s, 0, kMaxGraceSeconds); !g.ok()) return g;
  return InRange("--drain-s", s.drain_s, 0, kMaxGraceSeconds);
}

// The job token from --token-file, else from $TAOT_JOB_TOKEN. Set but blank is a mistake
// (an unfilled Secret, say), never "no token".
absl::Status ConfigureToken(DaemonSettings& s, std::optional<std::string_view> env_token) {
  if (!s.token_file.empty()) {
    std::ifstream file(s.token_file);
    if (!file) return absl::InvalidArgumentError(absl::StrCat("--token-file: cannot read ", Quoted(s.token_file)));
    std::string text(4097, '\0');
    file.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(file.gcount()));
    if (text.size() > 4096) {
      return absl::InvalidArgumentError(absl::StrCat("--token-file: ", Quoted(s.token_file), " is over 4096 bytes"));
    }
    s.token = std::string(absl::StripAsciiWhitespace(text));
    if (s.token.empty())
      return absl::InvalidArgumentError(absl::StrCat("--token-file: ", Quoted(s.token_file), " is empty"));
  } else if (env_token) {
    s.token = std::string(absl::StripAsciiWhitespace(std::string(*env_token)));
    if (s.token.empty()) {
      return absl::InvalidArgumentError("$TAOT_JOB_TOKEN: is set but empty (unset it to run without a token)");
    }
  }
  return absl::OkStatus();
}

absl::Status ConfigureAccess(DaemonSettings& s, std::optional<std::string_view> env_token) {
  if (s.tls_cert.empty() != s.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key: give both or neither");
  }
  if (s.tls_cert.empty() && !s.tls_client_ca.empty()) {
    return absl::InvalidArgumentError("--tls-client-ca: needs --tls-cert and --tls-key");
  }
  if (absl::Status t = ConfigureToken(s, env_token); !t.ok()) return t;
  if (absl::Status l = CheckListen("--listen", s.listen); !l.ok()) return l;
  if (!s.metrics_listen.empty()) {
    if (absl::Status l = CheckListen("--metrics-listen", s.metrics_listen); !l.ok()) return l;
  }
  const bool authenticated = !s.token.empty() || !s.tls_client_ca.empty();
  if (!authenticated && !s.allow_unauthenticated && !IsLoopbackListen(s.listen)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen: ", Quoted(s.listen),
        " is reachable beyond this machine and no client is authenticated: give a job token (--token-file or "
        "$TAOT_JOB_TOKEN) or mutual TLS (--tls-client-ca), or --allow-unauthenticated to serve anyone"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseDaemonArgs(int argc, const char* const* argv, DaemonSettings& settings) {
  CLI::App app{"taot-planner: the per-job expert replica planner daemon (gRPC, taot.v1)"};
  Flags flags(app);
  app.set_config("--config", "",
                 "Settings file (TOML, the long flag names as keys; unknown keys are errors); flags given on the "
                 "command line win");
  app.config_formatter(std::make_shared<StrictToml>(flags, app));
  AddOptions(flags, settings);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      app.exit(e);
      return absl::CancelledError("help");
    }
    return absl::InvalidArgumentError(e.what());
  }
  settings.config_file = app.get_config_ptr()->as<std::string>();
  return absl::OkStatus();
}

absl::Status ConfigureDaemon(DaemonSettings& settings, std::optional<std::string_view> env_token) {
  if (absl::Status s = ConfigureJob(settings); !s.ok()) return s;
  if (absl::Status s = ConfigureTimes(settings); !s.ok()) return s;
  if (absl::Status s = ConfigureDevice(settings); !s.ok()) return s;
  if (absl::Status s = InRange("--planning-threads", settings.job.planning_threads, 1, kMaxPlanningThreads); !s.ok()) {
    return s;
  }
  if (!ParseLogLevel(settings.log_level, settings.level)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level: must be debug, info, warning or error, got ", Quoted(settings.log_level)));
  }
  return ConfigureAccess(settings, env_token);
}

bool IsLoopbackListen(std::string_view address) {
  if (IsUnixSocket(address)) return true;
  const auto host_port = SplitHostPort(address);
  if (!host_port) return false;
  const std::string& host = host_port->first;
  if (absl::AsciiStrToLower(host) == "localhost" || host == "::1") return true;
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

std::vector<std::string> SettingsNeedingRestart(const DaemonSettings& running, const DaemonSettings& fresh) {
  const JobConfig& was = running.job;
  const JobConfig& now = fresh.job;
  const std::pair<const char*, bool> changes[] = {
      {"job-id", now.job_id != was.job_id},
      {"world-size", now.world_size != was.world_size},
      {"experts", now.experts != was.experts},
      {"slots", now.slots_per_rank != was.slots_per_rank},
      {"expert-bytes", now.expert_bytes != was.expert_bytes},
      {"ranks-per-node", now.node_of_rank != was.node_of_rank},
      {"inter-node-cost", now.inter_node_cost != was.inter_node_cost},
      {"predictive", now.predictive != was.predictive},
      {"plugin", fresh.plugins != running.plugins},
      {"device", fresh.device != running.device},
      {"planning-threads", now.planning_threads != was.planning_threads},
      {"listen", fresh.listen != running.listen},
      {"metrics-listen", fresh.metrics_listen != running.metrics_listen},
      {"round-timeout-ms", fresh.round_timeout_ms != running.round_timeout_ms},
      {"max-message-mb", fresh.max_message_mb != running.max_message_mb},
      {"max-rounds-mb", fresh.max_rounds_mb != running.max_rounds_mb},
      {"grace-s", fresh.grace_s != running.grace_s},
      {"drain-s", fresh.drain_s != running.drain_s},
      {"token", fresh.token != running.token},
      {"allow-unauthenticated", fresh.allow_unauthenticated != running.allow_unauthenticated},
      {"tls-cert", fresh.tls_cert != running.tls_cert},
      {"tls-key", fresh.tls_key != running.tls_key},
      {"tls-client-ca", fresh.tls_client_ca != running.tls_client_ca},
  };
  std::vector<std::string> names;
  for (const auto& [name, changed] : changes) {
    if (changed) names.emplace_back(name);
  }
  return names;
}

absl::Status ProbeListen(std::string_view address) {
  const auto host_port = SplitHostPort(address);
  if (IsUnixSocket(address) || !host_port) return absl::UnknownError("cannot listen");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string& host = host_port->first;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), host_port->second.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot resolve: ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, freeaddrinfo);
  int error = 0;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    // Like the servers: a port left in TIME_WAIT is free, one with a listener is not.
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    const bool bound = bind(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!bound) error = errno;
    close(fd);
    if (!bound) break;
  }
  if (error == EADDRINUSE) return absl::UnavailableError("address in use");
  if (error != 0) return absl::UnavailableError(std::strerror(error));
  return absl::OkStatus();
}

}  // namespace taot::server
