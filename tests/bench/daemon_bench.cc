// Load benchmark of taot-planner's remote planning (not a test). R ranks, one thread and one
// channel each, plan every (step, layer) over loopback, side by side in the same run with a bare
// gRPC service of the same messages and concurrency that plans nothing (the floor):
//   unary:  one ReportLoad per rank per (step, layer);
//   stream: one Stream message per rank per step carrying all L layers;
//   matrix: one ReportMatrix per (step, layer) carrying the R x E matrix (one client).
// A round is one (step, layer) for every rank (stream: one step's L layers); its time runs from
// the first rank's send to the last rank's plan. Prints a markdown table (docs/performance.md).
//   build/tests/bench/daemon_bench [--ranks 8,64,256] [--rounds 200] [--paths unary,stream,matrix]
//                                  [--planning-threads 1]
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "taot/bench/bare.grpc.pb.h"
#include "taot/server/job.h"
#include "taot/server/planner_service.h"
#include "taot/sim/case_generator.h"
#include "taot/tools/parse_or_exit.h"
#include "taot/wire/load_wire.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kExperts = 256;
constexpr int kLayers = 8;  // per stream message

// The plan every Bare call returns: the daemon's plan for the case, so sizes match.
class BareService final : public taot::bench::Bare::Service {
 public:
  explicit BareService(taot::v1::Plan plan) : plan_(std::move(plan)) {}
  grpc::Status Unary(grpc::ServerContext*, const taot::v1::ReportLoadRequest*, taot::v1::Plan* out) override {
    *out = plan_;
    return grpc::Status::OK;
  }
  grpc::Status Matrix(grpc::ServerContext*, const taot::v1::ReportMatrixRequest*, taot::v1::Plan* out) override {
    *out = plan_;
    return grpc::Status::OK;
  }
  grpc::Status Stream(grpc::ServerContext*,
                      grpc::ServerReaderWriter<taot::v1::StreamResponse, taot::v1::StreamRequest>* stream) override {
    taot::v1::StreamRequest request;
    while (stream->Read(&request)) {
      taot::v1::StreamResponse response;
      for (int i = 0; i < request.layers_size(); ++i) *response.add_plans() = plan_;
      stream->Write(response);
    }
    return grpc::Status::OK;
  }

 private:
  taot::v1::Plan plan_;
};

[[noreturn]] void Fail(const std::string& what) {
  std::cerr << "daemon_bench: " << what << "\n";
  std::abort();
}

// Every rank of a round gets exactly one plan, and the same one: the round's (step, layer), not
// a fallback, one hash.
class Agreement {
 public:
  explicit Agreement(size_t rounds) : hashes_(rounds) {}
  void Check(size_t round, int64_t step, int layer, const taot::v1::Plan& plan) {
    if (plan.fallback()) Fail("a fallback plan: " + plan.fallback_reason());
    if (plan.step() != step || plan.layer() != layer) Fail("a plan for another (step, layer)");
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<uint64_t>& hash = hashes_[round];
    if (!hash) hash = plan.hash();
    if (*hash != plan.hash()) Fail("ranks of one round got different plans");
  }

 private:
  std::mutex mu_;
  std::vector<std::optional<uint64_t>> hashes_;
};

struct Percentiles {
  double p50_ms, p99_ms, rounds_per_s;
};

Percentiles Summarize(std::vector<double> round_ms, double total_s) {
  std::sort(round_ms.begin(), round_ms.end());
  auto at = [&](double p) { return round_ms[static_cast<size_t>(p * static_cast<double>(round_ms.size() - 1))]; };
  return {at(0.5), at(0.99), static_cast<double>(round_ms.size()) / total_s};
}

// Runs `rounds` rounds of `ranks` threads; `call(rank, round)` does one rank's part of a round.
Percentiles RunRounds(int ranks, int rounds, const std::function<void(int, int)>& call) {
  std::vector<Clock::time_point> start(static_cast<size_t>(rounds)), end(static_cast<size_t>(rounds));
  std::vector<std::vector<Clock::time_point>> done(static_cast<size_t>(ranks), std::vector<Clock::time_point>(rounds));
  std::barrier sync(ranks, []() noexcept {});
  std::vector<std::thread> threads;
  const Clock::time_point begin = Clock::now();
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      for (int i = 0; i < rounds; ++i) {
        sync.arrive_and_wait();
        if (r == 0) start[i] = Clock::now();
        call(r, i);
        done[r][i] = Clock::now();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double total_s = std::chrono::duration<double>(Clock::now() - begin).count();
  std::vector<double> round_ms;
  for (int i = 0; i < rounds; ++i) {
    Clock::time_point last = start[i];
    for (int r = 0; r < ranks; ++r) last = std::max(last, done[r][i]);
    round_ms.push_back(std::chrono::duration<double, std::milli>(last - start[i]).count());
  }
  return Summarize(std::move(round_ms), total_s);
}

struct Row {
  std::string path;
  int ranks;
  Percentiles taot, bare;
};

struct Paths {
  bool unary = true, stream = true, matrix = true;
};

void Bench(int R, int rounds, int planning_threads, const Paths& paths, std::vector<Row>& rows) {
  taot::sim::CaseOptions o;
  o.ranks = R;
  o.experts = kExperts;
  o.imbalance = 0.5;
  const taot::PlanRequest request = taot::sim::GenerateCase(o).value().request;
  taot::server::JobConfig config;
  config.job_id = "bench";
  config.world_size = R;
  config.experts = kExperts;
  config.node_of_rank = request.topology().node_of_rank();
  config.round_timeout = absl::Seconds(10);
  config.planning_threads = planning_threads;
  std::unique_ptr<taot::server::Job> job = taot::server::Job::Create(config).value();
  taot::server::PlannerService service(*job);
  // The plan the bare service sends back: the daemon's own for this case.
  taot::v1::Plan canned;
  {
    auto planner = taot::PlannerRegistry::BuiltIn().Create("taot").value();
    taot::server::RoundPlan plan;
    plan.plan = planner->MakePlan(request).value();
    taot::server::ToProto(plan, canned);
  }
  BareService bare(canned);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.RegisterService(&bare);
  builder.SetMaxReceiveMessageSize(256 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  // A channel per rank, as separate trainer processes would have.
  std::vector<std::unique_ptr<taot::v1::Planner::Stub>> stubs;
  std::vector<std::unique_ptr<taot::bench::Bare::Stub>> bare_stubs;
  for (int r = 0; r < R; ++r) {
    grpc::ChannelArguments args;
    args.SetInt("taot.bench.rank", r);  // distinct arguments: distinct connections
    args.SetMaxReceiveMessageSize(256 << 20);
    auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
    stubs.push_back(taot::v1::Planner::NewStub(channel));
    bare_stubs.push_back(taot::bench::Bare::NewStub(channel));
  }
  auto row_request = [&](int r, int64_t step, int layer) {
    taot::v1::ReportLoadRequest q;
    q.set_job_id("bench");
    q.set_rank(r);
    q.set_step(step);
    q.set_layer(layer);
    taot::wire::RowToProto(request.load.row(r), *q.mutable_counts());
    return q;
  };
  int64_t step = 0;
  if (paths.unary) {
    Agreement agreement(rounds);
    const Percentiles unary = RunRounds(R, rounds, [&](int r, int i) {
      grpc::ClientContext context;
      taot::v1::Plan plan;
      const int64_t s = step + i / kLayers;
      if (!stubs[r]->ReportLoad(&context, row_request(r, s, i % kLayers), &plan).ok()) Fail("ReportLoad failed");
      agreement.Check(i, s, i % kLayers, plan);
    });
    step += rounds;
    const Percentiles unary_bare = RunRounds(R, rounds, [&](int r, int i) {
      grpc::ClientContext context;
      taot::v1::Plan plan;
      if (!bare_stubs[r]->Unary(&context, row_request(r, 0, i % kLayers), &plan).ok()) Fail("Bare.Unary failed");
    });
    rows.push_back({"unary, 1 layer per call", R, unary, unary_bare});
  }
  // Streams: one message per rank per step with all layers.
  auto stream_rounds = [&](auto& stub_list, bool daemon) {
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::unique_ptr<grpc::ClientReaderWriter<taot::v1::StreamRequest, taot::v1::StreamResponse>>> streams;
    for (int r = 0; r < R; ++r) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      streams.push_back(stub_list[r]->Stream(contexts.back().get()));
    }
    const int steps = std::max(1, rounds / kLayers);
    Agreement agreement(static_cast<size_t>(steps) * kLayers);
    const Percentiles p = RunRounds(R, steps, [&](int r, int i) {
      taot::v1::StreamRequest q;
      q.set_job_id("bench");
      q.set_rank(r);
      q.set_step(daemon ? step + i : 0);
      for (int layer = 0; layer < kLayers; ++layer) {
        taot::v1::LayerLoad* l = q.add_layers();
        l->set_layer(layer);
        taot::wire::RowToProto(request.load.row(r), *l->mutable_counts());
      }
      streams[r]->Write(q);
      taot::v1::StreamResponse plans;
      if (!streams[r]->Read(&plans) || plans.plans_size() != kLayers) Fail("Stream lost a response or a plan");
      for (int layer = 0; daemon && layer < kLayers; ++layer) {
        agreement.Check(static_cast<size_t>(i) * kLayers + layer, step + i, layer, plans.plans(layer));
      }
    });
    for (auto& s : streams) {
      s->WritesDone();
      if (!s->Finish().ok()) Fail("Stream did not finish cleanly");
    }
    return p;
  };
  if (paths.stream) {
    const Percentiles stream = stream_rounds(stubs, true);
    step += rounds;
    const Percentiles stream_bare = stream_rounds(bare_stubs, false);
    rows.push_back({"stream, 8 layers per message", R, stream, stream_bare});
  }
  if (paths.matrix) {
    // The whole matrix from one client.
    taot::v1::ReportMatrixRequest m;
    m.set_job_id("bench");
    taot::wire::MatrixToProto(request.load, m);
    const Percentiles matrix = RunRounds(1, rounds, [&](int, int i) {
      m.set_step(step + i);
      grpc::ClientContext context;
      taot::v1::Plan plan;
      if (!stubs[0]->ReportMatrix(&context, m, &plan).ok()) Fail("ReportMatrix failed");
      if (plan.fallback() || plan.step() != step + i) Fail("ReportMatrix returned another round's plan or a fallback");
    });
    const Percentiles matrix_bare = RunRounds(1, rounds, [&](int, int) {
      grpc::ClientContext context;
      taot::v1::Plan plan;
      if (!bare_stubs[0]->Matrix(&context, m, &plan).ok()) Fail("Bare.Matrix failed");
    });
    rows.push_back({"whole matrix, 1 call per layer", R, matrix, matrix_bare});
  }
  server->Shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's Abseil checks every mutex acquisition for lock-order cycles (a debugging aid that
  // showed up in the load benchmark's profile); the daemon's lock order is fixed.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"daemon_bench: taot-planner's remote planning against a bare gRPC floor"};
  std::vector<int> ranks = {8, 64, 256};
  int rounds = 200;
  app.add_option("--ranks", ranks, "Rank counts")->delimiter(',')->check(CLI::Range(1, 4096));
  app.add_option("--rounds", rounds, "Rounds per path (stream: rounds / 8 messages)")->check(CLI::Range(8, 1000000));
  int planning_threads = 1;
  app.add_option("--planning-threads", planning_threads, "The daemon's --planning-threads")
      ->check(CLI::Range(1, taot::server::kMaxPlanningThreads));
  std::vector<std::string> names = {"unary", "stream", "matrix"};
  app.add_option("--paths", names, "Paths to measure")
      ->delimiter(',')
      ->check(CLI::IsMember({"unary", "stream", "matrix"}));
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "daemon_bench")) return *code;
  auto chosen = [&](const char* name) { return std::find(names.begin(), names.end(), name) != names.end(); };
  const Paths paths{chosen("unary"), chosen("stream"), chosen("matrix")};
  std::vector<Row> rows;
  for (int R : ranks) {
    std::cerr << "R = " << R << " ...\n";
    Bench(R, rounds, planning_threads, paths, rows);
  }
  std::printf(
      "| path | R | taot p50 ms | taot p99 ms | rounds/s | floor p50 ms | floor p99 ms | floor rounds/s | p50 / floor "
      "|\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %d | %.2f | %.2f | %.0f | %.2f | %.2f | %.0f | %.2fx |\n", r.path.c_str(), r.ranks,
                r.taot.p50_ms, r.taot.p99_ms, r.taot.rounds_per_s, r.bare.p50_ms, r.bare.p99_ms, r.bare.rounds_per_s,
                r.taot.p50_ms / r.bare.p50_ms);
  }
  return 0;
}
