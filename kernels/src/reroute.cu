// The CUDA launchers of reroute.h. Reroute is two stable radix sorts (cub::DeviceRadixSort, which
// is stable, so its order is the CPU reference's counting sort, bit for bit) around two
// element-wise kernels: sorting by expert gives every pair its index k among its expert's pairs
// (its sorted position less the expert's start), VirtualIdOfPair then places it, and sorting by
// virtual id gives `order`. Every buffer is carved from the caller's workspace.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <climits>
#include <cstdint>

#include "taot/kernels/reroute.h"

namespace taot::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;
// Histograms up to this many bins live in shared memory (48 KiB of 32-bit counters).
constexpr int32_t kSharedBins = 12288;

unsigned Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

int BitsFor(uint32_t values) {  // bits to sort keys in [0, values)
  int bits = 1;
  while (bits < 32 && (uint32_t{1} << bits) < values) ++bits;
  return bits;
}

__global__ void InitCheck(RouteCheck* check, int64_t n, int32_t experts) {
  check->first_bad_pair = n;
  check->first_short_expert = experts;
}

template <typename Id>
__global__ void CountKernel(const Id* __restrict__ ids, int64_t n, int32_t experts,
                            unsigned long long* __restrict__ counts, RouteCheck* check) {
  extern __shared__ unsigned int bins[];
  const bool shared = experts <= kSharedBins;
  if (shared) {
    for (int32_t e = threadIdx.x; e < experts; e += blockDim.x) bins[e] = 0;
    __syncthreads();
  }
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Id e = ids[i];
    if (e < 0 || e >= experts) {
      atomicMin(reinterpret_cast<long long*>(&check->first_bad_pair), static_cast<long long>(i));
    } else if (shared) {
      atomicAdd(&bins[e], 1u);
    } else {
      atomicAdd(&counts[e], 1ull);
    }
  }
  if (shared) {
    __syncthreads();
    for (int32_t e = threadIdx.x; e < experts; e += blockDim.x) {
      if (bins[e] != 0) atomicAdd(&counts[e], static_cast<unsigned long long>(bins[e]));
    }
  }
}

template <typename Id>
cudaError_t CountExpertsOn(const Id* ids, int64_t n, int32_t experts, int64_t* counts, RouteCheck* check,
                           cudaStream_t stream) {
  if (n < 0 || experts <= 0) return cudaErrorInvalidValue;
  InitCheck<<<1, 1, 0, stream>>>(check, n, experts);
  cudaError_t err = cudaMemsetAsync(counts, 0, static_cast<size_t>(experts) * sizeof(int64_t), stream);
  if (err != cudaSuccess || n == 0) return err != cudaSuccess ? err : cudaGetLastError();
  const size_t shared = experts <= kSharedBins ? static_cast<size_t>(experts) * sizeof(unsigned int) : 0;
  CountKernel<<<Blocks(n), kThreads, shared, stream>>>(ids, n, experts, reinterpret_cast<unsigned long long*>(counts),
                                                       check);
  return cudaGetLastError();
}

// Pairs with an id out of range sort last (key E) and are placed nowhere.
__global__ void ExpertKeys(const int32_t* __restrict__ ids, int64_t n, int32_t experts, uint32_t* __restrict__ keys,
                           int64_t* __restrict__ iota) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t e = ids[i];
    keys[i] = e < 0 || e >= experts ? static_cast<uint32_t>(experts) : static_cast<uint32_t>(e);
    iota[i] = i;
  }
}

__global__ void CheckPlan(RouteTable table, const int64_t* __restrict__ counts, RouteCheck* check) {
  for (int32_t e = blockIdx.x * blockDim.x + threadIdx.x; e < table.experts; e += gridDim.x * blockDim.x) {
    const int32_t last = table.guest_begin[e + 1] - 1;
    if (last >= table.guest_begin[e] && table.pair_end[last] > counts[e]) atomicMin(&check->first_short_expert, e);
  }
}

// Position p of the expert-sorted pairs: pair by_expert[p], the (p - starts[e])-th pair of e.
__global__ void Place(RouteTable table, int64_t n, const uint32_t* __restrict__ sorted_experts,
                      const int64_t* __restrict__ by_expert, const int64_t* __restrict__ starts,
                      int32_t* __restrict__ virtual_expert, int32_t* __restrict__ dest_rank,
                      uint32_t* __restrict__ virtual_keys) {
  const int32_t local = LocalExperts(table);
  for (int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint32_t e = sorted_experts[p];
    const int64_t i = by_expert[p];
    if (e >= static_cast<uint32_t>(table.experts)) {
      virtual_expert[i] = -1;
      dest_rank[i] = -1;
      virtual_keys[i] = static_cast<uint32_t>(VirtualExperts(table));
      continue;
    }
    const int32_t v = VirtualIdOfPair(table, static_cast<int32_t>(e), p - starts[e]);
    virtual_expert[i] = v;
    dest_rank[i] = v / local;
    virtual_keys[i] = static_cast<uint32_t>(v);
  }
}

__global__ void CountSends(const int32_t* __restrict__ dest_rank, int64_t n, int32_t ranks,
                           unsigned long long* __restrict__ send_counts) {
  extern __shared__ unsigned int bins[];
  for (int32_t r = threadIdx.x; r < ranks; r += blockDim.x) bins[r] = 0;
  __syncthreads();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (dest_rank[i] >= 0) atomicAdd(&bins[dest_rank[i]], 1u);
  }
  __syncthreads();
  for (int32_t r = threadIdx.x; r < ranks; r += blockDim.x) {
    if (bins[r] != 0) atomicAdd(&send_counts[r], static_cast<unsigned long long>(bins[r]));
  }
}

// The workspace, carved in 256-byte aligned pieces.
struct Workspace {
  uint32_t* keys;         // [n]
  uint32_t* sorted_keys;  // [n]
  int64_t* iota;          // [n]
  int64_t* by_key;        // [n]
  int64_t* counts;        // [E]
  int64_t* starts;        // [E]
  void* temp;             // cub's
  size_t temp_bytes;
};

size_t Align(size_t bytes) { return (bytes + 255) / 256 * 256; }

size_t CubTempBytes(int64_t n, const RouteTable& table) {
  size_t sort = 0, scan = 0;
  const int items = static_cast<int>(n);
  cub::DeviceRadixSort::SortPairs(nullptr, sort, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
                                  static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), items, 0, 32);
  cub::DeviceScan::ExclusiveSum(nullptr, scan, static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
                                table.experts);
  return sort > scan ? sort : scan;
}

size_t Carve(int64_t n, const RouteTable& table, void* base, Workspace* w) {
  char* at = static_cast<char*>(base);
  size_t used = 0;
  auto take = [&](size_t bytes) {
    void* p = at == nullptr ? nullptr : at + used;
    used += Align(bytes);
    return p;
  };
  const size_t pairs = static_cast<size_t>(n);
  w->keys = static_cast<uint32_t*>(take(pairs * sizeof(uint32_t)));
  w->sorted_keys = static_cast<uint32_t*>(take(pairs * sizeof(uint32_t)));
  w->iota = static_cast<int64_t*>(take(pairs * sizeof(int64_t)));
  w->by_key = static_cast<int64_t*>(take(pairs * sizeof(int64_t)));
  w->counts = static_cast<int64_t*>(take(static_cast<size_t>(table.experts) * sizeof(int64_t)));
  w->starts = static_cast<int64_t*>(take(static_cast<size_t>(table.experts) * sizeof(int64_t)));
  w->temp_bytes = CubTempBytes(n, table);
  w->temp = take(w->temp_bytes);
  return used;
}

}  // namespace

cudaError_t CountExpertsCuda(const int32_t* ids, int64_t n, int32_t experts, int64_t* counts, RouteCheck* check,
                             cudaStream_t stream) {
  return CountExpertsOn(ids, n, experts, counts, check, stream);
}

cudaError_t CountExpertsCuda(const int64_t* ids, int64_t n, int32_t experts, int64_t* counts, RouteCheck* check,
                             cudaStream_t stream) {
  return CountExpertsOn(ids, n, experts, counts, check, stream);
}

size_t RerouteCudaWorkspaceBytes(int64_t n, const RouteTable& table) {
  Workspace w;
  return Carve(n, table, nullptr, &w);
}

cudaError_t RerouteCuda(const int32_t* expert_ids, int64_t n, const RouteTable& table, int32_t* virtual_expert,
                        int32_t* dest_rank, int64_t* send_counts, int64_t* order, void* workspace,
                        size_t workspace_bytes, RouteCheck* check, cudaStream_t stream) {
  if (n < 0 || n > INT_MAX || table.ranks <= 0 || table.experts <= 0 || table.experts % table.ranks != 0 ||
      table.ranks > kSharedBins) {
    return cudaErrorInvalidValue;
  }
  Workspace w;
  if (Carve(n, table, workspace, &w) > workspace_bytes) return cudaErrorInvalidValue;
  cudaError_t err = CountExpertsOn(expert_ids, n, table.experts, w.counts, check, stream);
  if (err != cudaSuccess) return err;
  err = cudaMemsetAsync(send_counts, 0, static_cast<size_t>(table.ranks) * sizeof(int64_t), stream);
  if (err != cudaSuccess) return err;
  CheckPlan<<<Blocks(table.experts), kThreads, 0, stream>>>(table, w.counts, check);
  if (n == 0) return cudaGetLastError();
  size_t temp = w.temp_bytes;
  err = cub::DeviceScan::ExclusiveSum(w.temp, temp, w.counts, w.starts, table.experts, stream);
  if (err != cudaSuccess) return err;
  const int items = static_cast<int>(n);
  ExpertKeys<<<Blocks(n), kThreads, 0, stream>>>(expert_ids, n, table.experts, w.keys, w.iota);
  temp = w.temp_bytes;
  err = cub::DeviceRadixSort::SortPairs(w.temp, temp, w.keys, w.sorted_keys, w.iota, w.by_key, items, 0,
                                        BitsFor(static_cast<uint32_t>(table.experts) + 1), stream);
  if (err != cudaSuccess) return err;
  // w.keys is free again: it takes the virtual ids, the second sort's keys.
  Place<<<Blocks(n), kThreads, 0, stream>>>(table, n, w.sorted_keys, w.by_key, w.starts, virtual_expert, dest_rank,
                                            w.keys);
  CountSends<<<Blocks(n), kThreads, static_cast<size_t>(table.ranks) * sizeof(unsigned int), stream>>>(
      dest_rank, n, table.ranks, reinterpret_cast<unsigned long long*>(send_counts));
  temp = w.temp_bytes;
  err = cub::DeviceRadixSort::SortPairs(w.temp, temp, w.keys, w.sorted_keys, w.iota, order, items, 0,
                                        BitsFor(static_cast<uint32_t>(VirtualExperts(table)) + 1), stream);
  if (err != cudaSuccess) return err;
  return cudaGetLastError();
}

}  // namespace taot::kernels
