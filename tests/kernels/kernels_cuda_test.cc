// Each CUDA launcher held to its CPU reference (label `gpu`: skips without a device).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <random>
#include <vector>

#include "taot/kernels/accumulate.h"
#include "taot/kernels/words.h"

namespace taot::kernels {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

bool HaveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(AccumulateCudaTest, MatchesTheCpuReference) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : {size_t{1}, size_t{255}, size_t{4096 * 256 + 17}}) {
    std::vector<float> dst = Random(n, 1), src = Random(n, 2), want = dst;
    AccumulateCpu(want.data(), src.data(), n);
    float *d_dst = nullptr, *d_src = nullptr;
    ASSERT_EQ(cudaMalloc(&d_dst, n * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_src, n * sizeof(float)), cudaSuccess);
    cudaMemcpy(d_dst, dst.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(d_src, src.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    ASSERT_EQ(AccumulateCuda(d_dst, d_src, n, nullptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cudaMemcpy(dst.data(), d_dst, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d_dst);
    cudaFree(d_src);
    EXPECT_EQ(dst, want) << "n = " << n;  // one add per element: bit for bit
  }
}
TEST(WriteWordsCudaTest, MatchesTheCpuReferenceAndRefusesABadCount) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  Words words;
  for (int i = 0; i < kMaxWords; ++i) words.value[i] = (int64_t{i} << 40) - 3;
  for (int32_t count = 0; count <= kMaxWords; ++count) {
    words.count = count;
    std::vector<int64_t> want(kMaxWords, 5), got(kMaxWords);
    ASSERT_TRUE(WriteWordsCpu(want.data(), words));
    int64_t* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, kMaxWords * sizeof(int64_t)), cudaSuccess);
    std::vector<int64_t> fives(kMaxWords, 5);
    cudaMemcpy(d, fives.data(), kMaxWords * sizeof(int64_t), cudaMemcpyHostToDevice);
    ASSERT_EQ(WriteWordsCuda(d, words, nullptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cudaMemcpy(got.data(), d, kMaxWords * sizeof(int64_t), cudaMemcpyDeviceToHost);
    cudaFree(d);
    EXPECT_EQ(got, want) << "count = " << count;
  }
  words.count = kMaxWords + 1;
  EXPECT_EQ(WriteWordsCuda(nullptr, words, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace taot::kernels
