#include "taot/client/device_in_process_transport.h"

#include <cuda_runtime_api.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cuda_plane.h"
#include "device_wait.h"
#include "taot/client/in_process_transport.h"
#include "transport_parts.h"

namespace taot::client {
namespace {

// Nothing can break between threads of one process but the device's own work.
class EventWaiter final : public DeviceWaiter {
 public:
  absl::Status Usable(const char*) const override { return absl::OkStatus(); }
  absl::Status Await(cudaEvent_t event, absl::Time deadline, const char* what) override {
    return AwaitEvent(event, deadline, what);
  }
};

// The receives' copies to the device, enqueued on the rank's stream: done when its event is.
class DeviceExchange final : public PendingExchange {
 public:
  explicit DeviceExchange(cudaEvent_t event) : event_(event) {}
  ~DeviceExchange() override { cudaEventDestroy(event_); }
  absl::Status Wait(absl::Duration timeout) override {
    return AwaitEvent(event_, absl::Now() + timeout, "device in-process exchange");
  }

 private:
  cudaEvent_t event_;
};

class InProcessDeviceTransport final : public Transport {
 public:
  InProcessDeviceTransport(std::unique_ptr<Transport> host, int device, cudaStream_t stream, absl::Duration timeout)
      : host_(std::move(host)),
        device_(device),
        stream_(stream),
        timeout_(timeout),
        plane_(waiter_, device, stream, timeout) {}
  ~InProcessDeviceTransport() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  DataPlane& plane() override { return plane_; }

  absl::Status AllGather(std::span<const int64_t> mine, std::span<int64_t> all, absl::Duration timeout) override {
    return host_->AllGather(mine, all, timeout);
  }

  absl::Status AllGatherOnPlane(const int64_t* mine, int64_t* all, size_t n, absl::Duration timeout) override {
    std::vector<int64_t> row(n), rows(n * static_cast<size_t>(size()));
    if (absl::Status s = Fetch(row.data(), mine, n * sizeof(int64_t)); !s.ok()) return s;
    if (absl::Status s = host_->AllGather(row, rows, timeout); !s.ok()) return s;
    return Put(all, rows.data(), rows.size() * sizeof(int64_t));
  }

  absl::StatusOr<std::unique_ptr<PendingExchange>> StartExchange(std::vector<SendOp> sends,
                                                                 std::vector<RecvOp> recvs) override {
    if (absl::Status s = CheckPeers(sends, recvs, rank(), size()); !s.ok()) return s;
    std::vector<std::vector<char>> sent(sends.size()), arrived(recvs.size());
    std::vector<SendOp> host_sends;
    std::vector<RecvOp> host_recvs;
    for (size_t i = 0; i < sends.size(); ++i) {
      sent[i].resize(sends[i].bytes);
      if (absl::Status s = Fetch(sent[i].data(), sends[i].data, sends[i].bytes); !s.ok()) return s;
      host_sends.push_back({sends[i].peer, sent[i].data(), sends[i].bytes, sends[i].tag});
    }
    for (size_t i = 0; i < recvs.size(); ++i) {
      arrived[i].resize(recvs[i].bytes);
      host_recvs.push_back({recvs[i].peer, arrived[i].data(), recvs[i].bytes, recvs[i].tag});
    }
    absl::StatusOr<std::unique_ptr<PendingExchange>> pending =
        host_->StartExchange(std::move(host_sends), std::move(host_recvs));
    if (!pending.ok()) return pending.status();
    if (absl::Status s = (*pending)->Wait(timeout_); !s.ok()) return s;
    for (size_t i = 0; i < recvs.size(); ++i) {
      if (absl::Status s = Put(recvs[i].data, arrived[i].data(), recvs[i].bytes); !s.ok()) return s;
    }
    cudaEvent_t event = nullptr;
    if (absl::Status s = Cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event"); !s.ok()) return s;
    if (absl::Status s = Cuda(cudaEventRecord(event, stream_), "event"); !s.ok()) {
      cudaEventDestroy(event);
      return s;
    }
    return std::make_unique<DeviceExchange>(event);
  }

 private:
  // Device memory to the host once the work already enqueued on the rank's stream is done (it
  // may be what writes `src`).
  absl::Status Fetch(void* host, const void* src, size_t bytes) {
    if (absl::Status s = plane_.Finish(timeout_); !s.ok()) return s;
    if (bytes == 0) return absl::OkStatus();
    if (absl::Status s = Cuda(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_), "staging"); !s.ok()) {
      return s;
    }
    return Cuda(cudaStreamSynchronize(stream_), "staging");
  }
  // Host memory to the device, in order on the rank's stream. From pageable memory the call
  // returns once the bytes are staged, so `host` may go right after.
  absl::Status Put(void* dst, const void* host, size_t bytes) {
    if (bytes == 0) return absl::OkStatus();
    if (absl::Status s = Cuda(cudaSetDevice(device_), "cudaSetDevice"); !s.ok()) return s;
    return Cuda(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_), "staging");
  }

  std::unique_ptr<Transport> host_;
  const int device_;
  cudaStream_t stream_;
  const absl::Duration timeout_;
  EventWaiter waiter_;  // before the plane, which refers to it
  CudaPlane plane_;
};

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<Transport>>> ConnectInProcessOnDevice(int size,
                                                                                 const InProcessDeviceOptions& o) {
  if (size < 1) return absl::InvalidArgumentError(absl::StrCat("size: must be >= 1, got ", size));
  if (o.device < 0) return absl::InvalidArgumentError(absl::StrCat("device: must be >= 0, got ", o.device));
  int devices = 0;
  if (absl::Status s = Cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount"); !s.ok()) return s;
  if (o.device >= devices) {
    return absl::InvalidArgumentError(absl::StrCat("device: must be in [0, ", devices, "), got ", o.device));
  }
  if (absl::Status s = Cuda(cudaSetDevice(o.device), "cudaSetDevice"); !s.ok()) return s;
  std::vector<std::unique_ptr<Transport>> host = ConnectInProcess(size);
  std::vector<std::unique_ptr<Transport>> out;
  for (int r = 0; r < size; ++r) {
    cudaStream_t stream = nullptr;
    if (absl::Status s = Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "side stream"); !s.ok()) {
      return s;
    }
    out.push_back(std::make_unique<InProcessDeviceTransport>(std::move(host[r]), o.device, stream, o.timeout));
  }
  return out;
}

}  // namespace taot::client
