#include "taot/kernels/accumulate.h"

namespace taot::kernels {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 4096 ? blocks : 4096);  // enough to fill the GPU; then a grid-stride loop
}

__global__ void Accumulate(float* __restrict__ dst, const float* __restrict__ src, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] += src[i];
  }
}

// Each element adds its sources in the order given, as the CPU does.
__global__ void AccumulateMany(float* __restrict__ dst, GradSources sources, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float sum = dst[i];
    for (int32_t s = 0; s < sources.count; ++s) {
      sum = __fadd_rn(sum, sources.type == GradType::kBfloat16
                               ? Bf16ToFloat(static_cast<const uint16_t*>(sources.source[s])[i])
                               : static_cast<const float*>(sources.source[s])[i]);
    }
    dst[i] = sum;
  }
}

}  // namespace

cudaError_t AccumulateCuda(float* dst, const float* src, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  Accumulate<<<Blocks(n), kThreads, 0, stream>>>(dst, src, n);
  return cudaGetLastError();
}

cudaError_t AccumulateManyCuda(float* dst, const GradSources& sources, size_t n, cudaStream_t stream) {
  if (sources.count < 0 || sources.count > kMaxSources) return cudaErrorInvalidValue;
  if (n == 0 || sources.count == 0) return cudaSuccess;
  AccumulateMany<<<Blocks(n), kThreads, 0, stream>>>(dst, sources, n);
  return cudaGetLastError();
}

}  // namespace taot::kernels
