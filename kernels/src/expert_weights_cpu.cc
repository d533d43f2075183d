#include <cstring>

#include "taot/kernels/expert_weights.h"

namespace taot::kernels {
namespace {

template <typename Copy>
bool ForEachChunk(const ExpertTensors& t, const int32_t* experts, int32_t count, Copy&& copy) {
  if (t.count < 1 || t.count > kMaxTensors) return false;
  for (int32_t i = 0; i < count; ++i) {
    for (int32_t k = 0; k < t.count; ++k) {
      for (int64_t c = 0; c < t.tensor[k].chunks; ++c) {
        copy(PackedOffset(t, i, k, c), ChunkAddress(t.tensor[k], experts[i], c), t.tensor[k].chunk_bytes);
      }
    }
  }
  return true;
}

}  // namespace

bool PackExpertsCpu(const ExpertTensors& tensors, const int32_t* experts, int32_t count, void* packed) {
  char* out = static_cast<char*>(packed);
  return ForEachChunk(tensors, experts, count, [&](int64_t offset, const char* chunk, int64_t bytes) {
    std::memcpy(out + offset, chunk, static_cast<size_t>(bytes));
  });
}

bool UnpackExpertsCpu(const ExpertTensors& tensors, const int32_t* experts, int32_t count, const void* packed) {
  const char* in = static_cast<const char*>(packed);
  return ForEachChunk(tensors, experts, count, [&](int64_t offset, char* chunk, int64_t bytes) {
    std::memcpy(chunk, in + offset, static_cast<size_t>(bytes));
  });
}

}  // namespace taot::kernels
