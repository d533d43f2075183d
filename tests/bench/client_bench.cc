// Client-side cost per MoE layer in each mode (a benchmark, not a test): R ranks as threads of
// this process, connected by the in-process transport (or --transport gloo: TCP over loopback),
// with an in-process daemon for the remote and predictive modes. Per layer and rank: the plan's wait (the daemon's
// round and the gather of every rank's answer; or the all-gather of counts and the local plan; or the all-gather
// and the split over pushed replicas), and the token reroute of the rank's pairs. Prints a markdown table
// (docs/performance.md).
//   build/tests/bench/client_bench [--ranks 8,64] [--layers 40] [--pairs 16384] [--transport in_process|gloo]
#include <gloo/rendezvous/hash_store.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "taot/client/client.h"
#include "taot/client/gloo_transport.h"
#include "taot/client/in_process_transport.h"
#include "taot/client/reroute.h"
#include "taot/server/job.h"
#include "taot/server/planner_service.h"
#include "taot/sim/case_generator.h"
#include "taot/tools/parse_or_exit.h"

namespace {

using taot::client::Mode;
constexpr int kExperts = 256;

struct Samples {
  std::mutex mu;
  std::vector<double> plan_ms, reroute_ms;
  std::vector<std::string> sources;
};

double P50(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Rank r's pairs: its row of the case's load, in a shuffled order.
std::vector<int32_t> Pairs(const taot::LoadMatrix& load, int r) {
  std::vector<int32_t> pairs;
  for (int e = 0; e < load.experts(); ++e) pairs.insert(pairs.end(), static_cast<size_t>(load.at(r, e)), e);
  std::shuffle(pairs.begin(), pairs.end(), std::mt19937(static_cast<unsigned>(r)));
  return pairs;
}

// The load every rank reports at R ranks (main checks each --ranks value can make one).
absl::StatusOr<taot::sim::GeneratedCase> BenchCase(int R, int64_t pairs_per_rank) {
  taot::sim::CaseOptions o;
  o.ranks = R;
  o.experts = kExperts;
  o.imbalance = 0.5;
  o.tokens_per_rank = pairs_per_rank / o.top_k;
  return taot::sim::GenerateCase(o);
}

void Run(int R, Mode mode, int layers, int64_t pairs_per_rank, bool gloo, Samples& out) {
  const taot::PlanRequest request = BenchCase(R, pairs_per_rank).value().request;
  std::unique_ptr<taot::server::Job> job;
  std::unique_ptr<taot::server::PlannerService> service;
  std::unique_ptr<grpc::Server> server;
  std::string address;
  if (mode != Mode::kLocal) {
    taot::server::JobConfig config;
    config.job_id = "bench";
    config.world_size = R;
    config.experts = kExperts;
    config.round_timeout = absl::Seconds(10);
    config.predictive = mode == Mode::kPredictive;
    job = taot::server::Job::Create(config).value();
    service = std::make_unique<taot::server::PlannerService>(*job);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service.get());
    server = builder.BuildAndStart();
    address = "127.0.0.1:" + std::to_string(port);
  }
  gloo::rendezvous::HashStore store;
  std::vector<std::unique_ptr<taot::client::Transport>> in_process = taot::client::ConnectInProcess(R);
  std::vector<std::thread> threads;
  for (int r = 0; r < R; ++r) {
    threads.emplace_back([&, r] {
      std::shared_ptr<taot::client::Transport> transport;
      if (gloo) {
        taot::client::GlooOptions g;
        g.rank = r;
        g.size = R;
        g.timeout = absl::Seconds(120);
        transport = *taot::client::ConnectGlooThroughStore(g, store);
      } else {
        transport = std::move(in_process[r]);
      }
      taot::client::ClientOptions co;
      co.job_id = "bench";
      co.experts = kExperts;
      co.node = "n" + std::to_string(r / 8);
      co.mode = mode;
      co.address = address;
      co.call_timeout = absl::Seconds(30);
      co.placement_wait = absl::Milliseconds(200);
      std::unique_ptr<taot::client::Client> client = *taot::client::Client::Create(co, transport);
      const std::vector<int32_t> pairs = Pairs(request.load, r);
      std::vector<int32_t> dest(pairs.size());
      std::vector<int64_t> sends(R);
      for (int layer = 0; layer < layers; ++layer) {
        // Steps of 4 layers, so that predictive placements (made from the step before) exist.
        absl::StatusOr<taot::client::LayerPlan> plan = client->PlanLayer(layer / 4, layer % 4, request.load.row(r));
        if (!plan.ok()) {
          std::cerr << "client_bench: " << plan.status() << "\n";
          std::abort();
        }
        const auto start = std::chrono::steady_clock::now();
        const taot::client::RerouteTable table = *taot::client::RerouteTable::For(plan->plan, R, kExperts, r);
        if (!taot::client::Reroute(table, pairs, dest, sends).ok()) std::abort();
        const double reroute =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (layer < 4) continue;  // warm-up (and predictive mode's first step)
        std::lock_guard<std::mutex> lock(out.mu);
        out.plan_ms.push_back(absl::ToDoubleMilliseconds(plan->plan_time));
        out.reroute_ms.push_back(reroute);
        out.sources.emplace_back(taot::ProvenanceName(plan->identity.provenance));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (server) server->Shutdown(std::chrono::system_clock::now());
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"client_bench: libtaot_client's cost per layer in each mode"};
  std::vector<int> ranks = {8, 64};
  int layers = 40;
  int64_t pairs = 16384;
  app.add_option("--ranks", ranks, "Rank counts")->delimiter(',')->check(CLI::Range(2, 1024));
  app.add_option("--layers", layers, "Layers per rank (the first 4 are warm-up)")->check(CLI::Range(5, 100000));
  app.add_option("--pairs", pairs, "Routed pairs per rank (tokens x top-k)")->check(CLI::Range(1, 1 << 24));
  std::string transport = "in_process";
  app.add_option("--transport", transport, "How the simulated ranks connect")
      ->check(CLI::IsMember({"in_process", "gloo"}))
      ->capture_default_str();
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "client_bench")) return *code;
  for (int R : ranks) {
    if (absl::Status s = BenchCase(R, pairs).status(); !s.ok()) {
      std::cerr << "client_bench: error: --ranks " << R << ": no case of " << kExperts
                << " experts at 50% imbalance: " << s.message() << " (see client_bench --help)\n";
      return 2;
    }
  }
  std::printf("| mode | R | plan p50 ms | reroute p50 ms (%lld pairs) | plans from |\n", static_cast<long long>(pairs));
  std::fprintf(stderr, "transport: %s\n", transport.c_str());
  std::printf("|---|---|---|---|---|\n");
  for (int R : ranks) {
    for (Mode mode : {Mode::kLocal, Mode::kRemote, Mode::kPredictive}) {
      std::cerr << "R = " << R << ", " << taot::client::ModeName(mode) << " ...\n";
      Samples s;
      Run(R, mode, layers, pairs, transport == "gloo", s);
      std::map<std::string, int> from;
      for (const std::string& source : s.sources) ++from[source];
      std::string sources;
      for (const auto& [name, n] : from) sources += name + " " + std::to_string(n) + " ";
      std::printf("| %s | %d | %.3f | %.3f | %s|\n", std::string(taot::client::ModeName(mode)).c_str(), R,
                  P50(s.plan_ms), P50(s.reroute_ms), sources.c_str());
    }
  }
  return 0;
}
