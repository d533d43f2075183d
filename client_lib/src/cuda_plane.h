// The NCCL transport's data plane: device memory, and the kernels' CUDA launchers on taot's side
// stream, the same stream its sends and receives run on, so that a pack, the exchange and the
// unpack that follows are ordered with no host wait. Internal to libtaot_client's NCCL part.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <span>
#include <vector>

#include "nccl_wait.h"
#include "taot/client/data_plane.h"

namespace taot::client {

class CudaPlane final : public DataPlane {
 public:
  // `comm` outlives the plane (the transport owns both); `stream` is the side stream; `wait` bounds
  // the one host wait inside a layer (Upload's, for the previous layer's copy).
  CudaPlane(NcclComm& comm, int device, cudaStream_t stream, absl::Duration wait)
      : comm_(comm), device_(device), stream_(stream), wait_(wait) {}
  ~CudaPlane() override;

  bool ordered() const override { return true; }
  absl::StatusOr<std::unique_ptr<TransportBuffer>> NewBuffer(size_t bytes) override;
  absl::Status Upload(const void* host, size_t bytes, void* dst) override;
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

  NcclComm& comm_;
  const int device_;
  cudaStream_t stream_;
  const absl::Duration wait_;
  // Upload's pinned staging, and the event after its last copy: the host writes it again only
  // once that copy is done (normally long done: it is the previous layer's).
  void* pinned_ = nullptr;
  size_t pinned_bytes_ = 0;
  cudaEvent_t uploaded_ = nullptr;
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
