#include "cuda_plane.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "taot/kernels/accumulate.h"
#include "taot/kernels/expert_weights.h"
#include "taot/kernels/reroute.h"
#include "taot/kernels/words.h"
#include "transport_parts.h"

namespace taot::client {
namespace {

class DeviceBuffer final : public TransportBuffer {
 public:
  explicit DeviceBuffer(void* data) : data_(data) {}
  ~DeviceBuffer() override { cudaFree(data_); }
  void* data() override { return data_; }

 private:
  void* data_;
};

cudaStream_t AsStream(uintptr_t stream) { return reinterpret_cast<cudaStream_t>(stream); }

}  // namespace

// Pinned host memory, and the event after the last copy out of it enqueued outside a capture.
class PinnedStaging final : public StagingBuffer {
 public:
  ~PinnedStaging() override {
    if (data_ != nullptr) cudaFreeHost(data_);
    if (read_ != nullptr) cudaEventDestroy(read_);
  }
  void* data() override { return data_; }

 private:
  friend class CudaPlane;
  void* data_ = nullptr;
  cudaEvent_t read_ = nullptr;
  bool recorded_ = false;
};

CudaPlane::~CudaPlane() {
  if (pinned_down_ != nullptr) cudaFreeHost(pinned_down_);
  for (cudaEvent_t e : {side_done_, trainer_done_, finished_}) {
    if (e != nullptr) cudaEventDestroy(e);
  }
}

absl::Status CudaPlane::Use() const {
  if (absl::Status s = waiter_.Usable("device plane"); !s.ok()) return s;
  return Cuda(cudaSetDevice(device_), "cudaSetDevice");
}

absl::Status CudaPlane::Record(cudaEvent_t& event, cudaStream_t stream) {
  if (event == nullptr) {
    if (absl::Status s = Cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event"); !s.ok()) return s;
  }
  return Cuda(cudaEventRecord(event, stream), "event record");
}

absl::StatusOr<std::unique_ptr<TransportBuffer>> CudaPlane::NewBuffer(size_t bytes) {
  if (absl::Status s = Use(); !s.ok()) return s;
  void* data = nullptr;
  if (absl::Status s = Cuda(cudaMalloc(&data, bytes == 0 ? 1 : bytes), "device buffer"); !s.ok()) return s;
  return std::make_unique<DeviceBuffer>(data);
}

absl::StatusOr<std::unique_ptr<StagingBuffer>> CudaPlane::NewStaging(size_t bytes) {
  if (absl::Status s = Use(); !s.ok()) return s;
  auto staging = std::make_unique<PinnedStaging>();
  if (absl::Status s = Cuda(cudaMallocHost(&staging->data_, bytes == 0 ? 1 : bytes), "pinned staging"); !s.ok()) {
    return s;
  }
  // Made here, not in CopyIn, which may be running under a capture.
  if (absl::Status s = Cuda(cudaEventCreateWithFlags(&staging->read_, cudaEventDisableTiming), "event"); !s.ok()) {
    return s;
  }
  return staging;
}

absl::Status CudaPlane::AwaitStaging(StagingBuffer& staging, absl::Duration timeout) {
  auto& pinned = static_cast<PinnedStaging&>(staging);
  if (!pinned.recorded_) return absl::OkStatus();
  if (absl::Status s = Use(); !s.ok()) return s;
  return waiter_.Await(pinned.read_, absl::Now() + timeout, "staging");
}

absl::Status CudaPlane::CopyIn(StagingBuffer& staging, size_t bytes, void* dst) {
  auto& pinned = static_cast<PinnedStaging&>(staging);
  if (absl::Status s = Use(); !s.ok()) return s;
  if (bytes == 0) return absl::OkStatus();
  if (absl::Status s = Cuda(cudaMemcpyAsync(dst, pinned.data_, bytes, cudaMemcpyHostToDevice, stream_), "upload");
      !s.ok()) {
    return s;
  }
  // Under a capture the copy is a graph node and an event recorded here could not be waited for
  // from the host: the replays are the trainer's to order.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (absl::Status s = Cuda(cudaStreamIsCapturing(stream_, &capture), "capture status"); !s.ok()) return s;
  if (capture == cudaStreamCaptureStatusNone) {
    if (absl::Status s = Cuda(cudaEventRecord(pinned.read_, stream_), "event record"); !s.ok()) return s;
    pinned.recorded_ = true;
  }
  ++copies_.uploads;
  return absl::OkStatus();
}

size_t CudaPlane::RerouteWorkspaceBytes(int64_t n, const kernels::RouteTable& table) const {
  return kernels::RerouteCudaWorkspaceBytes(n, table);
}

absl::Status CudaPlane::Reroute(const int32_t* expert_ids, int64_t n, const kernels::RouteTable& table,
                                int32_t* virtual_expert, int32_t* dest_rank, int64_t* send_counts, int64_t* order,
                                void* workspace, size_t workspace_bytes, kernels::RouteCheck* check) {
  if (absl::Status s = Use(); !s.ok()) return s;
  return Cuda(kernels::RerouteCuda(expert_ids, n, table, virtual_expert, dest_rank, send_counts, order, workspace,
                                   workspace_bytes, check, stream_),
              "reroute");
}

absl::Status CudaPlane::CountExperts(const void* ids, bool wide, int64_t n, int32_t experts, int64_t* counts,
                                     kernels::RouteCheck* check) {
  if (absl::Status s = Use(); !s.ok()) return s;
  return Cuda(wide ? kernels::CountExpertsCuda(static_cast<const int64_t*>(ids), n, experts, counts, check, stream_)
                   : kernels::CountExpertsCuda(static_cast<const int32_t*>(ids), n, experts, counts, check, stream_),
              "count experts");
}

absl::Status CudaPlane::WriteWords(int64_t* dst, const kernels::Words& words) {
  if (words.count < 0 || words.count > kernels::kMaxWords) return WordCountError(words);
  if (absl::Status s = Use(); !s.ok()) return s;
  return Cuda(kernels::WriteWordsCuda(dst, words, stream_), "write words");
}

absl::Status CudaPlane::Download(const int64_t* src, std::span<int64_t> dst) {
  if (absl::Status s = Use(); !s.ok()) return s;
  if (dst.empty()) return absl::OkStatus();
  if (pinned_down_used_ + dst.size() > pinned_down_count_) {
    // The staging is too small: let what is in it arrive, then make room.
    if (absl::Status s = Finish(wait_); !s.ok()) return s;
    if (dst.size() > pinned_down_count_) {
      if (pinned_down_ != nullptr) cudaFreeHost(pinned_down_);
      pinned_down_ = nullptr;
      pinned_down_count_ = 0;
      void* p = nullptr;
      if (absl::Status s = Cuda(cudaMallocHost(&p, dst.size_bytes()), "pinned staging"); !s.ok()) return s;
      pinned_down_ = static_cast<int64_t*>(p);
      pinned_down_count_ = dst.size();
    }
  }
  const size_t offset = pinned_down_used_;
  if (absl::Status s = Cuda(
          cudaMemcpyAsync(pinned_down_ + offset, src, dst.size_bytes(), cudaMemcpyDeviceToHost, stream_), "download");
      !s.ok()) {
    return s;
  }
  pinned_down_used_ += dst.size();
  arrivals_.push_back({dst, offset});
  ++copies_.downloads;
  return absl::OkStatus();
}

absl::Status CudaPlane::Pack(const kernels::ExpertTensors& tensors, const int32_t* experts, int32_t count,
                             void* packed) {
  if (absl::Status s = Use(); !s.ok()) return s;
  return Cuda(kernels::PackExpertsCuda(tensors, experts, count, packed, stream_), "pack");
}

absl::Status CudaPlane::Unpack(const kernels::ExpertTensors& tensors, const int32_t* experts, int32_t count,
                               const void* packed) {
  if (absl::Status s = Use(); !s.ok()) return s;
  return Cuda(kernels::UnpackExpertsCuda(tensors, experts, count, packed, stream_), "unpack");
}

absl::Status CudaPlane::AccumulateMany(float* dst, const kernels::GradSources& sources, size_t n) {
  if (absl::Status s = Use(); !s.ok()) return s;
  return Cuda(kernels::AccumulateManyCuda(dst, sources, n, stream_), "accumulate");
}

absl::Status CudaPlane::HoldStream(uintptr_t stream) {
  if (absl::Status s = Use(); !s.ok()) return s;
  if (absl::Status s = Record(side_done_, stream_); !s.ok()) return s;
  return Cuda(cudaStreamWaitEvent(AsStream(stream), side_done_, 0), "trainer stream wait");
}

absl::Status CudaPlane::AwaitStream(uintptr_t stream) {
  if (absl::Status s = Use(); !s.ok()) return s;
  if (absl::Status s = Record(trainer_done_, AsStream(stream)); !s.ok()) return s;
  return Cuda(cudaStreamWaitEvent(stream_, trainer_done_, 0), "side stream wait");
}

absl::Status CudaPlane::Finish(absl::Duration timeout) {
  if (absl::Status s = Use(); !s.ok()) return s;
  if (absl::Status s = Record(finished_, stream_); !s.ok()) return s;
  if (absl::Status s = waiter_.Await(finished_, absl::Now() + timeout, "device plane"); !s.ok()) return s;
  for (const Arrival& a : arrivals_) std::memcpy(a.dst.data(), pinned_down_ + a.offset, a.dst.size_bytes());
  arrivals_.clear();
  pinned_down_used_ = 0;
  return absl::OkStatus();
}

}  // namespace taot::client
