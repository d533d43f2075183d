#include "taot/client/nccl_transport.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cuda_plane.h"
#include "nccl_wait.h"
#include "transport_parts.h"

namespace taot::client {
namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueId), "NcclUniqueId must hold an ncclUniqueId");

class NcclExchange final : public PendingExchange {
 public:
  NcclExchange(NcclComm& comm, cudaEvent_t event) : comm_(comm), event_(event) {}
  ~NcclExchange() override { cudaEventDestroy(event_); }
  absl::Status Wait(absl::Duration timeout) override {
    return AwaitComm(comm_, event_, absl::Now() + timeout, "nccl exchange");
  }

 private:
  NcclComm& comm_;
  cudaEvent_t event_;
};

class NcclTransport final : public Transport {
 public:
  NcclTransport(std::unique_ptr<NcclComm> comm, const NcclOptions& o, cudaStream_t stream, bool own_stream)
      : comm_(std::move(comm)),
        rank_(o.rank),
        size_(o.size),
        device_(o.device),
        stream_(stream),
        own_stream_(own_stream),
        plane_(*comm_, o.device, stream, o.timeout),
        plane_wait_(o.timeout) {}
  ~NcclTransport() override {
    if (scratch_ != nullptr) cudaFree(scratch_);
    comm_.reset();  // before the stream it may have work on
    if (own_stream_) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  DataPlane& plane() override { return plane_; }

  absl::Status AllGather(std::span<const int64_t> mine, std::span<int64_t> all, absl::Duration timeout) override {
    if (all.size() != mine.size() * static_cast<size_t>(size_)) {
      return absl::InvalidArgumentError(
          absl::StrCat("all: must have size x mine = ", size_ * mine.size(), " entries, got ", all.size()));
    }
    const size_t bytes = (mine.size() + all.size()) * sizeof(int64_t);
    if (absl::Status s = Use(); !s.ok()) return s;
    if (absl::Status s = Scratch(bytes); !s.ok()) return s;
    auto* send = static_cast<int64_t*>(scratch_);
    int64_t* recv = send + mine.size();
    // Through the plane's copies, so that its counters hold every host-device copy a layer makes.
    if (absl::Status s = Stage(mine); !s.ok()) return s;
    if (absl::Status s = plane_.CopyIn(*staging_, mine.size_bytes(), send); !s.ok()) return s;
    if (absl::Status s = AllGatherOnPlane(send, recv, mine.size(), timeout); !s.ok()) return s;
    if (absl::Status s = plane_.Download(recv, all); !s.ok()) return s;
    return plane_.Finish(timeout);
  }

  absl::Status AllGatherOnPlane(const int64_t* mine, int64_t* all, size_t n, absl::Duration) override {
    if (absl::Status s = Use(); !s.ok()) return s;
    return Nccl(ncclAllGather(mine, all, n, ncclInt64, comm_->comm, stream_), "nccl all-gather");
  }

  absl::StatusOr<std::unique_ptr<PendingExchange>> StartExchange(std::vector<SendOp> sends,
                                                                 std::vector<RecvOp> recvs) override {
    if (absl::Status s = CheckPeers(sends, recvs, rank_, size_); !s.ok()) return s;
    if (absl::Status s = Use(); !s.ok()) return s;
    // One group: NCCL matches the sends and receives between two ranks in the order issued,
    // which both sides derive from the same plan.
    if (absl::Status s = Nccl(ncclGroupStart(), "nccl group"); !s.ok()) return s;
    for (const SendOp& op : sends) {
      if (absl::Status s = Nccl(ncclSend(op.data, op.bytes, ncclChar, op.peer, comm_->comm, stream_), "nccl send");
          !s.ok()) {
        ncclGroupEnd();
        return s;
      }
    }
    for (const RecvOp& op : recvs) {
      if (absl::Status s = Nccl(ncclRecv(op.data, op.bytes, ncclChar, op.peer, comm_->comm, stream_), "nccl recv");
          !s.ok()) {
        ncclGroupEnd();
        return s;
      }
    }
    if (absl::Status s = Nccl(ncclGroupEnd(), "nccl group"); !s.ok()) return s;
    cudaEvent_t event = nullptr;
    if (absl::Status s = Cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event"); !s.ok()) return s;
    if (absl::Status s = Cuda(cudaEventRecord(event, stream_), "event"); !s.ok()) {
      cudaEventDestroy(event);
      return s;
    }
    return std::make_unique<NcclExchange>(*comm_, event);
  }

 private:
  absl::Status Use() const {
    if (absl::Status s = comm_->Usable("nccl transport"); !s.ok()) return s;
    return Cuda(cudaSetDevice(device_), "cudaSetDevice");
  }

  // `mine` in the staging the host all-gather copies in from (once its last copy has read it).
  absl::Status Stage(std::span<const int64_t> mine) {
    if (staging_ != nullptr) {
      if (absl::Status s = plane_.AwaitStaging(*staging_, plane_wait_); !s.ok()) return s;
    }
    if (staging_ == nullptr || mine.size_bytes() > staging_bytes_) {
      absl::StatusOr<std::unique_ptr<StagingBuffer>> staging = plane_.NewStaging(mine.size_bytes());
      if (!staging.ok()) return staging.status();
      staging_ = *std::move(staging);
      staging_bytes_ = mine.size_bytes();
    }
    if (!mine.empty()) std::memcpy(staging_->data(), mine.data(), mine.size_bytes());
    return absl::OkStatus();
  }

  absl::Status Scratch(size_t bytes) {
    if (bytes <= scratch_bytes_) return absl::OkStatus();
    if (scratch_ != nullptr) cudaFree(scratch_);
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    if (absl::Status s = Cuda(cudaMalloc(&scratch_, bytes), "scratch"); !s.ok()) return s;
    scratch_bytes_ = bytes;
    return absl::OkStatus();
  }

  // Declared first: the plane refers to it, and it is destroyed last.
  std::unique_ptr<NcclComm> comm_;
  const int rank_, size_, device_;
  cudaStream_t stream_;
  const bool own_stream_;
  CudaPlane plane_;
  const absl::Duration plane_wait_;
  std::unique_ptr<StagingBuffer> staging_;
  size_t staging_bytes_ = 0;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

}  // namespace

absl::StatusOr<NcclUniqueId> NewNcclUniqueId() {
  ncclUniqueId id;
  if (absl::Status s = Nccl(ncclGetUniqueId(&id), "ncclGetUniqueId"); !s.ok()) return s;
  NcclUniqueId out;
  std::memcpy(out.data(), &id, sizeof(id));
  return out;
}

absl::StatusOr<std::unique_ptr<Transport>> ConnectNccl(const NcclOptions& o) {
  if (o.size < 1) return absl::InvalidArgumentError(absl::StrCat("size: must be >= 1, got ", o.size));
  if (o.rank < 0 || o.rank >= o.size) {
    return absl::InvalidArgumentError(absl::StrCat("rank: must be in [0, ", o.size, "), got ", o.rank));
  }
  int devices = 0;
  if (absl::Status s = Cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount"); !s.ok()) return s;
  if (o.device < 0 || o.device >= devices) {
    return absl::InvalidArgumentError(absl::StrCat("device: must be in [0, ", devices, "), got ", o.device));
  }
  if (absl::Status s = Cuda(cudaSetDevice(o.device), "cudaSetDevice"); !s.ok()) return s;
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(o.stream);
  const bool own = stream == nullptr;
  if (own) {
    if (absl::Status s = Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "side stream"); !s.ok())
      return s;
  }
  ncclUniqueId id;
  std::memcpy(&id, o.id.data(), sizeof(id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that a missing peer is a timeout, not a hang
  auto comm = std::make_unique<NcclComm>();
  absl::Status s = Nccl(ncclCommInitRankConfig(&comm->comm, o.size, id, o.rank, &config), "ncclCommInitRankConfig");
  if (s.ok()) s = AwaitComm(*comm, nullptr, absl::Now() + o.timeout, "nccl rendezvous");
  if (!s.ok()) {
    if (own) cudaStreamDestroy(stream);
    return s;
  }
  return std::make_unique<NcclTransport>(std::move(comm), o, stream, own);
}

}  // namespace taot::client
