#include "taot/kernels/device_block_planner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "taot/kernels/plan_layers.h"
#include "taot/planner/block_host.h"

namespace taot::kernels {
namespace {

// Device or pinned host memory that only grows, freed with its owner.
template <typename T, bool kPinned>
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { Free(); }

  cudaError_t Reserve(size_t count) {
    if (count <= capacity_) return cudaSuccess;
    Free();
    void* p = nullptr;
    const cudaError_t e = kPinned ? cudaMallocHost(&p, count * sizeof(T)) : cudaMalloc(&p, count * sizeof(T));
    if (e != cudaSuccess) return e;
    data_ = static_cast<T*>(p);
    capacity_ = count;
    return cudaSuccess;
  }
  T* get() const { return data_; }

 private:
  void Free() {
    if (data_ == nullptr) return;
    if (kPinned) {
      cudaFreeHost(data_);
    } else {
      cudaFree(data_);
    }
    data_ = nullptr;
    capacity_ = 0;
  }
  T* data_ = nullptr;
  size_t capacity_ = 0;
};
template <typename T>
using DeviceBuffer = Buffer<T, false>;
template <typename T>
using PinnedBuffer = Buffer<T, true>;

// A layer's output arrays on the device, [layers x their bound] each; slot i's are at i x bound.
struct LayerOutputs {
  DeviceBuffer<int32_t> piece_expert, piece_rank, entry_piece, entry_source, counts, scratch32;
  DeviceBuffer<int64_t> piece_tokens, entry_tokens, max_load, scratch;
};

// The same, downloaded: as much of each as the counts say.
struct HostOutputs {
  std::vector<int32_t> piece_expert, piece_rank, entry_piece, entry_source;
  std::vector<int64_t> piece_tokens, entry_tokens;
};

class DeviceBlockPlanner final : public Planner {
 public:
  DeviceBlockPlanner(int device, BlockPlannerParams params, cudaStream_t stream)
      : device_(device), params_(params), stream_(stream) {}
  ~DeviceBlockPlanner() override {
    cudaSetDevice(device_);
    cudaStreamDestroy(stream_);
  }
  std::string_view name() const override { return "taot-block"; }
  Batching batching() const override { return Batching::kWhole; }

  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override {
    const PlanRequest* one[] = {&request};
    return std::move(MakePlans(one).front());
  }

  // One launch for each run of requests of one problem (a daemon's batch is one run).
  std::vector<absl::StatusOr<Plan>> MakePlans(std::span<const PlanRequest* const> requests) override {
    std::vector<absl::StatusOr<Plan>> plans;
    plans.reserve(requests.size());
    for (size_t begin = 0; begin < requests.size();) {
      size_t end = begin + 1;
      while (end < requests.size() && requests[end]->problem == requests[begin]->problem) ++end;
      const std::span<const PlanRequest* const> run = requests.subspan(begin, end - begin);
      // A run's plans are appended only once all of them are in.
      if (absl::Status s = PlanRun(run, plans); !s.ok()) plans.insert(plans.end(), run.size(), s);
      begin = end;
    }
    return plans;
  }

 private:
  // An error naming the device and the step that failed, when `e` is one.
  absl::Status Check(cudaError_t e, const char* step) const {
    if (e == cudaSuccess) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("taot-block on cuda:", device_, ": ", step, ": ", cudaGetErrorString(e)));
  }

  // The problem's arrays on the device (again only when the problem changes).
  absl::Status Prepare(const std::shared_ptr<const Problem>& problem) {
    if (problem == problem_) return absl::OkStatus();
    problem_ = nullptr;
    host_ = std::make_unique<BlockShapeArrays>(*problem);
    const block::Shape& h = host_->shape;
    const auto R = static_cast<size_t>(h.ranks);
    if (absl::Status s = Check(node_of_.Reserve(R), "allocating the topology"); !s.ok()) return s;
    if (absl::Status s = Check(by_node_.Reserve(R), "allocating the topology"); !s.ok()) return s;
    if (absl::Status s = Check(node_start_.Reserve(R + 1), "allocating the topology"); !s.ok()) return s;
    if (absl::Status s = Check(cost_.Reserve(R * R), "allocating the topology"); !s.ok()) return s;
    for (cudaError_t e : {Copy(node_of_.get(), h.node_of, R), Copy(by_node_.get(), h.by_node, R),
                          Copy(node_start_.get(), h.node_start, R + 1), Copy(cost_.get(), h.cost, R * R),
                          cudaStreamSynchronize(stream_)}) {
      if (absl::Status s = Check(e, "uploading the topology"); !s.ok()) return s;
    }
    shape_ = h;
    shape_.node_of = node_of_.get();
    shape_.by_node = by_node_.get();
    shape_.node_start = node_start_.get();
    shape_.cost = cost_.get();
    problem_ = problem;
    return absl::OkStatus();
  }

  // Room for `layers` layers of the prepared shape and `resident_words` resident words.
  absl::Status Reserve(size_t layers, size_t resident_words) {
    const auto n = [&](int64_t per_layer) { return layers * static_cast<size_t>(per_layer); };
    const block::Shape& s = shape_;
    const int64_t cells = int64_t{s.ranks} * s.experts, pieces = block::MaxPieces(s), entries = block::MaxEntries(s);
    LayerOutputs& o = outputs_;
    for (cudaError_t e :
         {loads_.Reserve(n(cells)), staged_loads_.Reserve(n(cells)), resident_.Reserve(resident_words + 1),
          staged_resident_.Reserve(resident_words + 1), layers_.Reserve(layers), staged_layers_.Reserve(layers),
          o.piece_expert.Reserve(n(pieces)), o.piece_rank.Reserve(n(pieces)), o.piece_tokens.Reserve(n(pieces)),
          o.entry_piece.Reserve(n(entries)), o.entry_source.Reserve(n(entries)), o.entry_tokens.Reserve(n(entries)),
          o.counts.Reserve(n(2)), o.max_load.Reserve(layers), o.scratch.Reserve(n(block::ScratchWords(s))),
          o.scratch32.Reserve(n(block::Scratch32Words(s))), counts_.Reserve(n(2)), max_loads_.Reserve(layers)}) {
      if (absl::Status st = Check(e, "allocating the layers' memory"); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

  // Plans requests of one problem in one launch, appending their plans to `plans`.
  absl::Status PlanRun(std::span<const PlanRequest* const> run, std::vector<absl::StatusOr<Plan>>& plans) {
    if (absl::Status s = Check(cudaSetDevice(device_), "selecting the device"); !s.ok()) return s;
    if (absl::Status s = Prepare(run.front()->problem); !s.ok()) return s;
    size_t resident_words = 0;
    for (const PlanRequest* r : run) resident_words += 2 * r->resident.size();
    if (absl::Status s = Reserve(run.size(), resident_words); !s.ok()) return s;
    const block::Shape& s = shape_;
    const int64_t cells = int64_t{s.ranks} * s.experts, pieces = block::MaxPieces(s), entries = block::MaxEntries(s);
    caps_.clear();
    size_t resident_at = 0;
    for (size_t i = 0; i < run.size(); ++i) {
      const PlanRequest& request = *run[i];
      std::copy(request.load.data().begin(), request.load.data().end(), staged_loads_.get() + i * cells);
      ResidentPairs(request.resident, sorted_resident_, resident_pairs_);
      std::copy(resident_pairs_.begin(), resident_pairs_.end(), staged_resident_.get() + resident_at);
      caps_.push_back(BlockCap(request, params_));
      staged_layers_.get()[i] = {.load = loads_.get() + i * cells,
                                 .cap = caps_.back(),
                                 .resident = resident_.get() + resident_at,
                                 .resident_count = static_cast<int32_t>(request.resident.size()),
                                 .piece_expert = outputs_.piece_expert.get() + i * pieces,
                                 .piece_rank = outputs_.piece_rank.get() + i * pieces,
                                 .piece_tokens = outputs_.piece_tokens.get() + i * pieces,
                                 .entry_piece = outputs_.entry_piece.get() + i * entries,
                                 .entry_source = outputs_.entry_source.get() + i * entries,
                                 .entry_tokens = outputs_.entry_tokens.get() + i * entries,
                                 .counts = outputs_.counts.get() + 2 * i,
                                 .max_load = outputs_.max_load.get() + i,
                                 .scratch = outputs_.scratch.get() + i * block::ScratchWords(s),
                                 .scratch32 = outputs_.scratch32.get() + i * block::Scratch32Words(s)};
      resident_at += resident_pairs_.size();
    }
    const size_t n = run.size();
    for (cudaError_t e :
         {Copy(loads_.get(), staged_loads_.get(), n * cells),
          Copy(resident_.get(), staged_resident_.get(), resident_at), Copy(layers_.get(), staged_layers_.get(), n),
          PlanLayersCuda(s, layers_.get(), static_cast<int32_t>(n), stream_),
          Copy(counts_.get(), outputs_.counts.get(), 2 * n), Copy(max_loads_.get(), outputs_.max_load.get(), n),
          cudaStreamSynchronize(stream_)}) {
      if (absl::Status st = Check(e, "planning"); !st.ok()) return st;
    }
    // Each layer's plan is the head of its arrays, as long as its counts say.
    // Kept from batch to batch, so that a warm batch allocates nothing for its plans' arrays.
    if (got_.size() < n) got_.resize(n);
    std::vector<HostOutputs>& got = got_;
    for (size_t i = 0; i < n; ++i) {
      const auto p = static_cast<size_t>(counts_.get()[2 * i]), q = static_cast<size_t>(counts_.get()[2 * i + 1]);
      for (cudaError_t e : {Download(got[i].piece_expert, outputs_.piece_expert.get() + i * pieces, p),
                            Download(got[i].piece_rank, outputs_.piece_rank.get() + i * pieces, p),
                            Download(got[i].piece_tokens, outputs_.piece_tokens.get() + i * pieces, p),
                            Download(got[i].entry_piece, outputs_.entry_piece.get() + i * entries, q),
                            Download(got[i].entry_source, outputs_.entry_source.get() + i * entries, q),
                            Download(got[i].entry_tokens, outputs_.entry_tokens.get() + i * entries, q)}) {
        if (absl::Status st = Check(e, "downloading the plans"); !st.ok()) return st;
      }
    }
    if (absl::Status st = Check(cudaStreamSynchronize(stream_), "downloading the plans"); !st.ok()) return st;
    for (size_t i = 0; i < n; ++i) {
      const block::Layer on_host = {.cap = caps_[i],
                                    .piece_expert = got[i].piece_expert.data(),
                                    .piece_rank = got[i].piece_rank.data(),
                                    .piece_tokens = got[i].piece_tokens.data(),
                                    .entry_piece = got[i].entry_piece.data(),
                                    .entry_source = got[i].entry_source.data(),
                                    .entry_tokens = got[i].entry_tokens.data(),
                                    .counts = counts_.get() + 2 * i,
                                    .max_load = max_loads_.get() + i};
      plans.push_back(BlockPlanToPlan(on_host, s.ranks, by_source_));
    }
    return absl::OkStatus();
  }

  // `count` values from `from` to `to` on the stream (cudaMemcpyDefault: the addresses say which way).
  template <typename T>
  cudaError_t Copy(T* to, const T* from, size_t count) {
    return count == 0 ? cudaSuccess : cudaMemcpyAsync(to, from, count * sizeof(T), cudaMemcpyDefault, stream_);
  }
  template <typename T>
  cudaError_t Download(std::vector<T>& to, const T* from, size_t count) {
    to.resize(count);
    return Copy(to.data(), from, count);
  }

  const int device_;
  const BlockPlannerParams params_;
  const cudaStream_t stream_;
  std::shared_ptr<const Problem> problem_;  // the one shape_ is of, held so that no other takes its address
  std::unique_ptr<BlockShapeArrays> host_;
  block::Shape shape_;  // over the device arrays below
  DeviceBuffer<int32_t> node_of_, by_node_, node_start_;
  DeviceBuffer<int64_t> cost_;
  DeviceBuffer<int64_t> loads_;
  PinnedBuffer<int64_t> staged_loads_;
  DeviceBuffer<int32_t> resident_;
  PinnedBuffer<int32_t> staged_resident_;
  DeviceBuffer<block::Layer> layers_;
  PinnedBuffer<block::Layer> staged_layers_;
  LayerOutputs outputs_;
  PinnedBuffer<int32_t> counts_;
  PinnedBuffer<int64_t> max_loads_;
  std::vector<Replica> sorted_resident_;
  std::vector<int32_t> resident_pairs_;
  std::vector<int64_t> by_source_;
  std::vector<int64_t> caps_;     // the batch's layers' caps
  std::vector<HostOutputs> got_;  // their plans' arrays, downloaded
};

// Whether `device` can be used: it exists and takes a context.
absl::Status CheckDevice(int device) {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuda:", device, ": no CUDA device can be used (", cudaGetErrorString(e), ")"));
  }
  if (device < 0 || device >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuda:", device, ": this machine has ", count, " CUDA device", count == 1 ? "" : "s",
                     count > 0 ? absl::StrCat(" (cuda:0 to cuda:", count - 1, ")") : ""));
  }
  if (const cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
    return absl::FailedPreconditionError(absl::StrCat("cuda:", device, ": ", cudaGetErrorString(e)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Planner>> MakeDeviceBlockPlanner(int device, const PlannerParams& params) {
  absl::StatusOr<BlockPlannerParams> read = ReadBlockPlannerParams(params);
  if (!read.ok()) return read.status();
  if (absl::Status s = CheckDevice(device); !s.ok()) return s;
  cudaStream_t stream = nullptr;
  if (const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return absl::FailedPreconditionError(absl::StrCat("cuda:", device, ": creating a stream: ", cudaGetErrorString(e)));
  }
  return std::make_unique<DeviceBlockPlanner>(device, *read, stream);
}

absl::Status PlanBlocksOnDevice(PlannerRegistry& registry, int device) {
  if (absl::Status s = CheckDevice(device); !s.ok()) return s;
  return registry.Rebind("taot-block",
                         [device](const PlannerParams& params) { return MakeDeviceBlockPlanner(device, params); });
}

}  // namespace taot::kernels
