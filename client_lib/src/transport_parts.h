// Pieces every transport shares. Internal to libtaot_client.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "taot/client/transport.h"

namespace taot::client {

// Scratch memory in the host's RAM (Gloo, in-process).
class HostBuffer final : public TransportBuffer {
 public:
  explicit HostBuffer(size_t bytes) : bytes_(bytes) {}
  void* data() override { return bytes_.data(); }

 private:
  std::vector<char> bytes_;
};

// A transport whose buffers live in host memory (Gloo, in-process): scratch from the heap and
// the CPU reference of the gradient add.
class HostMemoryTransport : public Transport {
 public:
  absl::StatusOr<std::unique_ptr<TransportBuffer>> NewBuffer(size_t bytes) override {
    return std::make_unique<HostBuffer>(bytes);
  }
  absl::Status Accumulate(float* dst, const float* src, size_t n) override;
};

// Every peer of an exchange is another rank of the group; the error names the operation.
absl::Status CheckPeers(const std::vector<SendOp>& sends, const std::vector<RecvOp>& recvs, int rank, int size);

}  // namespace taot::client
