#include "taot/kernels/accumulate.h"

namespace taot::kernels {

void AccumulateCpu(float* dst, const float* src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

bool AccumulateManyCpu(float* dst, const GradSources& sources, size_t n) {
  if (sources.count < 0 || sources.count > kMaxSources) return false;
  for (int32_t s = 0; s < sources.count; ++s) {
    if (sources.type == GradType::kBfloat16) {
      const uint16_t* src = static_cast<const uint16_t*>(sources.source[s]);
      for (size_t i = 0; i < n; ++i) dst[i] += Bf16ToFloat(src[i]);
    } else {
      AccumulateCpu(dst, static_cast<const float*>(sources.source[s]), n);
    }
  }
  return true;
}

}  // namespace taot::kernels
