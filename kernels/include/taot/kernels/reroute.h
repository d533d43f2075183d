// One layer's routing on the rank that routed the pairs: the expert histogram the planner needs
// (CountExperts) and, under a plan's RouteTable, every pair's destination (Reroute).
//
// Each operation has a CPU reference and a CUDA launcher with the same arguments and the same
// results, bit for bit (DeepEP style: raw pointers, sizes, a workspace, a stream). Neither
// allocates: the caller sizes one workspace per layer shape (RerouteWorkspaceBytes) and keeps it,
// so the launchers can be captured in a CUDA graph. Bad input is reported in RouteCheck, never
// by a crash; outputs are unspecified where it reports an error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "taot/kernels/route_table.h"

#if TAOT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace taot::kernels {

struct RouteCheck {
  int64_t first_bad_pair;      // the lowest pair index whose expert id is outside [0, E), or n
  int32_t first_short_expert;  // the lowest expert whose guests the table gives more pairs than
                               // this rank routes to it (a plan made from other counts), or E
};

// counts[e] = the number of pairs i < n with ids[i] == e, for e < experts (ids as the router
// writes them: int32 or int64, one per (token, choice), any order). Out-of-range ids are not
// counted; check->first_bad_pair names the first.
void CountExpertsCpu(const int32_t* ids, int64_t n, int32_t experts, int64_t* counts, RouteCheck* check);
void CountExpertsCpu(const int64_t* ids, int64_t n, int32_t experts, int64_t* counts, RouteCheck* check);

// Bytes of workspace Reroute needs for up to n pairs under tables of this shape.
size_t RerouteWorkspaceBytes(int64_t n, const RouteTable& table);

// For each pair i with expert expert_ids[i]: virtual_expert[i] (where it is computed:
// VirtualIdOfPair, the k-th pair of its expert in index order), dest_rank[i] (its rank); the
// pairs sent to each rank, send_counts[R] (this rank's own included); and order[n], the stable
// permutation that sorts the pairs by virtual expert id (by destination, then local expert, then
// index): pair order[p] is p-th in the send buffer. check: as CountExperts, plus the plan check.
void RerouteCpu(const int32_t* expert_ids, int64_t n, const RouteTable& table, int32_t* virtual_expert,
                int32_t* dest_rank, int64_t* send_counts, int64_t* order, void* workspace, RouteCheck* check);

#if TAOT_WITH_CUDA
// The same on `stream`, every pointer in device memory (check too: read it after the stream).
cudaError_t CountExpertsCuda(const int32_t* ids, int64_t n, int32_t experts, int64_t* counts, RouteCheck* check,
                             cudaStream_t stream);
cudaError_t CountExpertsCuda(const int64_t* ids, int64_t n, int32_t experts, int64_t* counts, RouteCheck* check,
                             cudaStream_t stream);
size_t RerouteCudaWorkspaceBytes(int64_t n, const RouteTable& table);
cudaError_t RerouteCuda(const int32_t* expert_ids, int64_t n, const RouteTable& table, int32_t* virtual_expert,
                        int32_t* dest_rank, int64_t* send_counts, int64_t* order, void* workspace,
                        size_t workspace_bytes, RouteCheck* check, cudaStream_t stream);
#endif

}  // namespace taot::kernels
