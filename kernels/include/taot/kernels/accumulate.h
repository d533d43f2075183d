// A home expert adding its guests' returned gradients into its own: dst[i] += src[i], fp32 into
// fp32 or bf16 into fp32 (Megatron's main_grad), one source or several added in the order given,
// so that the sums do not depend on which guest's gradient arrived first.
// The CPU references and the CUDA launchers take the same arguments (DeepEP style: raw pointers,
// a size, a stream), do the same fp32 additions in the same order, and the tests hold one to the
// other bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "taot/kernels/route_table.h"

#if TAOT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace taot::kernels {

enum class GradType : int32_t { kFloat32 = 0, kBfloat16 = 1 };

// bf16 is the top half of an fp32: widening is exact.
TAOT_HOST_DEVICE inline float Bf16ToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  static_assert(sizeof(f) == sizeof(wide));
  __builtin_memcpy(&f, &wide, sizeof(f));
  return f;
}

// Sources per AccumulateMany launch; more are added in further launches, in order.
inline constexpr int kMaxSources = 64;
struct GradSources {
  const void* source[kMaxSources];
  int32_t count = 0;
  GradType type = GradType::kFloat32;
};

void AccumulateCpu(float* dst, const float* src, size_t n);
// dst[i] = (...((dst[i] + s0[i]) + s1[i]) ...) over sources.source[0..count), each fp32 or bf16
// (sources.type). False, and nothing added, when count is outside [0, kMaxSources].
bool AccumulateManyCpu(float* dst, const GradSources& sources, size_t n);

#if TAOT_WITH_CUDA
// Enqueues the add on `stream`; device pointers.
cudaError_t AccumulateCuda(float* dst, const float* src, size_t n, cudaStream_t stream);
cudaError_t AccumulateManyCuda(float* dst, const GradSources& sources, size_t n, cudaStream_t stream);
#endif

}  // namespace taot::kernels
