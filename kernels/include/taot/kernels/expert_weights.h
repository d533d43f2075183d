// Replica weights as bytes: a description of where each expert's part of a parameter tensor
// lives, and the pack/unpack that gathers listed experts into one contiguous buffer (what a
// weight move sends) and scatters it back into slots. Any dtype moves: bf16, fp32, fp8 and its
// scale tensors are all bytes here.
//
// The CPU references and the CUDA launchers take the same arguments; the address arithmetic is
// shared (`__host__ __device__`), the copy is memcpy on the host and 16-byte (or byte) lanes on
// the device, so both produce the same bytes.
#pragma once

#include <cstdint>

#include "taot/kernels/route_table.h"

#if TAOT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace taot::kernels {

// One parameter tensor over a rank's experts (home experts or guest slots): expert x's part is
// `chunks` runs of `chunk_bytes`, run c at base + x * expert_stride + c * chunk_stride (bytes).
// Contiguous per expert ([experts, ...]): chunks = 1, chunk_bytes = the expert's bytes. Expert
// dimension in the middle ([rows, experts, cols]): chunks = rows, chunk_bytes = cols x element
// size, chunk_stride = experts x chunk_bytes, expert_stride = chunk_bytes.
struct ExpertTensor {
  void* base = nullptr;
  int64_t expert_stride = 0;
  int64_t chunks = 1;
  int64_t chunk_bytes = 0;
  int64_t chunk_stride = 0;
};

// Up to kMaxTensors tensors per expert (weights, biases, fp8 scales), passed by value so that a
// launch needs no descriptor copy to the device.
inline constexpr int kMaxTensors = 8;
struct ExpertTensors {
  ExpertTensor tensor[kMaxTensors];
  int32_t count = 0;
};

// Bytes of one expert over all tensors: the stride of the packed buffer.
TAOT_HOST_DEVICE inline int64_t PackedExpertBytes(const ExpertTensors& t) {
  int64_t bytes = 0;
  for (int32_t k = 0; k < t.count; ++k) bytes += t.tensor[k].chunks * t.tensor[k].chunk_bytes;
  return bytes;
}

// Where chunk c of tensor k of the i-th listed expert sits in the packed buffer: expert after
// expert, tensors in order, chunks in order.
TAOT_HOST_DEVICE inline int64_t PackedOffset(const ExpertTensors& t, int64_t i, int32_t k, int64_t c) {
  int64_t offset = i * PackedExpertBytes(t);
  for (int32_t j = 0; j < k; ++j) offset += t.tensor[j].chunks * t.tensor[j].chunk_bytes;
  return offset + c * t.tensor[k].chunk_bytes;
}

TAOT_HOST_DEVICE inline char* ChunkAddress(const ExpertTensor& t, int32_t expert, int64_t c) {
  return static_cast<char*>(t.base) + expert * t.expert_stride + c * t.chunk_stride;
}

// Nothing is checked beyond `tensors.count` in [1, kMaxTensors]: the caller owns the memory
// described. Returns false (and copies nothing) when the count is out of range.
bool PackExpertsCpu(const ExpertTensors& tensors, const int32_t* experts, int32_t count, void* packed);
bool UnpackExpertsCpu(const ExpertTensors& tensors, const int32_t* experts, int32_t count, const void* packed);

#if TAOT_WITH_CUDA
// The same on `stream`: every pointer device memory (`experts` too); cudaErrorInvalidValue for a
// tensor count out of range.
cudaError_t PackExpertsCuda(const ExpertTensors& tensors, const int32_t* experts, int32_t count, void* packed,
                            cudaStream_t stream);
cudaError_t UnpackExpertsCuda(const ExpertTensors& tensors, const int32_t* experts, int32_t count, const void* packed,
                              cudaStream_t stream);
#endif

}  // namespace taot::kernels
