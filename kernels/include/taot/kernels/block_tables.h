// A source rank's reroute tables (route_table.h) from a taot-block plan (the outputs of
// taot/planner/block_planner.h's PlanLayer), made where the plan is: on the host, the same tables
// the client builds from a Plan (RerouteTable::For); on a device, next to a plan made there, so
// that the reroute kernel reads them with no copy to or from the host.
#pragma once

#include <cstdint>

#include "taot/kernels/route_table.h"
#include "taot/planner/block_planner.h"

#if TAOT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace taot::kernels {

// Where the tables go: guest_begin has E + 1 entries, the other three one per (expert, guest) the
// source sends to (at most the plan's pieces, block::MaxPieces); `guests` receives their count.
struct RouteArrays {
  int32_t* guest_begin = nullptr;
  int32_t* guest_rank = nullptr;
  int64_t* pair_end = nullptr;
  int32_t* virtual_id = nullptr;
  int32_t* guests = nullptr;
};

// Source `rank`'s tables under the plan in `plan` (its pieces by expert then guest, its entries
// by piece). A guest's slots are its replicas in expert order (replica_moves.h numbers them the
// same way). `slot_scratch` holds R words.
TAOT_HOST_DEVICE inline void BlockRouteTable(const block::Shape& s, const block::Layer& plan, int32_t rank,
                                             const RouteArrays& out, int32_t* slot_scratch) {
  const int32_t per_rank = s.experts / s.ranks, local = per_rank + s.slots;
  for (int32_t e = 0; e <= s.experts; ++e) out.guest_begin[e] = 0;
  for (int32_t r = 0; r < s.ranks; ++r) slot_scratch[r] = 0;
  int32_t guests = 0;
  int32_t entry = 0;
  for (int32_t p = 0; p < plan.counts[0]; ++p) {
    const int32_t e = plan.piece_expert[p], g = plan.piece_rank[p], slot = slot_scratch[g]++;
    // The piece's entries follow one another; this source's, if any, is one of them.
    int64_t tokens = 0;
    for (; entry < plan.counts[1] && plan.entry_piece[entry] == p; ++entry) {
      if (plan.entry_source[entry] == rank) tokens = plan.entry_tokens[entry];
    }
    if (tokens == 0) continue;
    const bool first_of_expert = guests == 0 || out.guest_begin[e + 1] == 0;
    out.guest_rank[guests] = g;
    out.pair_end[guests] = (first_of_expert ? 0 : out.pair_end[guests - 1]) + tokens;
    out.virtual_id[guests] = g * local + per_rank + slot;
    ++out.guest_begin[e + 1];
    ++guests;
  }
  for (int32_t e = 0; e < s.experts; ++e) out.guest_begin[e + 1] += out.guest_begin[e];
  *out.guests = guests;
}

#if TAOT_WITH_CUDA
// The same for `count` layers on `stream` (block i: layers[i] into outs[i]); every pointer device
// memory, `slot_scratch` R words per layer. cudaErrorInvalidValue for count < 0.
cudaError_t BlockRouteTablesCuda(const block::Shape& shape, const block::Layer* layers, int32_t count, int32_t rank,
                                 const RouteArrays* outs, int32_t* slot_scratch, cudaStream_t stream);
#endif

}  // namespace taot::kernels
