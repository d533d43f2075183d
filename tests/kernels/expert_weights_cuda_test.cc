// PackExpertsCuda, UnpackExpertsCuda and AccumulateManyCuda held to their CPU references bit for
// bit (label `gpu`: skips without a device).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstring>
#include <random>
#include <vector>

#include "taot/kernels/accumulate.h"
#include "taot/kernels/expert_weights.h"

namespace taot::kernels {
namespace {

bool HaveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

template <typename T>
std::vector<T> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  for (T& x : v) {
    const uint32_t r = static_cast<uint32_t>(rng());
    std::memcpy(&x, &r, sizeof(T) < 4 ? sizeof(T) : 4);
  }
  return v;
}

template <typename T>
T* ToDevice(const std::vector<T>& host) {
  T* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, host.size() * sizeof(T) + 16), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

template <typename T>
std::vector<T> ToHost(const T* d, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

TEST(ExpertWeightsCudaTest, PackAndUnpackMatchTheCpuReference) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  // A bf16 [8, 2048, 768] weight (contiguous per expert, 16-byte lanes), an fp32 [3, 8, 7] one
  // (strided, odd sizes: byte lanes) and an fp8 scale per expert.
  const int experts = 8;
  const size_t w_bytes = size_t{2048} * 768 * 2, v_bytes = 3 * experts * 7 * 4;
  std::vector<uint8_t> w = Random<uint8_t>(w_bytes * experts, 1), v = Random<uint8_t>(v_bytes, 2),
                       s = Random<uint8_t>(experts, 3);
  auto layout = [&](uint8_t* wb, uint8_t* vb, uint8_t* sb) {
    ExpertTensors t;
    t.count = 3;
    t.tensor[0] = {wb, static_cast<int64_t>(w_bytes), 1, static_cast<int64_t>(w_bytes), 0};
    t.tensor[1] = {vb, 28, 3, 28, experts * 28};
    t.tensor[2] = {sb, 1, 1, 1, 0};
    return t;
  };
  const std::vector<int32_t> list = {6, 1, 2};
  std::vector<uint8_t> want(list.size() * PackedExpertBytes(layout(nullptr, nullptr, nullptr)));
  ASSERT_TRUE(PackExpertsCpu(layout(w.data(), v.data(), s.data()), list.data(), 3, want.data()));
  uint8_t *dw = ToDevice(w), *dv = ToDevice(v), *ds = ToDevice(s),
          *packed = ToDevice(std::vector<uint8_t>(want.size()));
  int32_t* dlist = ToDevice(list);
  ASSERT_EQ(PackExpertsCuda(layout(dw, dv, ds), dlist, 3, packed, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(ToHost(packed, want.size()), want);
  // Unpacked into zeroed slots 0..2, on the device and on the host alike.
  std::vector<uint8_t> gw(w.size(), 0), gv(v.size(), 0), gs(s.size(), 0);
  const std::vector<int32_t> slots = {0, 1, 2};
  ASSERT_TRUE(UnpackExpertsCpu(layout(gw.data(), gv.data(), gs.data()), slots.data(), 3, want.data()));
  uint8_t *dgw = ToDevice(std::vector<uint8_t>(w.size(), 0)), *dgv = ToDevice(std::vector<uint8_t>(v.size(), 0)),
          *dgs = ToDevice(std::vector<uint8_t>(s.size(), 0));
  int32_t* dslots = ToDevice(slots);
  ASSERT_EQ(UnpackExpertsCuda(layout(dgw, dgv, dgs), dslots, 3, packed, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(ToHost(dgw, gw.size()), gw);
  EXPECT_EQ(ToHost(dgv, gv.size()), gv);
  EXPECT_EQ(ToHost(dgs, gs.size()), gs);
  for (void* p : {static_cast<void*>(dw), static_cast<void*>(dv), static_cast<void*>(ds), static_cast<void*>(packed),
                  static_cast<void*>(dlist), static_cast<void*>(dgw), static_cast<void*>(dgv), static_cast<void*>(dgs),
                  static_cast<void*>(dslots)}) {
    cudaFree(p);
  }
}

TEST(AccumulateManyCudaTest, MatchesTheCpuReferenceForFp32AndBf16Sources) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  const size_t n = 4096 * 257 + 3;
  for (GradType type : {GradType::kFloat32, GradType::kBfloat16}) {
    std::vector<float> dst(n);
    std::normal_distribution<float> d;
    std::mt19937 rng(5);
    for (float& x : dst) x = d(rng);
    GradSources host, device;
    host.type = device.type = type;
    host.count = device.count = 3;
    std::vector<std::vector<float>> f32;
    std::vector<std::vector<uint16_t>> bf16;
    for (int s = 0; s < 3; ++s) {
      f32.push_back(std::vector<float>(n));
      for (float& x : f32.back()) x = d(rng) * 1e-3f;
      bf16.push_back(Random<uint16_t>(n, 10 + s));
      for (uint16_t& b : bf16.back()) b &= 0xBF7F;  // finite values
      host.source[s] = type == GradType::kFloat32 ? static_cast<const void*>(f32[s].data()) : bf16[s].data();
      device.source[s] = type == GradType::kFloat32 ? static_cast<const void*>(ToDevice(f32[s])) : ToDevice(bf16[s]);
    }
    float* ddst = ToDevice(dst);
    ASSERT_TRUE(AccumulateManyCpu(dst.data(), host, n));
    ASSERT_EQ(AccumulateManyCuda(ddst, device, n, nullptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(ToHost(ddst, n), dst);
    cudaFree(ddst);
    for (int s = 0; s < 3; ++s) cudaFree(const_cast<void*>(device.source[s]));
  }
}

// The weight and gradient kernels of a layer, captured once in a CUDA graph and replayed on new
// data at the same addresses (docs/integration.md, "CUDA graphs"): each replay gives the CPU
// references' bytes.
TEST(ExpertWeightsCudaTest, ACapturedGraphOfPackUnpackAndAddReplaysOnNewData) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  constexpr int32_t kExperts = 6, kListed = 3;
  constexpr int64_t kBytes = 4096;  // per expert
  const std::vector<int32_t> listed = {5, 0, 3};
  int32_t* d_listed = ToDevice(listed);
  uint8_t* d_home = ToDevice(std::vector<uint8_t>(kExperts * kBytes));
  uint8_t* d_packed = ToDevice(std::vector<uint8_t>(kListed * kBytes));
  uint8_t* d_slots = ToDevice(std::vector<uint8_t>(kListed * kBytes));
  float* d_grad = ToDevice(std::vector<float>(kBytes / 4));
  ExpertTensors home, slots;
  home.count = slots.count = 1;
  home.tensor[0] = {d_home, kBytes, 1, kBytes, 0};
  slots.tensor[0] = {d_slots, kBytes, 1, kBytes, 0};
  const std::vector<int32_t> in_order = {0, 1, 2};
  int32_t* d_in_order = ToDevice(in_order);
  GradSources sources;
  sources.type = GradType::kBfloat16;
  for (int32_t i = 0; i < kListed; ++i) sources.source[sources.count++] = d_packed + i * kBytes;

  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(PackExpertsCuda(home, d_listed, kListed, d_packed, stream), cudaSuccess);
  ASSERT_EQ(UnpackExpertsCuda(slots, d_in_order, kListed, d_packed, stream), cudaSuccess);
  // Every listed expert's first 2 KiB as bf16 gradients, added into one fp32 gradient.
  ASSERT_EQ(AccumulateManyCuda(d_grad, sources, kBytes / 4, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (uint32_t seed : {1u, 2u}) {
    const std::vector<uint8_t> weights = Random<uint8_t>(kExperts * kBytes, seed);
    // Finite bf16 values: random bits with the exponent kept small.
    std::vector<uint8_t> finite = weights;
    for (size_t i = 1; i < finite.size(); i += 2) finite[i] = static_cast<uint8_t>(0x3C | (finite[i] & 0x81));
    const std::vector<float> grad = std::vector<float>(kBytes / 4, 0.5f);
    ASSERT_EQ(cudaMemcpyAsync(d_home, finite.data(), finite.size(), cudaMemcpyHostToDevice, stream), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(d_grad, grad.data(), grad.size() * 4, cudaMemcpyHostToDevice, stream), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

    ExpertTensors host_home = home, host_slots = slots;
    std::vector<uint8_t> host_weights = finite, packed(kListed * kBytes), unpacked(kListed * kBytes);
    host_home.tensor[0].base = host_weights.data();
    host_slots.tensor[0].base = unpacked.data();
    ASSERT_TRUE(PackExpertsCpu(host_home, listed.data(), kListed, packed.data()));
    ASSERT_TRUE(UnpackExpertsCpu(host_slots, in_order.data(), kListed, packed.data()));
    GradSources host_sources = sources;
    for (int32_t i = 0; i < kListed; ++i) host_sources.source[i] = packed.data() + i * kBytes;
    std::vector<float> want = grad;
    ASSERT_TRUE(AccumulateManyCpu(want.data(), host_sources, want.size()));
    EXPECT_EQ(ToHost(d_packed, packed.size()), packed) << "seed " << seed;
    EXPECT_EQ(ToHost(d_slots, unpacked.size()), unpacked) << "seed " << seed;
    const std::vector<float> got = ToHost(d_grad, want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0) << "seed " << seed;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  for (void* p : std::initializer_list<void*>{d_listed, d_home, d_packed, d_slots, d_grad, d_in_order}) cudaFree(p);
}

}  // namespace
}  // namespace taot::kernels
