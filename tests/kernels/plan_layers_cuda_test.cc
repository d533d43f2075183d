// taot-block on a device (PlanLayersCuda: one block per layer) held to its CPU reference bit for
// bit, every family of workloads as a layer of one launch, and replayed from a CUDA graph on new
// loads (label `gpu`: skips without a device).
#include "taot/kernels/plan_layers.h"

#include "taot/kernels/block_tables.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "device_array_testing.h"
#include "taot/planner/block_host.h"
#include "taot/planner/load_stats.h"
#include "taot/sim/case_generator.h"
#include "taot/sim/workload_families.h"

namespace taot::kernels {
namespace {

using testing::DeviceArray;

bool HaveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// The first k values.
template <typename T>
std::vector<T> Head(std::vector<T> v, int32_t k) {
  v.resize(static_cast<size_t>(k));
  return v;
}

// One layer's arrays on the host: its load and cap in, the plan out.
struct HostLayer {
  std::vector<int64_t> load;
  int64_t cap = 0;
  std::vector<int32_t> piece_expert, piece_rank, entry_piece, entry_source, counts;
  std::vector<int64_t> piece_tokens, entry_tokens, max_load, scratch;
  std::vector<int32_t> scratch32;

  HostLayer(const block::Shape& shape, const PlanRequest& request, double target) {
    load = request.load.data();
    cap = LoadCap(TotalTokens(request.load), request.ranks(), target);
    const auto pieces = static_cast<size_t>(block::MaxPieces(shape)),
               entries = static_cast<size_t>(block::MaxEntries(shape));
    piece_expert.assign(pieces, -1);
    piece_rank.assign(pieces, -1);
    piece_tokens.assign(pieces, -1);
    entry_piece.assign(entries, -1);
    entry_source.assign(entries, -1);
    entry_tokens.assign(entries, -1);
    counts.assign(2, -1);
    max_load.assign(1, -1);
    scratch.assign(static_cast<size_t>(block::ScratchWords(shape)), -1);
    scratch32.assign(static_cast<size_t>(block::Scratch32Words(shape)), -1);
  }
  block::Layer View() {
    return {.load = load.data(),
            .cap = cap,
            .piece_expert = piece_expert.data(),
            .piece_rank = piece_rank.data(),
            .piece_tokens = piece_tokens.data(),
            .entry_piece = entry_piece.data(),
            .entry_source = entry_source.data(),
            .entry_tokens = entry_tokens.data(),
            .counts = counts.data(),
            .max_load = max_load.data(),
            .scratch = scratch.data(),
            .scratch32 = scratch32.data()};
  }
};

// The same layer's arrays on the device.
struct DeviceLayer {
  explicit DeviceLayer(const HostLayer& h)
      : load(h.load),
        piece_expert(h.piece_expert),
        piece_rank(h.piece_rank),
        entry_piece(h.entry_piece),
        entry_source(h.entry_source),
        counts(h.counts),
        piece_tokens(h.piece_tokens),
        entry_tokens(h.entry_tokens),
        max_load(h.max_load),
        scratch(h.scratch),
        scratch32(h.scratch32),
        cap(h.cap) {}
  block::Layer View() {
    return {.load = load.get(),
            .cap = cap,
            .piece_expert = piece_expert.get(),
            .piece_rank = piece_rank.get(),
            .piece_tokens = piece_tokens.get(),
            .entry_piece = entry_piece.get(),
            .entry_source = entry_source.get(),
            .entry_tokens = entry_tokens.get(),
            .counts = counts.get(),
            .max_load = max_load.get(),
            .scratch = scratch.get(),
            .scratch32 = scratch32.get()};
  }
  // Expects the device's plan to be the host's: the counts, then every array up to them.
  void ExpectEqual(const HostLayer& want, const std::string& what) const {
    const std::vector<int32_t> n = counts.Host();
    ASSERT_EQ(n, want.counts) << what;
    EXPECT_EQ(max_load.Host(), want.max_load) << what;
    EXPECT_EQ(Head(piece_expert.Host(), n[0]), Head(want.piece_expert, n[0])) << what;
    EXPECT_EQ(Head(piece_rank.Host(), n[0]), Head(want.piece_rank, n[0])) << what;
    EXPECT_EQ(Head(piece_tokens.Host(), n[0]), Head(want.piece_tokens, n[0])) << what;
    EXPECT_EQ(Head(entry_piece.Host(), n[1]), Head(want.entry_piece, n[1])) << what;
    EXPECT_EQ(Head(entry_source.Host(), n[1]), Head(want.entry_source, n[1])) << what;
    EXPECT_EQ(Head(entry_tokens.Host(), n[1]), Head(want.entry_tokens, n[1])) << what;
  }
  DeviceArray<int64_t> load;
  DeviceArray<int32_t> piece_expert, piece_rank, entry_piece, entry_source, counts;
  DeviceArray<int64_t> piece_tokens, entry_tokens, max_load, scratch;
  DeviceArray<int32_t> scratch32;
  int64_t cap;
};

// Every workload family at EP64 (E = 256, K = 2, 8 ranks per node) as a layer, with its shape's
// arrays on both sides.
struct Microbatch {
  explicit Microbatch(double target) {
    for (const sim::WorkloadFamily& family : sim::WorkloadFamilies(64)) {
      sim::CaseOptions o;
      o.ranks = 64;
      o.experts = 256;
      family.apply(o);
      requests.push_back(sim::GenerateCase(o).value().request);
      names.push_back(family.name);
    }
    arrays = std::make_unique<BlockShapeArrays>(*requests.front().problem);
    host_shape = arrays->shape;
    node_of = std::make_unique<DeviceArray<int32_t>>(arrays->node_of);
    by_node = std::make_unique<DeviceArray<int32_t>>(arrays->by_node);
    node_start = std::make_unique<DeviceArray<int32_t>>(arrays->node_start);
    cost = std::make_unique<DeviceArray<int64_t>>(arrays->cost);
    device_shape = host_shape;
    device_shape.node_of = node_of->get();
    device_shape.by_node = by_node->get();
    device_shape.node_start = node_start->get();
    device_shape.cost = cost->get();
    for (const PlanRequest& r : requests) host.emplace_back(host_shape, r, target);
    std::vector<block::Layer> views;
    for (HostLayer& h : host) {
      device.push_back(std::make_unique<DeviceLayer>(h));
      views.push_back(device.back()->View());
    }
    layers = std::make_unique<DeviceArray<block::Layer>>(views);
  }
  void PlanOnHost() {
    for (HostLayer& h : host) {
      const block::Layer view = h.View();
      block::PlanLayer(host_shape, view, 0, 1);
    }
  }

  std::vector<PlanRequest> requests;
  std::vector<std::string> names;
  std::unique_ptr<BlockShapeArrays> arrays;
  block::Shape host_shape, device_shape;
  std::unique_ptr<DeviceArray<int32_t>> node_of, by_node, node_start;
  std::unique_ptr<DeviceArray<int64_t>> cost;
  std::vector<HostLayer> host;
  std::vector<std::unique_ptr<DeviceLayer>> device;
  std::unique_ptr<DeviceArray<block::Layer>> layers;
};

TEST(PlanLayersCudaTest, BadLaunchesAreRefused) {
  const block::Shape shape;
  EXPECT_EQ(PlanLayersCuda(shape, nullptr, -1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(PlanLayersCuda(shape, nullptr, 1, nullptr, 0), cudaErrorInvalidValue);
  EXPECT_EQ(PlanLayersCuda(shape, nullptr, 1, nullptr, 1025), cudaErrorInvalidValue);
  EXPECT_EQ(PlanLayersCuda(shape, nullptr, 0, nullptr), cudaSuccess);  // nothing to plan
}

TEST(PlanLayersCudaTest, EveryFamilyInOneLaunchIsTheCpusPlanBitForBit) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  for (double target : {2.0, 10.0}) {
    Microbatch batch(target);
    batch.PlanOnHost();
    for (int threads : {1, 32, kPlanThreads}) {
      ASSERT_EQ(PlanLayersCuda(batch.device_shape, batch.layers->get(), static_cast<int32_t>(batch.host.size()),
                               nullptr, threads),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      for (size_t i = 0; i < batch.host.size(); ++i) {
        batch.device[i]->ExpectEqual(batch.host[i], batch.names[i] + " at " + std::to_string(threads) + " threads");
      }
    }
  }
}

// A device plan's reroute tables made on the device (BlockRouteTablesCuda, one launch for all the
// layers) are the CPU's from the CPU's plan, for a few source ranks.
TEST(PlanLayersCudaTest, TablesFromTheDevicesPlansAreTheCpus) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  Microbatch batch(2.0);
  batch.PlanOnHost();
  const auto count = static_cast<int32_t>(batch.host.size());
  ASSERT_EQ(PlanLayersCuda(batch.device_shape, batch.layers->get(), count, nullptr), cudaSuccess);
  const block::Shape& shape = batch.host_shape;
  const auto most = static_cast<size_t>(block::MaxPieces(shape));
  const auto experts = static_cast<size_t>(shape.experts) + 1;
  for (int32_t rank : {0, 9, 63}) {
    std::vector<std::unique_ptr<DeviceArray<int32_t>>> begin, guest, virtual_id, guests;
    std::vector<std::unique_ptr<DeviceArray<int64_t>>> end;
    std::vector<RouteArrays> outs;
    for (int32_t i = 0; i < count; ++i) {
      begin.push_back(std::make_unique<DeviceArray<int32_t>>(experts));
      guest.push_back(std::make_unique<DeviceArray<int32_t>>(most));
      end.push_back(std::make_unique<DeviceArray<int64_t>>(most));
      virtual_id.push_back(std::make_unique<DeviceArray<int32_t>>(most));
      guests.push_back(std::make_unique<DeviceArray<int32_t>>(size_t{1}));
      outs.push_back({begin[i]->get(), guest[i]->get(), end[i]->get(), virtual_id[i]->get(), guests[i]->get()});
    }
    DeviceArray<RouteArrays> device_outs(outs);
    DeviceArray<int32_t> scratch(static_cast<size_t>(count) * shape.ranks);
    ASSERT_EQ(BlockRouteTablesCuda(batch.device_shape, batch.layers->get(), count, rank, device_outs.get(),
                                   scratch.get(), nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int32_t i = 0; i < count; ++i) {
      std::vector<int32_t> want_begin(experts), want_guest(most), want_virtual(most), slot_scratch(shape.ranks);
      std::vector<int64_t> want_end(most);
      int32_t want_guests = -1;
      BlockRouteTable(shape, batch.host[i].View(), rank,
                      {want_begin.data(), want_guest.data(), want_end.data(), want_virtual.data(), &want_guests},
                      slot_scratch.data());
      const std::string what = batch.names[i] + ", source " + std::to_string(rank);
      ASSERT_EQ(guests[i]->Host()[0], want_guests) << what;
      EXPECT_EQ(begin[i]->Host(), want_begin) << what;
      EXPECT_EQ(Head(guest[i]->Host(), want_guests), Head(want_guest, want_guests)) << what;
      EXPECT_EQ(Head(end[i]->Host(), want_guests), Head(want_end, want_guests)) << what;
      EXPECT_EQ(Head(virtual_id[i]->Host(), want_guests), Head(want_virtual, want_guests)) << what;
    }
  }
}

TEST(PlanLayersCudaTest, ACapturedLaunchReplaysOnNewLoads) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  Microbatch batch(2.0);
  const auto count = static_cast<int32_t>(batch.host.size());
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(PlanLayersCuda(batch.device_shape, batch.layers->get(), count, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int round = 0; round < 2; ++round) {
    // The second round: every layer takes another family's load (its cap stays: any cap plans).
    if (round == 1) {
      for (size_t i = 0; i < batch.host.size(); ++i) {
        batch.host[i].load = batch.host[(i + 1) % batch.host.size()].load;
      }
      for (size_t i = 0; i < batch.host.size(); ++i) {
        ASSERT_EQ(cudaMemcpyAsync(batch.device[i]->load.get(), batch.host[i].load.data(),
                                  batch.host[i].load.size() * sizeof(int64_t), cudaMemcpyHostToDevice, stream),
                  cudaSuccess);
      }
    }
    batch.PlanOnHost();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    for (size_t i = 0; i < batch.host.size(); ++i) {
      batch.device[i]->ExpectEqual(batch.host[i], batch.names[i] + " round " + std::to_string(round));
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace taot::kernels
