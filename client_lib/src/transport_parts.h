// Pieces every transport shares. Internal to libtaot_client.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "taot/client/data_plane.h"
#include "taot/client/transport.h"

namespace taot::client {

// Host memory and the kernels' CPU references (Gloo, in-process): every step is done when it
// returns, so the trainer's streams have nothing to wait for.
class HostPlane final : public DataPlane {
 public:
  bool ordered() const override { return false; }
  absl::StatusOr<std::unique_ptr<TransportBuffer>> NewBuffer(size_t bytes) override;
  absl::StatusOr<std::unique_ptr<StagingBuffer>> NewStaging(size_t bytes) override;
  absl::Status AwaitStaging(StagingBuffer&, absl::Duration) override { return absl::OkStatus(); }
  absl::Status CopyIn(StagingBuffer& staging, size_t bytes, void* dst) override;
  absl::Status Pack(const kernels::ExpertTensors& tensors, const int32_t* experts, int32_t count,
                    void* packed) override;
  absl::Status Unpack(const kernels::ExpertTensors& tensors, const int32_t* experts, int32_t count,
                      const void* packed) override;
  absl::Status AccumulateMany(float* dst, const kernels::GradSources& sources, size_t n) override;
  absl::Status CountExperts(const void* ids, bool wide, int64_t n, int32_t experts, int64_t* counts,
                            kernels::RouteCheck* check) override;
  absl::Status WriteWords(int64_t* dst, const kernels::Words& words) override;
  absl::Status Download(const int64_t* src, std::span<int64_t> dst) override;
  Copies copies() const override { return copies_; }
  size_t RerouteWorkspaceBytes(int64_t n, const kernels::RouteTable& table) const override;
  absl::Status Reroute(const int32_t* expert_ids, int64_t n, const kernels::RouteTable& table, int32_t* virtual_expert,
                       int32_t* dest_rank, int64_t* send_counts, int64_t* order, void* workspace,
                       size_t workspace_bytes, kernels::RouteCheck* check) override;
  absl::Status HoldStream(uintptr_t) override { return absl::OkStatus(); }
  absl::Status AwaitStream(uintptr_t) override { return absl::OkStatus(); }
  absl::Status Finish(absl::Duration) override { return absl::OkStatus(); }

 private:
  Copies copies_;
};

// A transport whose buffers live in host memory (Gloo, in-process).
class HostMemoryTransport : public Transport {
 public:
  DataPlane& plane() override { return plane_; }
  absl::Status AllGatherOnPlane(const int64_t* mine, int64_t* all, size_t n, absl::Duration timeout) override {
    return AllGather({mine, n}, {all, n * static_cast<size_t>(size())}, timeout);
  }

 private:
  HostPlane plane_;
};

// Every peer of an exchange is another rank of the group; the error names the operation.
absl::Status CheckPeers(const std::vector<SendOp>& sends, const std::vector<RecvOp>& recvs, int rank, int size);

// The error for a kernels::Words whose count is outside [0, kMaxWords], on every plane.
absl::Status WordCountError(const kernels::Words& words);

}  // namespace taot::client
