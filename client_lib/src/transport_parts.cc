#include "transport_parts.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "taot/kernels/accumulate.h"
#include "taot/kernels/expert_weights.h"
#include "taot/kernels/reroute.h"
#include "taot/kernels/words.h"

namespace taot::client {
namespace {

class HostBuffer final : public TransportBuffer {
 public:
  explicit HostBuffer(size_t bytes) : bytes_(bytes) {}
  void* data() override { return bytes_.data(); }

 private:
  std::vector<char> bytes_;
};

class HostStaging final : public StagingBuffer {
 public:
  explicit HostStaging(size_t bytes) : bytes_(bytes) {}
  void* data() override { return bytes_.data(); }

 private:
  std::vector<char> bytes_;
};

absl::Status TensorCountError(const kernels::ExpertTensors& tensors) {
  return absl::InvalidArgumentError(
      absl::StrCat("tensors.count: must be in [1, ", kernels::kMaxTensors, "], got ", tensors.count));
}

}  // namespace

absl::Status WordCountError(const kernels::Words& words) {
  return absl::InvalidArgumentError(
      absl::StrCat("words.count: must be in [0, ", kernels::kMaxWords, "], got ", words.count));
}

absl::StatusOr<std::unique_ptr<TransportBuffer>> HostPlane::NewBuffer(size_t bytes) {
  return std::make_unique<HostBuffer>(bytes);
}

absl::StatusOr<std::unique_ptr<StagingBuffer>> HostPlane::NewStaging(size_t bytes) {
  return std::make_unique<HostStaging>(bytes);
}

absl::Status HostPlane::CopyIn(StagingBuffer& staging, size_t bytes, void* dst) {
  if (bytes == 0) return absl::OkStatus();
  std::memcpy(dst, staging.data(), bytes);
  ++copies_.uploads;
  return absl::OkStatus();
}

size_t HostPlane::RerouteWorkspaceBytes(int64_t n, const kernels::RouteTable& table) const {
  return kernels::RerouteWorkspaceBytes(n, table);
}

absl::Status HostPlane::Reroute(const int32_t* expert_ids, int64_t n, const kernels::RouteTable& table,
                                int32_t* virtual_expert, int32_t* dest_rank, int64_t* send_counts, int64_t* order,
                                void* workspace, size_t workspace_bytes, kernels::RouteCheck* check) {
  if (workspace_bytes < kernels::RerouteWorkspaceBytes(n, table)) {
    return absl::InvalidArgumentError("workspace: smaller than RerouteWorkspaceBytes");
  }
  kernels::RerouteCpu(expert_ids, n, table, virtual_expert, dest_rank, send_counts, order, workspace, check);
  return absl::OkStatus();
}

absl::Status HostPlane::CountExperts(const void* ids, bool wide, int64_t n, int32_t experts, int64_t* counts,
                                     kernels::RouteCheck* check) {
  if (wide) {
    kernels::CountExpertsCpu(static_cast<const int64_t*>(ids), n, experts, counts, check);
  } else {
    kernels::CountExpertsCpu(static_cast<const int32_t*>(ids), n, experts, counts, check);
  }
  return absl::OkStatus();
}

absl::Status HostPlane::WriteWords(int64_t* dst, const kernels::Words& words) {
  if (!kernels::WriteWordsCpu(dst, words)) return WordCountError(words);
  return absl::OkStatus();
}

absl::Status HostPlane::Download(const int64_t* src, std::span<int64_t> dst) {
  if (dst.empty()) return absl::OkStatus();
  std::copy(src, src + dst.size(), dst.begin());
  ++copies_.downloads;
  return absl::OkStatus();
}

absl::Status HostPlane::Pack(const kernels::ExpertTensors& tensors, const int32_t* experts, int32_t count,
                             void* packed) {
  if (!kernels::PackExpertsCpu(tensors, experts, count, packed)) return TensorCountError(tensors);
  return absl::OkStatus();
}

absl::Status HostPlane::Unpack(const kernels::ExpertTensors& tensors, const int32_t* experts, int32_t count,
                               const void* packed) {
  if (!kernels::UnpackExpertsCpu(tensors, experts, count, packed)) return TensorCountError(tensors);
  return absl::OkStatus();
}

absl::Status HostPlane::AccumulateMany(float* dst, const kernels::GradSources& sources, size_t n) {
  if (!kernels::AccumulateManyCpu(dst, sources, n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sources.count: must be in [0, ", kernels::kMaxSources, "], got ", sources.count));
  }
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
