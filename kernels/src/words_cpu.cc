#include "taot/kernels/words.h"

namespace taot::kernels {

bool WriteWordsCpu(int64_t* dst, const Words& words) {
  if (words.count < 0 || words.count > kMaxWords) return false;
  for (int32_t i = 0; i < words.count; ++i) dst[i] = words.value[i];
  return true;
}

}  // namespace taot::kernels
