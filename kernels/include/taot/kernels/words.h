// A few 64-bit words written into device memory by a launch that carries them as its arguments:
// what a rank knows before a layer's plan (its readiness, the placement it holds) rides the
// counts all-gather with no host-to-device copy, and the write is captured in a CUDA graph like
// any other kernel.
#pragma once

#include <cstdint>

#if TAOT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace taot::kernels {

inline constexpr int kMaxWords = 4;
struct Words {
  int64_t value[kMaxWords] = {};
  int32_t count = 0;
};

// dst[0..count) = value[0..count). False, and nothing written, when count is outside
// [0, kMaxWords].
bool WriteWordsCpu(int64_t* dst, const Words& words);

#if TAOT_WITH_CUDA
// Enqueues the write on `stream`; `dst` in device memory.
cudaError_t WriteWordsCuda(int64_t* dst, const Words& words, cudaStream_t stream);
#endif

}  // namespace taot::kernels
