#include <cstdint>

#include "taot/kernels/expert_weights.h"

namespace taot::kernels {
namespace {

constexpr int kThreads = 256;

// Copies `bytes` from src to dst with the block's threads: 16-byte lanes where both ends and the
// size allow, bytes otherwise.
__device__ void CopyRun(char* __restrict__ dst, const char* __restrict__ src, int64_t bytes) {
  const bool wide = (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes) % 16 == 0;
  if (wide) {
    uint4* d = reinterpret_cast<uint4*>(dst);
    const uint4* s = reinterpret_cast<const uint4*>(src);
    for (int64_t j = threadIdx.x; j < bytes / 16; j += blockDim.x) d[j] = s[j];
  } else {
    for (int64_t j = threadIdx.x; j < bytes; j += blockDim.x) dst[j] = src[j];
  }
}

// blockIdx.y: the listed expert and tensor (i * count + k); blockIdx.x strides over its chunks.
template <bool kPack>
__global__ void CopyChunks(ExpertTensors t, const int32_t* __restrict__ experts, char* packed) {
  const int64_t i = blockIdx.y / t.count;
  const int32_t k = static_cast<int32_t>(blockIdx.y % t.count);
  const ExpertTensor& tensor = t.tensor[k];
  for (int64_t c = blockIdx.x; c < tensor.chunks; c += gridDim.x) {
    char* chunk = ChunkAddress(tensor, experts[i], c);
    char* run = packed + PackedOffset(t, i, k, c);
    if (kPack) {
      CopyRun(run, chunk, tensor.chunk_bytes);
    } else {
      CopyRun(chunk, run, tensor.chunk_bytes);
    }
  }
}

template <bool kPack>
cudaError_t Launch(const ExpertTensors& t, const int32_t* experts, int32_t count, char* packed, cudaStream_t stream) {
  if (t.count < 1 || t.count > kMaxTensors || count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  int64_t most_chunks = 1;
  for (int32_t k = 0; k < t.count; ++k)
    most_chunks = t.tensor[k].chunks > most_chunks ? t.tensor[k].chunks : most_chunks;
  // blockIdx.y is at most 65535: listed experts x tensors beyond it take several launches.
  const int32_t per_launch = 65535 / t.count;
  for (int32_t first = 0; first < count; first += per_launch) {
    const int32_t n = count - first < per_launch ? count - first : per_launch;
    const dim3 grid(static_cast<unsigned>(most_chunks < 1024 ? most_chunks : 1024), static_cast<unsigned>(n * t.count));
    CopyChunks<kPack><<<grid, kThreads, 0, stream>>>(t, experts + first, packed + first * PackedExpertBytes(t));
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t PackExpertsCuda(const ExpertTensors& tensors, const int32_t* experts, int32_t count, void* packed,
                            cudaStream_t stream) {
  return Launch<true>(tensors, experts, count, static_cast<char*>(packed), stream);
}

cudaError_t UnpackExpertsCuda(const ExpertTensors& tensors, const int32_t* experts, int32_t count, const void* packed,
                              cudaStream_t stream) {
  return Launch<false>(tensors, experts, count, static_cast<char*>(const_cast<void*>(packed)), stream);
}

}  // namespace taot::kernels
