// A device transport's data plane: device memory, and the kernels' CUDA launchers on taot's side
// stream, the same stream its exchanges run on, so that a pack, the exchange and the unpack that
// follows are ordered with no host wait. Used by the NCCL transport and the in-process device
// transport. Internal to libtaot_client's device part.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <span>
#include <vector>

#include "device_wait.h"
#include "taot/client/data_plane.h"

namespace taot::client {

class CudaPlane final : public DataPlane {
 public:
  // `waiter` outlives the plane (the transport owns both); `stream` is the side stream; `wait`
  // bounds the plane's own waits (Download's when its staging is full).
  CudaPlane(DeviceWaiter& waiter, int device, cudaStream_t stream, absl::Duration wait)
      : waiter_(waiter), device_(device), stream_(stream), wait_(wait) {}
  ~CudaPlane() override;

  bool ordered() const override { return true; }
  absl::StatusOr<std::unique_ptr<TransportBuffer>> NewBuffer(size_t bytes) override;
  absl::StatusOr<std::unique_ptr<StagingBuffer>> NewStaging(size_t bytes) override;
  absl::Status AwaitStaging(StagingBuffer& staging, absl::Duration timeout) override;
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
  absl::Status HoldStream(uintptr_t stream) override;
  absl::Status AwaitStream(uintptr_t stream) override;
  absl::Status Finish(absl::Duration timeout) override;

 private:
  absl::Status Use() const;
  // An event recorded on `stream` now (one reused event per direction: a stream waits on the
  // event's state at the time of the wait call, so reuse is safe).
  absl::Status Record(cudaEvent_t& event, cudaStream_t stream);

  DeviceWaiter& waiter_;
  const int device_;
  cudaStream_t stream_;
  const absl::Duration wait_;
  // Download's pinned staging, and where each download goes once Finish has seen it arrive.
  int64_t* pinned_down_ = nullptr;
  size_t pinned_down_count_ = 0;
  size_t pinned_down_used_ = 0;
  struct Arrival {
    std::span<int64_t> dst;
    size_t offset;
  };
  std::vector<Arrival> arrivals_;
  Copies copies_;
  cudaEvent_t side_done_ = nullptr;
  cudaEvent_t trainer_done_ = nullptr;
  cudaEvent_t finished_ = nullptr;  // Finish's, reused: a layer makes no event of its own
};

}  // namespace taot::client
