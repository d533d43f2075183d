// How much of a replica move a prefetch hides (docs/performance.md): two ranks over Gloo
// (loopback TCP, threads of this process), each sending one expert of --mib MiB to the other in
// the tensor form. First the move alone (started and waited for at once), then started ahead
// and waited for after a window in which the host does nothing (a sleep: on a GPU the layers
// before run on the device, not on these cores), for windows of 0 to 2x the move. What is left
// to wait after the window is what the layer would stall. On a host transport the unpack into
// the slot runs in the wait, so it is never hidden here (NCCL enqueues it behind the receive).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include <gloo/rendezvous/hash_store.h>

#include "taot/client/gloo_transport.h"
#include "taot/client/layer_tables.h"
#include "taot/client/tensor_exchange.h"
#include "taot/tools/parse_or_exit.h"

namespace taot::client {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Options {
  int mib = 64;
  int repeats = 5;
};

// One rank's side: the median wait (ms) with no window, and after each window.
struct RankResult {
  double move_ms = 0;
  std::vector<double> exposed_ms;
};

void Barrier(Transport& t) {
  std::vector<int64_t> all(static_cast<size_t>(t.size()));
  if (!t.AllGather(std::vector<int64_t>{0}, all, absl::Seconds(60)).ok()) std::abort();
}

// Starts the moves and returns the time Wait took after `window_ms` of doing nothing.
double WaitAfter(Transport& t, const LayerTables& tables, const ExpertLayout& layout, MoveWorkspace& workspace,
                 double window_ms) {
  Barrier(t);
  absl::StatusOr<std::unique_ptr<PendingExchange>> pending = StartTensorMoves(t, tables, layout, workspace);
  if (!pending.ok()) std::abort();
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(window_ms));
  const Clock::time_point start = Clock::now();
  if (!(*pending)->Wait(absl::Seconds(120)).ok()) std::abort();
  return MsSince(start);
}

RankResult RunRank(Transport& t, const Options& o, const std::vector<double>& window_fractions) {
  const int64_t bytes = int64_t{o.mib} << 20;
  std::vector<char> home(static_cast<size_t>(2 * bytes), static_cast<char>(t.rank() + 1));
  std::vector<char> slots(static_cast<size_t>(2 * bytes), 0);
  ExpertLayout layout;
  layout.home.count = layout.slots.count = 1;
  layout.home.tensor[0] = {home.data(), bytes, 1, bytes, 0};
  layout.slots.tensor[0] = {slots.data(), bytes, 1, bytes, 0};
  Plan plan;
  plan.replicas = {{0, 1}, {2, 0}};  // each rank's first expert into the other's first slot
  LayerTables tables;
  if (!tables.Load(t, plan, 4, 2).ok()) std::abort();
  MoveWorkspace workspace;
  WaitAfter(t, tables, layout, workspace, 0);  // warm: the workspace grows, the sockets fill
  RankResult r;
  std::vector<double> alone;
  for (int i = 0; i < o.repeats; ++i) alone.push_back(WaitAfter(t, tables, layout, workspace, 0));
  r.move_ms = Median(alone);
  // Every rank uses rank 0's move time for the windows, so that both sleep alike.
  std::vector<int64_t> all(static_cast<size_t>(t.size()));
  if (!t.AllGather(std::vector<int64_t>{static_cast<int64_t>(r.move_ms * 1000)}, all, absl::Seconds(60)).ok()) {
    std::abort();
  }
  const double reference_ms = static_cast<double>(all[0]) / 1000;
  for (double f : window_fractions) {
    std::vector<double> exposed;
    for (int i = 0; i < o.repeats; ++i) exposed.push_back(WaitAfter(t, tables, layout, workspace, f * reference_ms));
    r.exposed_ms.push_back(Median(exposed));
  }
  return r;
}

int Main(int argc, char** argv) {
  CLI::App app{"How much of a replica move a prefetch hides: two Gloo ranks, one expert each way"};
  Options o;
  app.add_option("--mib", o.mib, "bytes of the expert, MiB (default 64)")->check(CLI::Range(1, 1024));
  app.add_option("--repeats", o.repeats, "timed repeats per point, median kept (default 5)")->check(CLI::Range(1, 100));
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "prefetch_bench")) return *code;
  const std::vector<double> fractions = {0, 0.25, 0.5, 1, 2};
  gloo::rendezvous::HashStore store;
  std::vector<RankResult> results(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      GlooOptions g;
      g.rank = rank;
      g.size = 2;
      g.timeout = absl::Seconds(60);
      absl::StatusOr<std::unique_ptr<Transport>> t = ConnectGlooThroughStore(g, store);
      if (!t.ok()) {
        std::fprintf(stderr, "prefetch_bench: %s\n", std::string(t.status().message()).c_str());
        std::abort();
      }
      results[static_cast<size_t>(rank)] = RunRank(**t, o, fractions);
      Barrier(**t);
    });
  }
  for (std::thread& t : threads) t.join();
  const double move_ms = std::max(results[0].move_ms, results[1].move_ms);
  std::printf("Gloo on loopback, one %d MiB expert each way, median of %d; the move alone: %.2f ms\n\n", o.mib,
              o.repeats, move_ms);
  std::printf("| window (x the move) | wait after it, ms | hidden |\n|---|---|---|\n");
  for (size_t i = 0; i < fractions.size(); ++i) {
    const double exposed = std::max(results[0].exposed_ms[i], results[1].exposed_ms[i]);
    std::printf("| %.2f | %.2f | %.0f%% |\n", fractions[i], exposed, 100.0 * (1.0 - exposed / move_ms));
  }
  return 0;
}

}  // namespace
}  // namespace taot::client

int main(int argc, char** argv) { return taot::client::Main(argc, argv); }
