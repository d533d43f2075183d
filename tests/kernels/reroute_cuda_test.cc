// CountExpertsCuda and RerouteCuda held to their CPU references bit for bit, and the reroute
// replayed from a CUDA graph (label `gpu`: skips without a device).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <random>
#include <vector>

#include "device_array_testing.h"
#include "route_table_testing.h"
#include "taot/kernels/reroute.h"

namespace taot::kernels {
namespace {

using testing::DeviceArray;
using testing::OwnedTable;
using testing::Share;

bool HaveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// The table's arrays on the device, and a RouteTable over them.
struct DeviceTable {
  explicit DeviceTable(const OwnedTable& t)
      : begin(t.begin()), rank(t.rank()), end(t.end()), virtual_ids(t.virtual_ids()) {
    view = t.view();
    view.guest_begin = begin.get();
    view.guest_rank = rank.get();
    view.pair_end = end.get();
    view.virtual_id = virtual_ids.get();
  }
  DeviceArray<int32_t> begin, rank;
  DeviceArray<int64_t> end;
  DeviceArray<int32_t> virtual_ids;
  RouteTable view;
};

std::vector<int32_t> RandomIds(uint32_t seed, int32_t experts, int64_t n, int32_t hot) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& e : ids) e = rng() % 4 == 0 ? hot : static_cast<int32_t>(rng() % static_cast<uint32_t>(experts));
  return ids;
}

TEST(CountExpertsCudaTest, MatchesTheCpuReference) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  for (int32_t experts : {1, 128, 20000}) {  // the last beyond shared memory
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{32768}, int64_t{262147}}) {
      std::vector<int32_t> ids = RandomIds(7, experts, n, 0);
      if (n > 3) ids[3] = experts;  // out of range: named, not counted
      std::vector<int64_t> want(static_cast<size_t>(experts));
      RouteCheck want_check;
      CountExpertsCpu(ids.data(), n, experts, want.data(), &want_check);
      DeviceArray<int32_t> d_ids(ids);
      DeviceArray<int64_t> d_counts(static_cast<size_t>(experts));
      DeviceArray<RouteCheck> d_check(1);
      ASSERT_EQ(CountExpertsCuda(d_ids.get(), n, experts, d_counts.get(), d_check.get(), nullptr), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(d_counts.Host(), want) << experts << " experts, " << n << " pairs";
      EXPECT_EQ(d_check.Host()[0].first_bad_pair, want_check.first_bad_pair);
      const std::vector<int64_t> wide(ids.begin(), ids.end());
      DeviceArray<int64_t> d_wide(wide);
      ASSERT_EQ(CountExpertsCuda(d_wide.get(), n, experts, d_counts.get(), d_check.get(), nullptr), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(d_counts.Host(), want);
    }
  }
}

struct Outputs {
  std::vector<int32_t> virtual_expert, dest_rank;
  std::vector<int64_t> send_counts, order;
  RouteCheck check;
  bool operator==(const Outputs& o) const {
    return virtual_expert == o.virtual_expert && dest_rank == o.dest_rank && send_counts == o.send_counts &&
           order == o.order && check.first_bad_pair == o.check.first_bad_pair &&
           check.first_short_expert == o.check.first_short_expert;
  }
};

Outputs OnCpu(const OwnedTable& table, const std::vector<int32_t>& ids) {
  const int64_t n = static_cast<int64_t>(ids.size());
  Outputs out{std::vector<int32_t>(ids.size()),
              std::vector<int32_t>(ids.size()),
              std::vector<int64_t>(static_cast<size_t>(table.view().ranks)),
              std::vector<int64_t>(ids.size()),
              {}};
  std::vector<char> workspace(RerouteWorkspaceBytes(n, table.view()));
  RerouteCpu(ids.data(), n, table.view(), out.virtual_expert.data(), out.dest_rank.data(), out.send_counts.data(),
             out.order.data(), workspace.data(), &out.check);
  return out;
}

// Device buffers for one reroute of n pairs.
struct DeviceRun {
  DeviceRun(const RouteTable& table, int64_t n)
      : ids(static_cast<size_t>(n)),
        virtual_expert(static_cast<size_t>(n)),
        dest_rank(static_cast<size_t>(n)),
        send_counts(static_cast<size_t>(table.ranks)),
        order(static_cast<size_t>(n)),
        check(1),
        workspace_bytes(RerouteCudaWorkspaceBytes(n, table)),
        workspace(workspace_bytes) {}
  cudaError_t Launch(const RouteTable& table, int64_t n, cudaStream_t stream) {
    return RerouteCuda(ids.get(), n, table, virtual_expert.get(), dest_rank.get(), send_counts.get(), order.get(),
                       workspace.get(), workspace_bytes, check.get(), stream);
  }
  Outputs Host() const {
    return {virtual_expert.Host(), dest_rank.Host(), send_counts.Host(), order.Host(), check.Host()[0]};
  }
  DeviceArray<int32_t> ids, virtual_expert, dest_rank;
  DeviceArray<int64_t> send_counts, order;
  DeviceArray<RouteCheck> check;
  size_t workspace_bytes;
  DeviceArray<char> workspace;
};

// A plan-like table: the hot expert split over guests, a few others with one guest.
OwnedTable TableFor(int32_t R, int32_t E, int32_t K, const std::vector<int32_t>& ids, int32_t hot) {
  std::vector<int64_t> routed(static_cast<size_t>(E), 0);
  for (int32_t e : ids) ++routed[e];
  std::vector<Share> shares;
  std::vector<int32_t> used(static_cast<size_t>(R), 0);
  for (int32_t g = 0; g < R && K > 0; ++g) {
    if (g != hot / (E / R) && routed[hot] / (R + 1) > 0) {
      shares.push_back({hot, g, routed[hot] / (R + 1)});
      ++used[g];
    }
  }
  for (int32_t e = 1; e < E; e += 5) {
    const int32_t g = (e / (E / R) + 1) % R;
    if (e != hot && used[g] < K && routed[e] > 1) {
      shares.push_back({e, g, routed[e] / 2});
      ++used[g];
    }
  }
  return OwnedTable(R, E, K, shares);
}

TEST(RerouteCudaTest, MatchesTheCpuReferenceBitForBit) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  struct Shape {
    int32_t R, E, K;
    int64_t n;
  };
  for (const Shape& s : {Shape{16, 128, 2, 32768}, Shape{64, 256, 2, 32768}, Shape{256, 256, 2, 262144},
                         Shape{4, 4, 0, 999}, Shape{8, 64, 2, 0}}) {
    SCOPED_TRACE(::testing::Message() << "R " << s.R << " E " << s.E << " K " << s.K << " n " << s.n);
    const std::vector<int32_t> ids = RandomIds(11, s.E, s.n, s.E / 3);
    const OwnedTable table = TableFor(s.R, s.E, s.K, ids, s.E / 3);
    const Outputs want = OnCpu(table, ids);
    ASSERT_EQ(want.check.first_short_expert, s.E);
    DeviceTable device(table);
    DeviceRun run(device.view, s.n);
    if (s.n > 0) {
      ASSERT_EQ(cudaMemcpy(run.ids.get(), ids.data(), ids.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    }
    ASSERT_EQ(run.Launch(device.view, s.n, nullptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(run.Host() == want);
  }
}

TEST(RerouteCudaTest, ReportsABadIdAndAShortPlanAsTheCpuDoes) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  const OwnedTable table(4, 8, 2, {{2, 0, 2}, {6, 0, 5}});
  for (const std::vector<int32_t>& ids : {std::vector<int32_t>{2, 2, 9, 6}, std::vector<int32_t>{2, 2, 6}}) {
    const Outputs want = OnCpu(table, ids);
    DeviceTable device(table);
    DeviceRun run(device.view, static_cast<int64_t>(ids.size()));
    ASSERT_EQ(cudaMemcpy(run.ids.get(), ids.data(), ids.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(run.Launch(device.view, static_cast<int64_t>(ids.size()), nullptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const RouteCheck got = run.check.Host()[0];
    EXPECT_EQ(got.first_bad_pair, want.check.first_bad_pair);
    EXPECT_EQ(got.first_short_expert, want.check.first_short_expert);
  }
}

TEST(RerouteCudaTest, ACapturedGraphReplaysOnNewIds) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  const int32_t R = 16, E = 128, K = 2;
  const int64_t n = 32768;
  const std::vector<int32_t> first = RandomIds(1, E, n, 5);
  const OwnedTable table = TableFor(R, E, K, first, 5);
  DeviceTable device(table);
  DeviceRun run(device.view, n);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(run.Launch(device.view, n, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  // Same counts per expert (a permutation of the ids), so the table still fits.
  std::vector<int32_t> second = first;
  std::shuffle(second.begin(), second.end(), std::mt19937(2));
  for (const std::vector<int32_t>* ids : std::vector<const std::vector<int32_t>*>{&first, &second}) {
    ASSERT_EQ(cudaMemcpyAsync(run.ids.get(), ids->data(), ids->size() * 4, cudaMemcpyHostToDevice, stream),
              cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_TRUE(run.Host() == OnCpu(table, *ids));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace taot::kernels
