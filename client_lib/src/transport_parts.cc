#include "transport_parts.h"

#include "absl/strings/str_cat.h"
#include "taot/kernels/accumulate.h"

namespace taot::client {

absl::Status HostMemoryTransport::Accumulate(float* dst, const float* src, size_t n) {
  kernels::AccumulateCpu(dst, src, n);
  return absl::OkStatus();
}

absl::Status CheckPeers(const std::vector<SendOp>& sends, const std::vector<RecvOp>& recvs, int rank, int size) {
  auto check = [&](const char* field, size_t i, int peer) -> absl::Status {
    if (peer >= 0 && peer < size && peer != rank) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(field, "[", i, "].peer: must be another rank, got ", peer));
  };
  for (size_t i = 0; i < sends.size(); ++i) {
    if (absl::Status s = check("sends", i, sends[i].peer); !s.ok()) return s;
  }
  for (size_t i = 0; i < recvs.size(); ++i) {
    if (absl::Status s = check("recvs", i, recvs[i].peer); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace taot::client
