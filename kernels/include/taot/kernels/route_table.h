// The tables that route one source rank's (token, choice) pairs under a plan, flat and in one
// address space (host memory for the CPU references, device memory for the CUDA launchers), so
// that a layer reroutes with no host round trip once a plan's tables are in place. The client
// builds them once per plan (taot/client/reroute.h); the kernels only read them.
//
// Virtual expert ids: rank r owns the block [r * L, (r + 1) * L) of L = E/R + K ids, its E/R home
// experts in order and then its K guest slots. Rerouted to virtual ids, a stock dispatcher (an
// all-to-all by destination, or DeepEP) works unchanged with L local experts per rank.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TAOT_HOST_DEVICE __host__ __device__
#else
#define TAOT_HOST_DEVICE
#endif

namespace taot::kernels {

struct RouteTable {
  int32_t ranks = 0;    // R
  int32_t experts = 0;  // E, a positive multiple of R
  int32_t slots = 0;    // K, guest slots per rank
  // This source's guests of expert e are [guest_begin[e], guest_begin[e + 1]), in ascending
  // guest rank; guest_begin has E + 1 entries.
  const int32_t* guest_begin = nullptr;
  const int32_t* guest_rank = nullptr;
  // Pairs of e this source sends to its guests up to and including guest j (a running total
  // within e): the k-th pair of e, counted from 0 in the order the pairs come, goes to the first
  // of e's guests j with k < pair_end[j], and home when there is none.
  const int64_t* pair_end = nullptr;
  const int32_t* virtual_id = nullptr;  // guest j's slot, as a virtual expert id
};

TAOT_HOST_DEVICE inline int32_t LocalExperts(const RouteTable& t) { return t.experts / t.ranks + t.slots; }
TAOT_HOST_DEVICE inline int32_t VirtualExperts(const RouteTable& t) { return t.ranks * LocalExperts(t); }
TAOT_HOST_DEVICE inline int32_t HomeOf(const RouteTable& t, int32_t e) { return e / (t.experts / t.ranks); }
TAOT_HOST_DEVICE inline int32_t HomeVirtualId(const RouteTable& t, int32_t e) {
  const int32_t per_rank = t.experts / t.ranks;
  return (e / per_rank) * LocalExperts(t) + e % per_rank;
}

// Where the k-th pair of expert e goes: its virtual expert id (its rank is id / LocalExperts).
TAOT_HOST_DEVICE inline int32_t VirtualIdOfPair(const RouteTable& t, int32_t e, int64_t k) {
  for (int32_t j = t.guest_begin[e]; j < t.guest_begin[e + 1]; ++j) {
    if (k < t.pair_end[j]) return t.virtual_id[j];
  }
  return HomeVirtualId(t, e);
}

}  // namespace taot::kernels
