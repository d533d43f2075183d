#include "taot/kernels/words.h"

namespace taot::kernels {
namespace {

__global__ void WriteWords(int64_t* dst, Words words) {
  if (threadIdx.x < words.count) dst[threadIdx.x] = words.value[threadIdx.x];
}

}  // namespace

cudaError_t WriteWordsCuda(int64_t* dst, const Words& words, cudaStream_t stream) {
  if (words.count < 0 || words.count > kMaxWords) return cudaErrorInvalidValue;
  if (words.count == 0) return cudaSuccess;
  WriteWords<<<1, kMaxWords, 0, stream>>>(dst, words);
  return cudaGetLastError();
}

}  // namespace taot::kernels
