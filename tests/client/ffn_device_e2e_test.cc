// The FFN end-to-end layer (ffn_testing.h) with taot's whole per-layer path on the device plane
// (label `gpu`; skips without a device): 4 ranks as threads on one GPU (the in-process device
// transport: NCCL would need a device per rank). Each step the router's ids are in device memory;
// the client counts them and plans from them with one download, the tables go up with one upload,
// the weights move into device slots (pack, exchange, unpack on the side stream), the reroute
// kernel gives each pair its rank, and the guests' float32 gradients come home and are added on
// the device. The experts' arithmetic runs on the host (taot does not do the GEMMs), fed from the
// device buffers. Checks: the reroute kernel's destinations against the host reroute, and the
// outputs, input gradients, expert gradients and weights against standard expert parallelism, as
// the host variant checks them.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <random>
#include <thread>

#include "ffn_testing.h"
#include "taot/client/client.h"
#include "taot/client/device_in_process_transport.h"
#include "taot/client/in_process_transport.h"
#include "taot/client/layer_tables.h"
#include "taot/client/plane_reroute.h"
#include "taot/client/replica_moves.h"
#include "taot/client/reroute.h"
#include "taot/client/tensor_exchange.h"

namespace taot::client {
namespace {

using namespace ffn;  // the layer shared with the host variant (ffn_testing.h)

int Devices() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

// Every expert's kParams floats, contiguous: one tensor.
kernels::ExpertTensors Contiguous(void* base) {
  kernels::ExpertTensors t;
  t.count = 1;
  t.tensor[0] = {base, kParams * static_cast<int64_t>(sizeof(float)), 1, kParams * static_cast<int64_t>(sizeof(float)),
                 0};
  return t;
}

void Put(void* device, const std::vector<Weights>& rows, cudaStream_t stream) {
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(cudaMemcpyAsync(static_cast<float*>(device) + i * kParams, rows[i].data(), kParams * sizeof(float),
                              cudaMemcpyHostToDevice, stream),
              cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
}

std::vector<Weights> Get(const void* device, size_t count, cudaStream_t stream) {
  std::vector<Weights> rows(count, Weights(kParams));
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(cudaMemcpyAsync(rows[i].data(), static_cast<const float*>(device) + i * kParams, kParams * sizeof(float),
                              cudaMemcpyDeviceToHost, stream),
              cudaSuccess);
  }
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return rows;
}

template <typename T>
std::vector<T> GetValues(const T* device, size_t count, cudaStream_t stream) {
  std::vector<T> values(count);
  EXPECT_EQ(cudaMemcpyAsync(values.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return values;
}

void TrainOneRank(const std::shared_ptr<Transport>& transport, Transport& dispatch, int64_t& bytes_moved) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const int rank = transport->rank();
  constexpr int per_rank = kExperts / kRanks;
  ClientOptions o;
  o.experts = kExperts;
  o.slots_per_rank = kSlots;
  o.node = rank < 2 ? "n0" : "n1";
  o.mode = Mode::kLocal;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(o, transport);
  ASSERT_TRUE(client.ok()) << client.status();
  Transport& t = *transport;
  DataPlane& plane = t.plane();
  cudaStream_t trainer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&trainer, cudaStreamNonBlocking), cudaSuccess);
  const uintptr_t stream = reinterpret_cast<uintptr_t>(trainer);

  const std::vector<Weights> all = InitialExperts();
  const int first = rank * per_rank;
  std::vector<Weights> base(all.begin() + first, all.begin() + first + per_rank), with = base;
  const size_t expert_bytes = kParams * sizeof(float);
  auto home_weights = *plane.NewBuffer(per_rank * expert_bytes), slot_weights = *plane.NewBuffer(kSlots * expert_bytes);
  auto home_grads = *plane.NewBuffer(per_rank * expert_bytes), slot_grads = *plane.NewBuffer(kSlots * expert_bytes);
  auto ids = *plane.NewBuffer(kTokens * sizeof(int32_t));
  auto virtual_expert = *plane.NewBuffer(kTokens * sizeof(int32_t)), dest_rank = *plane.NewBuffer(kTokens * 4);
  auto send_counts = *plane.NewBuffer(kRanks * sizeof(int64_t)), order = *plane.NewBuffer(kTokens * sizeof(int64_t));
  auto check = *plane.NewBuffer(sizeof(kernels::RouteCheck));
  const RerouteOutputs outputs{static_cast<int32_t*>(virtual_expert->data()), static_cast<int32_t*>(dest_rank->data()),
                               static_cast<int64_t*>(send_counts->data()), static_cast<int64_t*>(order->data()),
                               static_cast<kernels::RouteCheck*>(check->data())};
  const ExpertLayout weights{Contiguous(home_weights->data()), Contiguous(slot_weights->data())};
  const GradientLayout gradients{Contiguous(slot_grads->data()), kernels::GradType::kFloat32,
                                 Contiguous(home_grads->data())};
  LayerTables tables;
  MoveWorkspace workspace;
  RerouteWorkspace reroute_workspace;

  std::mt19937 data(100 + rank);
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = NextBatch(data);
    // Standard expert parallelism, on the host: the oracle.
    std::vector<Weights> base_grad(base.size(), Weights(kParams, 0));
    std::vector<int32_t> home(kTokens);
    for (int i = 0; i < kTokens; ++i) home[i] = b.experts[i] / per_rank;
    const Result want = RunLayer(
        dispatch, b, home, [&](int e) -> const Weights& { return base[e - first]; },
        [&](int e) { return base_grad[e - first].data(); });

    // taot's layer on the device: ids in, plan with one download, tables up with one upload.
    Put(home_weights->data(), with, trainer);
    ASSERT_EQ(
        cudaMemcpyAsync(ids->data(), b.experts.data(), kTokens * sizeof(int32_t), cudaMemcpyHostToDevice, trainer),
        cudaSuccess);
    const DataPlane::Copies before = plane.copies();
    absl::StatusOr<LayerPlan> plan = (*client)->PlanLayerFromIds(step, 0, {ids->data(), kTokens, false}, stream);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(tables.Load(t, plan->plan, kExperts, kSlots).ok());
    EXPECT_EQ(plane.copies().downloads, before.downloads + 1);
    EXPECT_EQ(plane.copies().uploads, before.uploads + 1);
    MovedBytes moved;
    auto moves = StartTensorMoves(t, tables, weights, workspace, stream, &moved);
    ASSERT_TRUE(moves.ok()) << moves.status();
    ASSERT_TRUE(
        StartReroute(t, tables, static_cast<const int32_t*>(ids->data()), kTokens, outputs, reroute_workspace, stream)
            .ok());
    ASSERT_TRUE((*moves)->Wait(absl::Seconds(30)).ok());
    bytes_moved += moved.sent + moved.received;

    // The kernel's destinations are the host reroute's.
    const std::vector<int32_t> dest = GetValues(outputs.dest_rank, kTokens, trainer);
    const RerouteTable table = *RerouteTable::For(plan->plan, kRanks, kExperts, rank);
    std::vector<int32_t> host_dest(kTokens);
    std::vector<int64_t> per_rank_counts(kRanks);
    ASSERT_TRUE(Reroute(table, b.experts, host_dest, per_rank_counts).ok());
    ASSERT_EQ(dest, host_dest);
    const kernels::RouteCheck verdict = GetValues(outputs.check, 1, trainer)[0];
    EXPECT_EQ(verdict.first_bad_pair, kTokens);
    EXPECT_EQ(verdict.first_short_expert, kExperts);

    // The experts' arithmetic on what the device holds: home weights and the replicas that arrived.
    const std::vector<Weights> slots = Get(slot_weights->data(), kSlots, trainer);
    const std::vector<int> slot_experts = GuestSlots(plan->plan, rank);
    auto slot_of = [&](int e) {
      return static_cast<int>(std::find(slot_experts.begin(), slot_experts.end(), e) - slot_experts.begin());
    };
    auto is_home = [&](int e) { return e >= first && e < first + per_rank; };
    std::vector<Weights> grad(with.size(), Weights(kParams, 0)), slot_grad(kSlots, Weights(kParams, 0));
    const Result got = RunLayer(
        dispatch, b, dest, [&](int e) -> const Weights& { return is_home(e) ? with[e - first] : slots[slot_of(e)]; },
        [&](int e) { return is_home(e) ? grad[e - first].data() : slot_grad[slot_of(e)].data(); });

    // The guests' gradients home, added on the device.
    Put(home_grads->data(), grad, trainer);
    Put(slot_grads->data(), slot_grad, trainer);
    auto returned = StartGradientReturn(t, tables, gradients, workspace, stream);
    ASSERT_TRUE(returned.ok()) << returned.status();
    ASSERT_TRUE((*returned)->Wait(absl::Seconds(30)).ok());
    grad = Get(home_grads->data(), per_rank, trainer);

    CheckAndDescend(got, want, grad, base_grad, base, with);
  }
  ASSERT_EQ(cudaStreamSynchronize(trainer), cudaSuccess);
  cudaStreamDestroy(trainer);
}

TEST(FfnDeviceEndToEndTest, TrainingOnTheDevicePlaneMatchesStandardExpertParallelism) {
  if (Devices() < 1) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::vector<std::unique_ptr<Transport>>> device = ConnectInProcessOnDevice(kRanks, {});
  ASSERT_TRUE(device.ok()) << device.status();
  std::vector<std::shared_ptr<Transport>> transports(std::make_move_iterator(device->begin()),
                                                     std::make_move_iterator(device->end()));
  std::vector<std::unique_ptr<Transport>> dispatch = ConnectInProcess(kRanks);
  std::vector<int64_t> bytes_moved(kRanks, 0);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] { TrainOneRank(transports[r], *dispatch[r], bytes_moved[r]); });
  }
  for (std::thread& t : ranks) t.join();
  int64_t total = 0;
  for (int64_t b : bytes_moved) total += b;
  EXPECT_GT(total, 0) << "the skew should have made taot replicate";
}

}  // namespace
}  // namespace taot::client
