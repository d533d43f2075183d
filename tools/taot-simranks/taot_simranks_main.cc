// taot-simranks: simulated training ranks for a running taot-planner. R real gRPC clients, one
// thread each, register with their node names and report every (step, layer, microbatch)'s
// load row from a taot-sim workload (drifting hot experts with bursts); the plans come back,
// and per round it prints the imbalance before and after and the cross-node traffic, checks
// that every rank got the same plan, and ends with the round latencies.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "taot/sim/sequence_workload.h"
#include "taot/v1/planner.grpc.pb.h"

namespace taot::simranks {
namespace {

struct Args {
  std::string address = "127.0.0.1:50051";
  std::string job_id;
  std::string token;
  sim::SequenceOptions workload;
  int ranks_per_node = 8;
  int timeout_s = 30;
};

// What rank r learnt of one round.
struct Seen {
  uint64_t hash = 0;
  bool fallback = false;
  double latency_us = 0;
};

struct Round {
  int64_t step;
  int layer, microbatch;
};

class Ranks {
 public:
  Ranks(const Args& a, const sim::Workload& w) : a_(a), w_(w), shape_(w.shape()) {
    for (int s = 0; s < shape_.steps; ++s) {
      for (int l = 0; l < shape_.layers; ++l) {
        for (int m = 0; m < shape_.microbatches; ++m) rounds_.push_back({s * int64_t{shape_.microbatches} + m, l, m});
      }
    }
    seen_.assign(rounds_.size(), std::vector<Seen>(static_cast<size_t>(shape_.ranks)));
    channel_ = grpc::CreateChannel(a.address, grpc::InsecureChannelCredentials());
  }

  // Runs every rank to the end; false if any call failed.
  bool Run() {
    std::vector<std::thread> threads;
    for (int r = 0; r < shape_.ranks; ++r) threads.emplace_back([this, r] { RunRank(r); });
    for (std::thread& t : threads) t.join();
    return !failed_;
  }

  // Mismatched hashes and fallbacks over all rounds, and the latency percentiles.
  void Summarize() const {
    int mismatched = 0, fallbacks = 0;
    std::vector<double> latencies;
    for (const auto& round : seen_) {
      for (const Seen& s : round) {
        mismatched += s.hash != round[0].hash;
        latencies.push_back(s.latency_us);
      }
      fallbacks += round[0].fallback;
    }
    std::sort(latencies.begin(), latencies.end());
    auto pct = [&](double p) { return latencies.empty() ? 0.0 : latencies[static_cast<size_t>(p * static_cast<double>(latencies.size() - 1))]; };
    std::printf("%zu rounds x %d ranks: %d fallback rounds, %d plans that differ from rank 0's; "
                "ReportLoad latency p50 %.0f us, p99 %.0f us\n",
                seen_.size(), shape_.ranks, fallbacks, mismatched, pct(0.5), pct(0.99));
  }

 private:
  void Fail(int rank, const std::string& what, const grpc::Status& s) {
    std::lock_guard<std::mutex> lock(print_);
    if (!failed_.exchange(true)) {
      std::cerr << "taot-simranks: error: rank " << rank << ": " << what << ": " << s.error_message() << "\n";
    }
  }

  void Prepare(grpc::ClientContext& context) const {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(a_.timeout_s));
    if (!a_.token.empty()) context.AddMetadata("authorization", "Bearer " + a_.token);
  }

  void RunRank(int rank) {
    auto stub = taot::v1::Planner::NewStub(channel_);
    taot::v1::RegisterRankRequest reg;
    reg.set_job_id(a_.job_id);
    reg.set_rank(rank);
    reg.set_world_size(shape_.ranks);
    reg.set_node(absl::StrCat("node-", rank / a_.ranks_per_node));
    reg.set_local_rank(rank % a_.ranks_per_node);
    reg.set_device(absl::StrCat("sim:", rank % a_.ranks_per_node));
    taot::v1::RegisterRankResponse registered;
    {
      grpc::ClientContext context;
      Prepare(context);
      if (grpc::Status s = stub->RegisterRank(&context, reg, &registered); !s.ok()) return Fail(rank, "register", s);
    }
    // Planning starts once every rank is in.
    for (size_t i = 0; i < rounds_.size() && !failed_; ++i) {
      const Round& round = rounds_[i];
      const LoadMatrix load = w_.Load(static_cast<int>(round.step / shape_.microbatches), round.layer, round.microbatch);
      taot::v1::ReportLoadRequest request;
      request.set_job_id(a_.job_id);
      request.set_rank(rank);
      request.set_step(round.step);
      request.set_layer(round.layer);
      for (int64_t n : load.row(rank)) request.add_counts(n);
      taot::v1::Plan plan;
      grpc::Status status;
      const absl::Time start = absl::Now();
      // Until every rank has registered the daemon says so (FAILED_PRECONDITION): wait, retry.
      for (int attempt = 0;; ++attempt) {
        grpc::ClientContext context;
        Prepare(context);
        status = stub->ReportLoad(&context, request, &plan);
        const bool registering = status.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
                                 status.error_message().find("waiting for its ranks") != std::string::npos;
        if (!registering || attempt == 500) break;
        absl::SleepFor(absl::Milliseconds(10));
      }
      if (!status.ok()) return Fail(rank, absl::StrCat("step ", round.step, " layer ", round.layer), status);
      seen_[i][rank] = {plan.hash(), plan.fallback(), absl::ToDoubleMicroseconds(absl::Now() - start)};
      if (rank == 0 && round.microbatch == 0) Print(round, plan);
    }
  }

  void Print(const Round& round, const taot::v1::Plan& plan) {
    std::lock_guard<std::mutex> lock(print_);
    const taot::v1::PlanStats& s = plan.stats();
    std::printf("step %3lld layer %2d  imbalance %5.1f%% -> %5.1f%%  transfers %2d intra %2d inter  "
                "tokens across nodes %7lld  %s v%llu %016llx%s\n",
                static_cast<long long>(round.step / shape_.microbatches), round.layer, s.imbalance_before_pct(),
                s.imbalance_after_pct(), s.intra_node_transfers(), s.inter_node_transfers(),
                static_cast<long long>(s.tokens_inter_node()), plan.planner().c_str(),
                static_cast<unsigned long long>(plan.version()), static_cast<unsigned long long>(plan.hash()),
                plan.fallback() ? absl::StrCat("  FALLBACK: ", plan.fallback_reason()).c_str() : "");
    std::fflush(stdout);
  }

  const Args& a_;
  const sim::Workload& w_;
  const sim::WorkloadShape shape_;
  std::vector<Round> rounds_;
  std::vector<std::vector<Seen>> seen_;  // per round, per rank
  std::shared_ptr<grpc::Channel> channel_;
  std::atomic<bool> failed_{false};
  std::mutex print_;
};

int Main(int argc, char** argv) {
  CLI::App app{"taot-simranks: simulated ranks that register with a taot-planner and plan every layer"};
  Args a;
  a.workload.layers = 4;
  a.workload.steps = 5;
  a.workload.microbatches = 1;
  app.add_option("--address", a.address, "The daemon's address")->capture_default_str();
  app.add_option("--job-id", a.job_id, "The job the daemon serves")->required();
  app.add_option("--world-size", a.workload.ranks, "Ranks to simulate")->capture_default_str();
  app.add_option("--experts", a.workload.experts, "Experts per layer")->capture_default_str();
  app.add_option("--ranks-per-node", a.ranks_per_node, "Ranks per node (node names node-0, node-1, ...)")
      ->capture_default_str();
  app.add_option("--layers", a.workload.layers, "MoE layers")->capture_default_str();
  app.add_option("--steps", a.workload.steps, "Steps")->capture_default_str();
  app.add_option("--microbatches", a.workload.microbatches, "Microbatches per step")->capture_default_str();
  app.add_option("--imbalance", a.workload.imbalance, "Initial imbalance (fraction)")->capture_default_str();
  app.add_option("--seed", a.workload.seed, "Workload seed")->capture_default_str();
  app.add_option("--token", a.token, "The job token, if the daemon requires one");
  app.add_option("--timeout-s", a.timeout_s, "Deadline of each call")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "taot-simranks: error: " << e.what() << " (see taot-simranks --help)\n";
    return 2;
  }
  if (a.ranks_per_node <= 0) {
    std::cerr << "taot-simranks: error: --ranks-per-node: must be >= 1\n";
    return 2;
  }
  absl::StatusOr<std::unique_ptr<sim::SequenceWorkload>> workload = sim::SequenceWorkload::Create(a.workload);
  if (!workload.ok()) {
    std::cerr << "taot-simranks: error: " << workload.status().message() << "\n";
    return 2;
  }
  Ranks ranks(a, **workload);
  const bool ok = ranks.Run();
  ranks.Summarize();
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace taot::simranks

int main(int argc, char** argv) { return taot::simranks::Main(argc, argv); }
