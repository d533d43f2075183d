#include "taot/kernels/accumulate.h"

namespace taot::kernels {

void AccumulateCpu(float* dst, const float* src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

}  // namespace taot::kernels
