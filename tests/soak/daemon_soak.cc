// A bounded soak of taot-planner (issue 11): R ranks (threads with their own gRPC channels)
// report every round's row to a real daemon process while faults are injected from a seeded
// schedule: ranks that miss a round, ranks that cancel their call early, SIGHUP with a broken
// settings file, planner swaps (by SIGHUP with a good file, and by the Admin API), and the daemon
// killed (SIGKILL) and restarted on the same port. It checks that
//   - no plan is lost: every call made while the daemon lived gets a plan (a cancelled call may
//     end first), and a rank that registers again is planning again within a few rounds;
//   - none is duplicated or mixed up: each plan is for the round it was asked for;
//   - none differs between ranks: every rank's plan of a round has the same version and hash;
//   - every call is answered within its deadline (plus a second of slack for a busy machine);
//   - the daemon's resident memory stays bounded over the rounds;
// and prints the round latencies and RSS before and after. Exit status 0 when all hold.
//
// Usage: taot_daemon_soak --daemon build/server/taot-planner [--ranks 256] [--rounds 60]
//        [--seed 1] [--layers 4]; ctest runs a short schedule, `--rounds 2000` soaks.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "taot/v1/planner.grpc.pb.h"
#include "taot/wire/load_wire.h"

extern char** environ;

namespace taot::soak {
namespace {

struct Args {
  std::string daemon;
  int ranks = 256;
  int rounds = 60;
  int layers = 4;
  uint64_t seed = 1;
  int round_timeout_ms = 300;
  double max_rss_growth_mb = 64;
};

// What the schedule does before round i.
enum class Fault { kNone, kMissingRank, kCancellingRank, kBrokenReload, kReloadSwap, kAdminSwap, kKillRestart };

std::string_view FaultName(Fault f) {
  switch (f) {
    case Fault::kNone:
      return "none";
    case Fault::kMissingRank:
      return "missing rank";
    case Fault::kCancellingRank:
      return "cancelling rank";
    case Fault::kBrokenReload:
      return "SIGHUP, broken file";
    case Fault::kReloadSwap:
      return "SIGHUP, planner swap";
    case Fault::kAdminSwap:
      return "Admin planner swap";
    case Fault::kKillRestart:
      return "daemon killed and restarted";
  }
  return "?";
}

struct Step {
  Fault fault = Fault::kNone;
  int rank = -1;  // the missing or cancelling rank
};

// A seeded schedule: a rank fault in about a third of the rounds, every daemon fault at least once.
std::vector<Step> Schedule(const Args& a) {
  std::mt19937_64 random(a.seed);
  std::vector<Step> steps(static_cast<size_t>(a.rounds));
  for (Step& s : steps) {
    const uint64_t draw = random() % 6;
    if (draw == 0) s = {Fault::kMissingRank, static_cast<int>(random() % static_cast<uint64_t>(a.ranks))};
    if (draw == 1) s = {Fault::kCancellingRank, static_cast<int>(random() % static_cast<uint64_t>(a.ranks))};
  }
  const int n = a.rounds;
  for (auto [at, fault] : {std::pair{n / 6, Fault::kBrokenReload},
                           {n / 3, Fault::kReloadSwap},
                           {n / 2, Fault::kKillRestart},
                           {2 * n / 3, Fault::kAdminSwap}}) {
    steps[static_cast<size_t>(std::max(1, at))] = {fault, -1};
  }
  return steps;
}

int64_t ResidentKb(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// The daemon process: started on a port, killed, started again on the same one.
class Daemon {
 public:
  Daemon(const Args& a, std::filesystem::path dir) : a_(a), dir_(std::move(dir)) { WriteConfig("taot"); }
  ~Daemon() { Kill(SIGKILL); }

  void WriteConfig(const std::string& planner) const {
    std::ofstream(dir_ / "taot.toml") << "planner = \"" << planner << "\"\n";
  }
  void WriteBrokenConfig() const { std::ofstream(dir_ / "taot.toml") << "planner = \"echo\"\nslots = [\n"; }

  bool Start() {
    const std::string listen = absl::StrCat("127.0.0.1:", port_);
    std::vector<std::string> args = {a_.daemon,
                                     "--job-id",
                                     "soak",
                                     "--world-size",
                                     std::to_string(a_.ranks),
                                     "--experts",
                                     std::to_string(2 * a_.ranks),
                                     "--ranks-per-node",
                                     "8",
                                     "--listen",
                                     listen,
                                     "--metrics-listen",
                                     "",
                                     "--round-timeout-ms",
                                     std::to_string(a_.round_timeout_ms),
                                     "--config",
                                     (dir_ / "taot.toml").string(),
                                     "--log-level",
                                     "info",
                                     "--grace-s",
                                     "0"};
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    const std::string log = (dir_ / absl::StrCat("daemon-", starts_++, ".log")).string();
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid_, argv[0], &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    if (rc != 0) return false;
    // The port it chose (port 0 the first time), from its "listening" line.
    const std::regex listening("msg=listening address=127\\.0\\.0\\.1:([0-9]+)");
    for (int i = 0; i < 300; ++i) {
      std::ifstream in(log);
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      std::smatch m;
      if (std::regex_search(s, m, listening)) {
        port_ = std::stoi(m[1]);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::cerr << "soak: the daemon did not start; its log is " << log << "\n";
    return false;
  }

  void Kill(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    if (signal == SIGKILL) {
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  void Signal(int signal) const { ::kill(pid_, signal); }
  pid_t pid() const { return pid_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  const Args& a_;
  const std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  int starts_ = 0;
};

// What one rank saw of one round.
struct Seen {
  bool called = false;
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
  uint64_t version = 0, hash = 0;
  bool right_round = true;
  absl::Duration latency;
  absl::Duration deadline;
  int64_t daemon_start = 0;  // which daemon process the call went to (counts restarts)
};

class Soak {
 public:
  Soak(const Args& a, Daemon& daemon)
      : a_(a), daemon_(daemon), schedule_(Schedule(a)), seen_(a.rounds, std::vector<Seen>(a.ranks)) {}

  bool Run() {
    std::vector<std::thread> threads;
    for (int r = 0; r < a_.ranks; ++r) threads.emplace_back([this, r] { Rank(r); });
    for (int i = 0; i < a_.rounds; ++i) {
      Inject(i);
      WaitForRanks(i + 1);
    }
    for (std::thread& t : threads) t.join();
    return Check();
  }

 private:
  // Rank r's loop: register, then every round's row, registering again when the daemon forgot it.
  void Rank(int r) {
    auto stub = Stub();
    Register(*stub, r);
    std::mt19937_64 random(a_.seed * 7919 + static_cast<uint64_t>(r));
    for (int i = 0; i < a_.rounds; ++i) {
      AwaitRound(i);
      const Step& step = schedule_[static_cast<size_t>(i)];
      if (!(step.fault == Fault::kMissingRank && step.rank == r)) Report(*stub, r, i, step, random);
      Done(i);
    }
  }

  std::unique_ptr<taot::v1::Planner::Stub> Stub() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // a channel of its own, as each rank has
    return taot::v1::Planner::NewStub(grpc::CreateCustomChannel(address(), grpc::InsecureChannelCredentials(), args));
  }

  void Register(taot::v1::Planner::Stub& stub, int r) {
    taot::v1::RegisterRankRequest request;
    request.set_job_id("soak");
    request.set_rank(r);
    request.set_world_size(a_.ranks);
    request.set_node(absl::StrCat("node-", r / 8));
    request.set_experts(2 * a_.ranks);
    for (int attempt = 0; attempt < 100; ++attempt) {
      grpc::ClientContext context;
      context.set_wait_for_ready(true);
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      taot::v1::RegisterRankResponse response;
      if (stub.RegisterRank(&context, request, &response).ok()) return;
    }
  }

  void Report(taot::v1::Planner::Stub& stub, int r, int i, const Step& step, std::mt19937_64& random) {
    std::vector<int64_t> row(static_cast<size_t>(2 * a_.ranks));
    // Skewed loads: expert 0 hot, the rest drawn per (rank, round).
    for (size_t e = 0; e < row.size(); ++e) row[e] = static_cast<int64_t>(random() % 64) + (e == 0 ? 2000 : 0);
    taot::v1::ReportLoadRequest request;
    request.set_job_id("soak");
    request.set_rank(r);
    request.set_step(i / a_.layers);
    request.set_layer(i % a_.layers);
    taot::wire::RowToProto(row, *request.mutable_counts());
    const bool cancel = step.fault == Fault::kCancellingRank && step.rank == r;
    const absl::Duration deadline = cancel ? absl::Milliseconds(1) : absl::Seconds(5);
    Seen& seen = seen_[static_cast<size_t>(i)][static_cast<size_t>(r)];
    seen.called = true;
    seen.deadline = deadline;
    seen.daemon_start = starts_.load();
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    taot::v1::Plan plan;
    const absl::Time start = absl::Now();
    grpc::Status status = stub.ReportLoad(&context, request, &plan);
    seen.latency = absl::Now() - start;
    seen.code = status.error_code();
    seen.message = status.error_message();
    seen.version = plan.version();
    seen.hash = plan.hash();
    seen.right_round = !status.ok() || (plan.step() == request.step() && plan.layer() == request.layer());
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
        status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      Register(stub, r);  // the daemon restarted: it knows no ranks
    }
  }

  void Inject(int i) {
    const Step& step = schedule_[static_cast<size_t>(i)];
    switch (step.fault) {
      case Fault::kBrokenReload:
        daemon_.WriteBrokenConfig();
        daemon_.Signal(SIGHUP);
        break;
      case Fault::kReloadSwap:
        daemon_.WriteConfig("echo");
        daemon_.Signal(SIGHUP);
        break;
      case Fault::kAdminSwap: {
        auto admin = taot::v1::Admin::NewStub(grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        taot::v1::SetPlannerRequest request;
        request.set_planner("taot");
        taot::v1::SetPlannerResponse response;
        if (!admin->SetPlanner(&context, request, &response).ok()) admin_failed_ = true;
        break;
      }
      case Fault::kKillRestart:
        daemon_.Kill(SIGKILL);
        killed_before_.push_back(i);
        ++starts_;
        if (!daemon_.Start()) restart_failed_ = true;
        break;
      default:
        break;
    }
    // The broken file names planner echo too: it must change nothing.
    const std::map<Fault, std::string> planner_after = {
        {Fault::kBrokenReload, "taot"}, {Fault::kReloadSwap, "echo"}, {Fault::kAdminSwap, "taot"}};
    if (const auto it = planner_after.find(step.fault); it != planner_after.end()) {
      if (!PlannerBecomes(it->second)) {
        std::cerr << "soak: after '" << FaultName(step.fault) << "' the planner is not " << it->second << "\n";
        admin_failed_ = true;
      }
    }
    if (i == a_.rounds / 2 + 8) rss_before_kb_ = ResidentKb(daemon_.pid());
    std::lock_guard<std::mutex> lock(mu_);
    released_ = i + 1;
    cv_.notify_all();
  }

  // Whether the daemon's planner is `name` within a few seconds (a signal is handled on its own thread).
  bool PlannerBecomes(const std::string& name) {
    auto admin = taot::v1::Admin::NewStub(grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
    for (int i = 0; i < 50; ++i) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      taot::v1::StatusResponse status;
      if (admin->GetStatus(&context, taot::v1::StatusRequest(), &status).ok() && status.planner() == name) return true;
      absl::SleepFor(absl::Milliseconds(100));
    }
    return false;
  }

  void AwaitRound(int i) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return released_ > i; });
  }
  void Done(int i) {
    std::lock_guard<std::mutex> lock(mu_);
    if (++done_[i] == a_.ranks) cv_.notify_all();
  }
  void WaitForRanks(int rounds) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_[rounds - 1] == a_.ranks; });
  }

  std::string address() const { return daemon_.address(); }

  bool Check() {
    bool ok = !restart_failed_ && !admin_failed_;
    if (restart_failed_) std::cerr << "soak: the daemon did not restart\n";
    if (admin_failed_) std::cerr << "soak: a planner swap failed\n";
    const int64_t rss_after_kb = ResidentKb(daemon_.pid());
    std::vector<double> call_ms, round_ms;
    int lost = 0, mixed = 0, disagreeing = 0, late = 0, recovering = 0;
    for (int i = 0; i < a_.rounds; ++i) {
      // Rounds just after a restart are rounds of registering again, not of planning.
      const bool after_restart =
          std::any_of(killed_before_.begin(), killed_before_.end(), [&](int k) { return i >= k && i < k + 3; });
      std::optional<std::pair<uint64_t, uint64_t>> agreed;
      absl::Duration slowest;
      for (int r = 0; r < a_.ranks; ++r) {
        const Seen& s = seen_[static_cast<size_t>(i)][static_cast<size_t>(r)];
        if (!s.called) continue;
        const bool cancelled = s.deadline < absl::Seconds(1);
        if (s.latency > s.deadline + absl::Seconds(1)) ++late;
        if (!s.right_round) ++mixed;
        if (s.code != grpc::StatusCode::OK) {
          if (after_restart) {
            ++recovering;
          } else if (!cancelled) {
            if (lost++ < 5) std::cerr << "soak: round " << i << " rank " << r << ": " << s.message << "\n";
          }
          continue;
        }
        if (!cancelled) call_ms.push_back(absl::ToDoubleMilliseconds(s.latency));
        slowest = std::max(slowest, s.latency);
        const std::pair<uint64_t, uint64_t> mine{s.version, s.hash};
        if (!agreed) agreed = mine;
        if (*agreed != mine) ++disagreeing;
      }
      if (agreed) round_ms.push_back(absl::ToDoubleMilliseconds(slowest));
    }
    auto percentile = [](std::vector<double> v, double p) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
    };
    std::cout << absl::StrFormat("soak: %d ranks, %d rounds, faults:", a_.ranks, a_.rounds);
    for (Fault f : {Fault::kMissingRank, Fault::kCancellingRank, Fault::kBrokenReload, Fault::kReloadSwap,
                    Fault::kAdminSwap, Fault::kKillRestart}) {
      std::cout << absl::StrFormat(
          " %s x%d;", FaultName(f),
          std::count_if(schedule_.begin(), schedule_.end(), [f](const Step& s) { return s.fault == f; }));
    }
    std::cout << "\n"
              << absl::StrFormat(
                     "soak: call latency p50 %.1f ms, p99 %.1f ms; round (slowest rank) p50 %.1f ms, "
                     "p99 %.1f ms\n",
                     percentile(call_ms, 0.5), percentile(call_ms, 0.99), percentile(round_ms, 0.5),
                     percentile(round_ms, 0.99))
              << absl::StrFormat("soak: daemon RSS %.1f MiB after warm-up, %.1f MiB at the end\n",
                                 static_cast<double>(rss_before_kb_) / 1024, static_cast<double>(rss_after_kb) / 1024)
              << absl::StrFormat(
                     "soak: lost %d, mixed up %d, disagreeing %d, late %d (calls while re-registering: %d)\n", lost,
                     mixed, disagreeing, late, recovering);
    if (lost + mixed + disagreeing + late > 0) ok = false;
    if (rss_before_kb_ <= 0 || static_cast<double>(rss_after_kb - rss_before_kb_) / 1024 > a_.max_rss_growth_mb) {
      std::cerr << "soak: the daemon's RSS grew by more than " << a_.max_rss_growth_mb << " MiB\n";
      ok = false;
    }
    return ok;
  }

  const Args& a_;
  Daemon& daemon_;
  const std::vector<Step> schedule_;
  std::vector<std::vector<Seen>> seen_;
  std::atomic<int64_t> starts_{0};
  std::vector<int> killed_before_;
  bool restart_failed_ = false, admin_failed_ = false;
  int64_t rss_before_kb_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  int released_ = 0;
  std::map<int, int> done_;
};

int Main(int argc, char** argv) {
  Args a;
  CLI::App app{"taot_daemon_soak: ranks against a real taot-planner with faults injected"};
  app.add_option("--daemon", a.daemon, "The taot-planner binary")->required();
  app.add_option("--ranks", a.ranks, "Ranks R (E = 2R)")->check(CLI::Range(8, 4096))->capture_default_str();
  app.add_option("--rounds", a.rounds, "Rounds")->check(CLI::Range(12, 1000000))->capture_default_str();
  app.add_option("--layers", a.layers, "Layers per step")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--seed", a.seed, "The fault schedule's seed")->capture_default_str();
  app.add_option("--round-timeout-ms", a.round_timeout_ms, "The daemon's round timeout")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  app.add_option("--max-rss-growth-mb", a.max_rss_growth_mb, "Allowed RSS growth after warm-up")
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / absl::StrCat("taot-soak-", getpid());
  std::filesystem::create_directories(dir);
  bool ok = false;
  {
    Daemon daemon(a, dir);
    if (daemon.Start()) {
      Soak soak(a, daemon);
      ok = soak.Run();
    }
  }
  if (ok) std::filesystem::remove_all(dir);
  std::cout << (ok ? "soak: passed\n" : absl::StrCat("soak: FAILED (daemon logs in ", dir.string(), ")\n"));
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace taot::soak

int main(int argc, char** argv) { return taot::soak::Main(argc, argv); }
