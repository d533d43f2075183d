// The device transports on real GPUs (label `gpu`; skips without enough devices): two rows of the
// transport contract (transport_contract_test.cc), both with their buffers in device memory: NCCL
// with one rank per device, and ranks as threads on one device (so that one GPU runs the
// contract's many-rank checks on the device plane); and NCCL's own checks: a one-rank
// communicator's collectives and device memory, and weight moves and gradient return between
// ranks on separate devices.
#include "taot/client/nccl_transport.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstring>
#include <thread>

#include "taot/client/client.h"
#include "taot/client/device_in_process_transport.h"
#include "taot/client/layer_tables.h"
#include "taot/client/plane_reroute.h"
#include "taot/client/replica_exchange.h"
#include "taot/client/reroute.h"
#include "taot/kernels/expert_weights.h"
#include "transport_contract.h"

namespace taot::client {
namespace {

int Devices() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

// NCCL takes one rank per device: rank r on device r.
void OnNcclRanks(int ranks, const RankBody& body) {
  absl::StatusOr<NcclUniqueId> id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      NcclOptions o;
      o.rank = r;
      o.size = ranks;
      o.device = r;
      o.id = *id;
      absl::StatusOr<std::unique_ptr<Transport>> t = ConnectNccl(o);
      ASSERT_TRUE(t.ok()) << t.status();
      body(**t);
    });
  }
  for (std::thread& t : threads) t.join();
}

// Any number of ranks as threads on device 0.
void OnDeviceThreads(int ranks, const RankBody& body) {
  absl::StatusOr<std::vector<std::unique_ptr<Transport>>> transports = ConnectInProcessOnDevice(ranks, {});
  ASSERT_TRUE(transports.ok()) << transports.status();
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { body(*(*transports)[r]); });
  for (std::thread& t : threads) t.join();
}

int AnyNumberWithADevice() { return Devices() > 0 ? AnyNumberOfRanks() : 0; }

void ToDevice(void* buffer, const void* host, size_t bytes) {
  ASSERT_EQ(cudaMemcpy(buffer, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

void FromDevice(void* host, const void* buffer, size_t bytes) {
  ASSERT_EQ(cudaMemcpy(host, buffer, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportTest,
                         ::testing::Values(TransportRow{.name = "nccl",
                                                        .on_ranks = &OnNcclRanks,
                                                        .to_buffer = &ToDevice,
                                                        .from_buffer = &FromDevice,
                                                        .max_ranks = &Devices,
                                                        .why_no_more = "one rank per CUDA device"},
                                           TransportRow{.name = "device_threads",
                                                        .on_ranks = &OnDeviceThreads,
                                                        .to_buffer = &ToDevice,
                                                        .from_buffer = &FromDevice,
                                                        .max_ranks = &AnyNumberWithADevice,
                                                        .why_no_more = "no CUDA device"}),
                         TransportRowName);

TEST(NcclTransportTest, BadOptionsAreRefusedByName) {
  NcclOptions o;
  o.rank = 2;
  o.size = 2;
  EXPECT_NE(ConnectNccl(o).status().message().find("rank: must be in [0, 2)"), std::string::npos);
}

TEST(NcclTransportTest, OneRankGathersAndAccumulatesOnTheDevice) {
  if (Devices() < 1) GTEST_SKIP() << "no CUDA device";
  NcclOptions o;
  o.id = *NewNcclUniqueId();
  absl::StatusOr<std::unique_ptr<Transport>> t = ConnectNccl(o);
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<int64_t> mine = {7, -3}, all(2);
  ASSERT_TRUE((*t)->AllGather(mine, all, absl::Seconds(30)).ok());
  EXPECT_EQ(all, mine);
  auto a = *(*t)->plane().NewBuffer(4 * sizeof(float));
  auto b = *(*t)->plane().NewBuffer(4 * sizeof(float));
  const float ones[4] = {1, 1, 1, 1}, twos[4] = {2, 2, 2, 2};
  cudaMemcpy(a->data(), ones, sizeof ones, cudaMemcpyHostToDevice);
  cudaMemcpy(b->data(), twos, sizeof twos, cudaMemcpyHostToDevice);
  kernels::GradSources one;
  one.source[one.count++] = b->data();
  ASSERT_TRUE((*t)->plane().AccumulateMany(static_cast<float*>(a->data()), one, 4).ok());
  ASSERT_TRUE((*t)->plane().Finish(absl::Seconds(30)).ok());
  float out[4];
  cudaMemcpy(out, a->data(), sizeof out, cudaMemcpyDeviceToHost);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[3], 3.0f);
}

// The stream order a layer relies on, on one rank: the side stream waits for the trainer's
// stream, uploads a table, packs by it, and the trainer's stream waits for the pack before it
// reads the result; the bytes are the CPU reference's.
TEST(NcclTransportTest, ThePlaneRunsInOrderWithTheTrainersStream) {
  if (Devices() < 1) GTEST_SKIP() << "no CUDA device";
  NcclOptions o;
  o.id = *NewNcclUniqueId();
  absl::StatusOr<std::unique_ptr<Transport>> t = ConnectNccl(o);
  ASSERT_TRUE(t.ok()) << t.status();
  DataPlane& plane = (*t)->plane();
  cudaStream_t trainer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&trainer, cudaStreamNonBlocking), cudaSuccess);
  constexpr int kExperts = 6, kBytes = 4096;
  std::vector<char> host(kExperts * kBytes);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<char>(i * 7 + 3);
  auto source = *plane.NewBuffer(host.size());
  auto packed = *plane.NewBuffer(3 * kBytes);
  auto table = *plane.NewBuffer(3 * sizeof(int32_t));
  // The trainer writes the weights on its stream; the plane must not read them before.
  ASSERT_EQ(cudaMemcpyAsync(source->data(), host.data(), host.size(), cudaMemcpyHostToDevice, trainer), cudaSuccess);
  ASSERT_TRUE(plane.AwaitStream(reinterpret_cast<uintptr_t>(trainer)).ok());
  const std::vector<int32_t> experts = {4, 0, 2};
  auto staging = *plane.NewStaging(experts.size() * sizeof(int32_t));
  std::memcpy(staging->data(), experts.data(), experts.size() * sizeof(int32_t));
  ASSERT_TRUE(plane.CopyIn(*staging, experts.size() * sizeof(int32_t), table->data()).ok());
  kernels::ExpertTensors tensors;
  tensors.count = 1;
  tensors.tensor[0].base = source->data();
  tensors.tensor[0].expert_stride = kBytes;
  tensors.tensor[0].chunk_bytes = kBytes;
  ASSERT_TRUE(plane.Pack(tensors, static_cast<const int32_t*>(table->data()), 3, packed->data()).ok());
  ASSERT_TRUE(plane.HoldStream(reinterpret_cast<uintptr_t>(trainer)).ok());
  std::vector<char> got(3 * kBytes);
  ASSERT_EQ(cudaMemcpyAsync(got.data(), packed->data(), got.size(), cudaMemcpyDeviceToHost, trainer), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(trainer), cudaSuccess);
  kernels::ExpertTensors on_host = tensors;
  on_host.tensor[0].base = host.data();
  std::vector<char> want(3 * kBytes);
  ASSERT_TRUE(kernels::PackExpertsCpu(on_host, experts.data(), 3, want.data()));
  EXPECT_EQ(got, want);
  ASSERT_TRUE(plane.Finish(absl::Seconds(30)).ok());
  cudaStreamDestroy(trainer);
}

// A layer's plan from ids in device memory on one rank: counted on the side stream after the
// trainer's copy of them, one download, and a bad id refused by name.
TEST(NcclTransportTest, AClientPlansFromIdsOnTheDeviceWithOneDownload) {
  if (Devices() < 1) GTEST_SKIP() << "no CUDA device";
  NcclOptions o;
  o.id = *NewNcclUniqueId();
  absl::StatusOr<std::unique_ptr<Transport>> t = ConnectNccl(o);
  ASSERT_TRUE(t.ok()) << t.status();
  std::shared_ptr<Transport> transport = *std::move(t);
  ClientOptions options;
  options.experts = 8;
  options.node = "n0";
  options.mode = Mode::kLocal;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options, transport);
  ASSERT_TRUE(client.ok()) << client.status();
  cudaStream_t trainer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&trainer, cudaStreamNonBlocking), cudaSuccess);
  std::vector<int64_t> ids(4096);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 5) % 8);
  auto device_ids = *transport->plane().NewBuffer(ids.size() * sizeof(int64_t));
  ASSERT_EQ(
      cudaMemcpyAsync(device_ids->data(), ids.data(), ids.size() * sizeof(int64_t), cudaMemcpyHostToDevice, trainer),
      cudaSuccess);
  const DataPlane::Copies before = transport->plane().copies();
  absl::StatusOr<LayerPlan> plan = (*client)->PlanLayerFromIds(
      0, 0, {device_ids->data(), static_cast<int64_t>(ids.size()), true}, reinterpret_cast<uintptr_t>(trainer));
  ASSERT_TRUE(plan.ok()) << plan.status();
  // The rest of the layer's device path: its tables up once, the reroute from them on the device.
  LayerTables tables;
  ASSERT_TRUE(tables.Load(*transport, plan->plan, 8, 2).ok());
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<int32_t> narrow(ids.begin(), ids.end());
  auto narrow_ids = *transport->plane().NewBuffer(narrow.size() * sizeof(int32_t));
  auto outputs = *transport->plane().NewBuffer(static_cast<size_t>(n) * (2 * sizeof(int32_t) + sizeof(int64_t)) +
                                               sizeof(int64_t) + sizeof(kernels::RouteCheck));
  ASSERT_EQ(cudaMemcpyAsync(narrow_ids->data(), narrow.data(), narrow.size() * sizeof(int32_t), cudaMemcpyHostToDevice,
                            trainer),
            cudaSuccess);
  char* base = static_cast<char*>(outputs->data());
  RerouteOutputs out{reinterpret_cast<int32_t*>(base), reinterpret_cast<int32_t*>(base + n * 4),
                     reinterpret_cast<int64_t*>(base + n * 8), reinterpret_cast<int64_t*>(base + n * 8 + 8),
                     reinterpret_cast<kernels::RouteCheck*>(base + n * 16 + 8)};
  RerouteWorkspace workspace;
  ASSERT_TRUE(StartReroute(*transport, tables, static_cast<const int32_t*>(narrow_ids->data()), n, out, workspace,
                           reinterpret_cast<uintptr_t>(trainer))
                  .ok());
  std::vector<int32_t> virtual_id(narrow.size());
  ASSERT_EQ(cudaMemcpyAsync(virtual_id.data(), out.virtual_expert, virtual_id.size() * sizeof(int32_t),
                            cudaMemcpyDeviceToHost, trainer),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(trainer), cudaSuccess);
  for (size_t i = 0; i < narrow.size(); ++i) ASSERT_EQ(virtual_id[i], narrow[i]) << i;  // one rank: all home
  EXPECT_EQ(transport->plane().copies().downloads, before.downloads + 1);
  EXPECT_EQ(transport->plane().copies().uploads, before.uploads + 1);
  ids[100] = 8;
  ASSERT_EQ(
      cudaMemcpyAsync(device_ids->data(), ids.data(), ids.size() * sizeof(int64_t), cudaMemcpyHostToDevice, trainer),
      cudaSuccess);
  absl::StatusOr<LayerPlan> refused = (*client)->PlanLayerFromIds(
      0, 1, {device_ids->data(), static_cast<int64_t>(ids.size()), true}, reinterpret_cast<uintptr_t>(trainer));
  EXPECT_NE(refused.status().message().find("ids[100]: must be an expert in [0, 8)"), std::string::npos)
      << refused.status();
  cudaStreamSynchronize(trainer);
  cudaStreamDestroy(trainer);
}

// A layer's table upload and reroute captured once in a CUDA graph on the trainer's stream (the
// side stream joins the capture through the plane's events), then replayed for each plan staged
// before it: every replay's destinations are the host reroute's for that plan.
TEST(InProcessDeviceTransportTest, ACapturedUploadAndRerouteReplayForEachStagedPlan) {
  if (Devices() < 1) GTEST_SKIP() << "no CUDA device";
  constexpr int kRanks = 2, kExperts = 4, kSlots = 1;
  absl::StatusOr<std::vector<std::unique_ptr<Transport>>> transports = ConnectInProcessOnDevice(kRanks, {});
  ASSERT_TRUE(transports.ok()) << transports.status();
  Transport& t = *(*transports)[0];  // rank 0 alone: neither the upload nor the reroute talks to peers
  Plan none, half, all;
  half.replicas = all.replicas = {{0, 1}};  // expert 0 (rank 0's) also on rank 1
  half.assignments = {{0, 0, 1, 50}};
  all.assignments = {{0, 0, 1, 100}};
  std::vector<int32_t> ids(300);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 3);  // 100 pairs for expert 0
  const int64_t n = static_cast<int64_t>(ids.size());
  DataPlane& plane = t.plane();
  auto device_ids = *plane.NewBuffer(ids.size() * sizeof(int32_t));
  auto virtual_expert = *plane.NewBuffer(ids.size() * 4), dest = *plane.NewBuffer(ids.size() * 4);
  auto sends = *plane.NewBuffer(kRanks * 8), order = *plane.NewBuffer(ids.size() * 8);
  auto check = *plane.NewBuffer(sizeof(kernels::RouteCheck));
  const RerouteOutputs outputs{static_cast<int32_t*>(virtual_expert->data()), static_cast<int32_t*>(dest->data()),
                               static_cast<int64_t*>(sends->data()), static_cast<int64_t*>(order->data()),
                               static_cast<kernels::RouteCheck*>(check->data())};
  ASSERT_EQ(cudaMemcpy(device_ids->data(), ids.data(), ids.size() * sizeof(int32_t), cudaMemcpyHostToDevice),
            cudaSuccess);
  LayerTables tables;
  RerouteWorkspace workspace;
  ASSERT_TRUE(ReserveRerouteWorkspace(t, kExperts, kSlots, n, workspace).ok());
  cudaStream_t trainer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&trainer, cudaStreamNonBlocking), cudaSuccess);
  const uintptr_t stream = reinterpret_cast<uintptr_t>(trainer);
  // A first layer outside the capture, as trainers warm up before capturing: it sizes and places
  // the tables and makes the plane's events.
  ASSERT_TRUE(tables.Stage(t, all, kExperts, kSlots).ok());
  ASSERT_TRUE(tables.Upload(stream).ok());
  ASSERT_TRUE(
      StartReroute(t, tables, static_cast<const int32_t*>(device_ids->data()), n, outputs, workspace, stream).ok());
  ASSERT_EQ(cudaStreamSynchronize(trainer), cudaSuccess);
  ASSERT_TRUE(plane.Finish(absl::Seconds(30)).ok());
  ASSERT_TRUE(tables.Stage(t, none, kExperts, kSlots).ok());
  ASSERT_EQ(cudaStreamBeginCapture(trainer, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const absl::Status upload = tables.Upload(stream);
  const absl::Status reroute =
      StartReroute(t, tables, static_cast<const int32_t*>(device_ids->data()), n, outputs, workspace, stream);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(trainer, &graph), cudaSuccess);
  ASSERT_TRUE(upload.ok()) << upload;
  ASSERT_TRUE(reroute.ok()) << reroute;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (const Plan* plan : {&half, &none, &all}) {
    ASSERT_TRUE(tables.Stage(t, *plan, kExperts, kSlots).ok());
    ASSERT_EQ(cudaGraphLaunch(exec, trainer), cudaSuccess);
    std::vector<int32_t> got(ids.size());
    ASSERT_EQ(cudaMemcpyAsync(got.data(), outputs.dest_rank, got.size() * 4, cudaMemcpyDeviceToHost, trainer),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(trainer), cudaSuccess);  // the replay has read the staging
    std::vector<int32_t> want(ids.size());
    std::vector<int64_t> per_rank(kRanks);
    ASSERT_TRUE(Reroute(*RerouteTable::For(*plan, kRanks, kExperts, 0, kSlots), ids, want, per_rank).ok());
    EXPECT_EQ(got, want) << plan->assignments.size() << " assignments";
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(trainer);
}

TEST(InProcessDeviceTransportTest, BadOptionsAreRefusedByName) {
  EXPECT_NE(ConnectInProcessOnDevice(0, {}).status().message().find("size: must be >= 1"), std::string::npos);
  EXPECT_NE(ConnectInProcessOnDevice(2, {.device = -1}).status().message().find("device: must be >= 0"),
            std::string::npos);
}

TEST(NcclTransportTest, WeightsAndGradientsMoveBetweenDevices) {
  if (Devices() < 2) GTEST_SKIP() << "needs two CUDA devices";
  const NcclUniqueId id = *NewNcclUniqueId();
  Plan plan;
  plan.replicas = {{0, 1}};  // expert 0 (home rank 0) to rank 1; 2 ranks, 4 experts
  constexpr size_t kFloats = 1024;
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      NcclOptions o;
      o.rank = r;
      o.size = 2;
      o.device = r;
      o.id = id;
      absl::StatusOr<std::unique_ptr<Transport>> t = ConnectNccl(o);
      ASSERT_TRUE(t.ok()) << t.status();
      std::vector<float*> home(2), slots(2);
      std::vector<float> value(kFloats);
      for (int i = 0; i < 2; ++i) {
        cudaMalloc(&home[i], kFloats * sizeof(float));
        cudaMalloc(&slots[i], kFloats * sizeof(float));
        std::fill(value.begin(), value.end(), static_cast<float>(r * 2 + i + 1));
        cudaMemcpy(home[i], value.data(), kFloats * sizeof(float), cudaMemcpyHostToDevice);
      }
      ExpertBuffers w{kFloats * sizeof(float), {home[0], home[1]}, {slots[0], slots[1]}};
      auto pending = StartWeightMoves(**t, plan, 4, w);
      ASSERT_TRUE(pending.ok()) << pending.status();
      ASSERT_TRUE((*pending)->Wait(absl::Seconds(30)).ok());
      if (r == 1) {
        cudaMemcpy(value.data(), slots[0], kFloats * sizeof(float), cudaMemcpyDeviceToHost);
        EXPECT_EQ(value[0], 1.0f);
        EXPECT_EQ(value[kFloats - 1], 1.0f);
      }
      // The guest's slot gradient (its weights) goes home and is added: expert 0 ends with 2.
      ASSERT_TRUE(ReturnGradients(**t, plan, 4, w, absl::Seconds(30)).ok());
      if (r == 0) {
        cudaMemcpy(value.data(), home[0], kFloats * sizeof(float), cudaMemcpyDeviceToHost);
        EXPECT_EQ(value[0], 2.0f);
      }
      for (int i = 0; i < 2; ++i) {
        cudaFree(home[i]);
        cudaFree(slots[i]);
      }
    });
  }
  for (std::thread& t : ranks) t.join();
}

}  // namespace
}  // namespace taot::client
