// taot-block: a planner written once for the CPU and the GPU (docs/planners.md, "taot-block"). A
// layer is planned by one CUDA thread block; the CPU build runs the same code as a block of one
// thread, and is the reference the tests always run. Every decision is integer arithmetic on the
// loads and on fixed-point costs, and the parallel parts are integer sums (the same whatever the
// thread count), so a device gives the CPU's plan bit for bit.
//
// The method, each step cheap enough for one block:
// 0. Nodes that cannot take their own surplus send it out first, their biggest experts in as few
//    cross-node pieces as chains allow (a chain: one cross-node piece to a receiver, which sheds
//    its own experts into its node-mates' room: one inter-node transfer and cheap intra-node ones
//    instead of one inter-node transfer per rank, what a burst needs).
// 1. Inside each node, hot ranks (by surplus, largest first) shed their biggest experts into
//    node-mates' room: a piece that finishes the surplus goes to the tightest room it fits,
//    otherwise to the roomiest.
// 2. What is left crosses nodes: for each hot rank's biggest expert, direct pieces into the
//    roomiest ranks of other nodes or a chain, the cheaper per token covered. A rank still over
//    the cap then relays the rest to a rank with a free slot that sheds as much of its own into
//    rooms already holding its experts (with few slots, the rooms the last pieces part-filled).
// A layer is placed by several trials of these steps (Trial: with or without step 0, whole
//    surpluses first for few slots, direct pieces only), side by side on a device (one per warp,
//    each in its own part of the scratch), and the cheapest plan that meets the cap is kept
//    (else the one with the lowest most load). Then:
// 3. Every replica's tokens are taken from its sources nearest first: the guest itself, its
//    node, then the rest, the home's own tokens last.
//
// This header is the algorithm; planner/src/planners/block.cc makes it a registry planner and
// kernels/ launches it on a device (one block per layer).
#pragma once

#include <cstdint>

#ifndef TAOT_HOST_DEVICE
#if defined(__CUDACC__)
#define TAOT_HOST_DEVICE __host__ __device__
#else
#define TAOT_HOST_DEVICE
#endif
#endif

namespace taot::block {

// Costs are fixed point, in 1/kCostScale of a unit, so that comparisons are exact everywhere.
inline constexpr int64_t kCostScale = 1024;

// A job's shape, the same for all its layers.
struct Shape {
  int32_t ranks = 0;                 // R
  int32_t experts = 0;               // E, a multiple of R: expert e's home is e / (E / R)
  int32_t slots = 0;                 // K guest slots per rank
  const int32_t* node_of = nullptr;  // [R], node ids in [0, nodes)
  const int64_t* cost = nullptr;     // [R x R] moving an expert from rank a to rank b, fixed point
  // The ranks by node, in rank order inside each: node n's are by_node[node_start[n] ..
  // node_start[n + 1]) (IndexNodes makes them), so a scan of one node costs its ranks only.
  int32_t nodes = 0;
  const int32_t* by_node = nullptr;     // [R]
  const int32_t* node_start = nullptr;  // [nodes + 1]
};

// Fills by_node and node_start (sized R and R + 1) from node_of; returns the node count.
TAOT_HOST_DEVICE inline int32_t IndexNodes(int32_t ranks, const int32_t* node_of, int32_t* by_node,
                                           int32_t* node_start) {
  int32_t nodes = 0;
  for (int32_t r = 0; r < ranks; ++r) nodes = node_of[r] + 1 > nodes ? node_of[r] + 1 : nodes;
  for (int32_t n = 0; n <= nodes; ++n) node_start[n] = 0;
  for (int32_t r = 0; r < ranks; ++r) ++node_start[node_of[r] + 1];
  for (int32_t n = 0; n < nodes; ++n) node_start[n + 1] += node_start[n];
  for (int32_t r = 0; r < ranks; ++r) by_node[node_start[node_of[r]]++] = r;
  for (int32_t n = nodes; n > 0; --n) node_start[n] = node_start[n - 1];
  node_start[0] = 0;
  return nodes;
}

// The most pieces (replicas) a layer can have, and the most (source, replica) entries of its split
// (each entry finishes a guest's share or a source's tokens: at most R K + R K R of them).
TAOT_HOST_DEVICE inline int64_t MaxPieces(const Shape& s) { return int64_t{s.ranks} * s.slots; }
TAOT_HOST_DEVICE inline int64_t MaxEntries(const Shape& s) { return MaxPieces(s) * (int64_t{s.ranks} + 1); }
// The trials a layer is placed by (Trial), each in its own part of the scratch, so that a
// device runs them side by side, one warp each.
inline constexpr int32_t kTrials = 6;
// int64 words of one trial's part, and of the scratch a layer needs (the expert totals, each
// trial's result, each trial's part); and the int32 words of its pieces' experts and ranks.
TAOT_HOST_DEVICE inline int64_t TrialWords(const Shape& s) {
  return int64_t{s.experts} + 6 * int64_t{s.ranks} + s.experts / s.ranks + 2 * MaxPieces(s);
}
TAOT_HOST_DEVICE inline int64_t ScratchWords(const Shape& s) {
  return int64_t{s.experts} + 3 * kTrials + kTrials * TrialWords(s);
}
TAOT_HOST_DEVICE inline int64_t Scratch32Words(const Shape& s) { return kTrials * 2 * MaxPieces(s); }

// One layer's input, output and scratch (all in the memory of whoever runs it).
struct Layer {
  const int64_t* load = nullptr;  // [R x E]: tokens source s routes to expert e, at s * E + e
  int64_t cap = 0;                // every rank should end with at most this many tokens
  // Replicas already in place (expert, rank pairs, canonical order), at most K on a rank: using
  // one moves no weights. One the plan does not list is dropped.
  const int32_t* resident = nullptr;
  int32_t resident_count = 0;
  // Out: the replicas, by expert then rank: expert, guest rank and the tokens it computes.
  int32_t* piece_expert = nullptr;  // [MaxPieces]
  int32_t* piece_rank = nullptr;
  int64_t* piece_tokens = nullptr;
  // Out: the split, by piece then source: piece index, source rank, tokens.
  int32_t* entry_piece = nullptr;  // [MaxEntries]
  int32_t* entry_source = nullptr;
  int64_t* entry_tokens = nullptr;
  // Out: counts, and the most tokens a rank computes under the plan.
  int32_t* counts = nullptr;  // [2]: pieces, entries
  int64_t* max_load = nullptr;
  int64_t* scratch = nullptr;    // [ScratchWords]
  int32_t* scratch32 = nullptr;  // [Scratch32Words]
};

#if defined(__CUDA_ARCH__)
#define TAOT_BLOCK_SYNC() __syncthreads()
#else
// On the host a block's threads are threads of the process (BlockHostLayer::Plan), each with the
// block's barrier; a block of one thread has none.
struct HostBarrier {
  virtual ~HostBarrier() = default;
  virtual void Wait() = 0;
};
inline thread_local HostBarrier* host_barrier = nullptr;
#define TAOT_BLOCK_SYNC() (::taot::block::host_barrier != nullptr ? ::taot::block::host_barrier->Wait() : (void)0)
#endif

// The ways a layer is placed; PlanLayer keeps the cheapest that meets the cap.
enum class Trial : int32_t {
  kShed,             // steps 1 and 2
  kExportShortfall,  // step 0 first: each node short of room sends out what it lacks
  kExportWhole,      // step 0 first, whole experts (as much as a chain takes): slack to fit in
  kWholeFirst,       // step 1 only where a hot rank's whole surplus fits one room; the rest crosses
                     // nodes, in one piece where one fits (what few slots need), or splits last
  kFresh,            // steps 1 and 2 as if no replica were resident: when they hold slots it needs
  kDirect,           // steps 1 and 2 without chains (which spend slots), each hot rank finished in turn
};

namespace detail {

TAOT_HOST_DEVICE inline int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }

// 128-bit integers (GCC, Clang and nvcc have them; __extension__: not ISO C++).
__extension__ typedef __int128 Wide;

// Compares cost a / covering a with cost b / covering b, exactly: -1, 0 or 1. The cross products
// reach 2^52 tokens x 2^42 of fixed-point cost, so they are taken in 128 bits.
TAOT_HOST_DEVICE inline int PerToken(int64_t cost_a, int64_t covered_a, int64_t cost_b, int64_t covered_b) {
  const Wide x = static_cast<Wide>(cost_a) * covered_b, y = static_cast<Wide>(cost_b) * covered_a;
  return x < y ? -1 : x > y ? 1 : 0;
}

// Sorts v[0, n) so that before(v[i], v[j]) for i < j (a strict total order): a heap sort, with no
// allocation and no recursion, as device code wants.
template <typename Before>
TAOT_HOST_DEVICE inline void HeapSort(int64_t* v, int32_t n, const Before& before) {
  auto sift = [&](int32_t root, int32_t end) {
    while (2 * root + 1 < end) {
      int32_t child = 2 * root + 1;
      if (child + 1 < end && before(v[child], v[child + 1])) ++child;
      if (!before(v[root], v[child])) return;
      const int64_t t = v[root];
      v[root] = v[child];
      v[child] = t;
      root = child;
    }
  };
  for (int32_t i = n / 2 - 1; i >= 0; --i) sift(i, n);
  for (int32_t end = n - 1; end > 0; --end) {
    const int64_t t = v[0];
    v[0] = v[end];
    v[end] = t;
    sift(0, end);
  }
}

// The placement's state over the scratch, used by thread 0 alone.
struct State {
  const Shape& s;
  const Layer& l;
  int64_t* total;       // [E] tokens of expert e
  int64_t* home_left;   // [E] tokens of e its home still computes
  int64_t* load;        // [R] tokens rank r computes
  int64_t* used;        // [R] slots taken
  int64_t* done;        // [R] a rank (or, in step 0, a node) a step is finished with
  int64_t* spare;       // [R] a direct cover's candidates; step 3's tokens left per source
  int64_t* slot_piece;  // [R x K] the piece in each taken slot
  int64_t* sim_room;    // [R] a chain's trial: the rooms,
  int64_t* sim_used;    // [R] the slots taken,
  int64_t* sim_left;    // [E / R] and the receiver's experts' tokens at home
  int32_t* pe;          // [R x K] the pieces: expert,
  int32_t* pr;          // [R x K] guest rank,
  int64_t* pt;          // [R x K] and tokens
  int32_t pieces = 0;
  Trial trial = Trial::kShed;

  TAOT_HOST_DEVICE int32_t per_rank() const { return s.experts / s.ranks; }
  TAOT_HOST_DEVICE int32_t home(int32_t e) const { return e / per_rank(); }
  TAOT_HOST_DEVICE int64_t room(int32_t r) const { return l.cap - load[r]; }
  TAOT_HOST_DEVICE int64_t cost(int32_t a, int32_t b) const { return s.cost[int64_t{a} * s.ranks + b]; }
  // What more tokens of e on rank g cost: nothing where g holds e already (resident, or placed
  // by this plan), else moving e's weights from its home.
  TAOT_HOST_DEVICE int64_t transfer(int32_t e, int32_t g) const { return held(g, e) >= 0 ? 0 : cost(home(e), g); }

  // The piece of expert e on rank r, or -1.
  TAOT_HOST_DEVICE int32_t held(int32_t r, int32_t e) const {
    for (int64_t j = 0; j < used[r]; ++j) {
      const auto p = static_cast<int32_t>(slot_piece[int64_t{r} * s.slots + j]);
      if (pe[p] == e) return p;
    }
    return -1;
  }
  TAOT_HOST_DEVICE bool can_take(int32_t r, int32_t e) const {
    return r != home(e) && (used[r] < s.slots || held(r, e) >= 0);
  }
  TAOT_HOST_DEVICE void add(int32_t e, int32_t r, int64_t tokens) {
    int32_t p = held(r, e);
    if (p < 0) {
      p = pieces++;
      pe[p] = e;
      pr[p] = r;
      pt[p] = 0;
      slot_piece[int64_t{r} * s.slots + used[r]++] = p;
    }
    pt[p] += tokens;
    home_left[e] -= tokens;
    load[home(e)] -= tokens;
    load[r] += tokens;
  }
  // Rank h's expert with the most tokens still at home (the lowest on ties), or -1.
  TAOT_HOST_DEVICE int32_t biggest(int32_t h) const {
    int32_t best = -1;
    for (int32_t e = h * per_rank(); e < (h + 1) * per_rank(); ++e) {
      if (home_left[e] > 0 && (best < 0 || home_left[e] > home_left[best])) best = e;
    }
    return best;
  }
  // The rank over the cap with the most surplus among those not done (the lowest on ties), or -1.
  TAOT_HOST_DEVICE int32_t hottest() const {
    int32_t best = -1;
    for (int32_t r = 0; r < s.ranks; ++r) {
      if (done[r] == 0 && room(r) < 0 && (best < 0 || room(r) < room(best))) best = r;
    }
    return best;
  }

  // Rank h's surplus into the room of ranks that already hold one of its experts (resident
  // replicas, or pieces this plan placed): it moves no weights. Pieces in the order placed.
  TAOT_HOST_DEVICE int64_t use_held(int32_t h) {
    int64_t moved = 0;
    for (int32_t p = 0; p < pieces && room(h) < 0; ++p) {
      const int32_t e = pe[p], g = pr[p];
      if (home(e) != h || room(g) <= 0 || home_left[e] <= 0) continue;
      const int64_t tokens = Min(Min(-room(h), home_left[e]), room(g));
      add(e, g, tokens);
      moved += tokens;
    }
    return moved;
  }

  // Rank h sheds into the room of node n's other ranks until it is under the cap or nothing fits:
  // first where its experts are held already (use_held), then its biggest experts, a piece that
  // finishes the expert's share into the tightest room that holds it, otherwise the roomiest.
  // Returns the tokens moved.
  TAOT_HOST_DEVICE int64_t shed_inside(int32_t h, int32_t n, bool whole_only = false) {
    int64_t moved = use_held(h);
    while (room(h) < 0) {
      const int32_t e = biggest(h);
      if (e < 0) break;
      const int64_t want = Min(-room(h), home_left[e]);
      // Only one piece that takes the whole surplus, or nothing (a split would spend slots).
      if (whole_only && want < -room(h)) break;
      // Ranks that hold e already (resident, or placed by this plan) take more for nothing: they
      // come first, the tightest that fits, else the roomiest; then the others the same way.
      int32_t fit[2] = {-1, -1}, roomiest[2] = {-1, -1};
      for (int32_t i = s.node_start[n]; i < s.node_start[n + 1]; ++i) {
        const int32_t g = s.by_node[i];
        if (g == h || room(g) <= 0 || !can_take(g, e)) continue;
        const int k = held(g, e) >= 0 ? 0 : 1;
        if (room(g) >= want && (fit[k] < 0 || room(g) < room(fit[k]))) fit[k] = g;
        if (roomiest[k] < 0 || room(g) > room(roomiest[k])) roomiest[k] = g;
      }
      const int32_t g = fit[0] >= 0        ? fit[0]
                        : roomiest[0] >= 0 ? roomiest[0]
                        : fit[1] >= 0      ? fit[1]
                        : whole_only       ? -1
                                           : roomiest[1];
      if (g < 0) break;
      // whole_only fills the room it takes (as much of e as it holds): the slot is spent either
      // way, and what h sheds beyond its surplus is room a node-mate can shed into.
      const int64_t tokens = whole_only ? Min(home_left[e], room(g)) : Min(want, room(g));
      add(e, g, tokens);
      moved += tokens;
    }
    return moved;
  }

  // Off-node ranks that can take e, roomiest first, until `want` is covered: their count, cost
  // and the tokens they cover (spare[] marks the ones chosen). Returns the first chosen, or -1.
  TAOT_HOST_DEVICE int32_t direct_cover(int32_t h, int32_t e, int64_t want, int64_t* cost_out, int64_t* covered) {
    // The candidates, roomiest first (then cheaper, then lower): the order the cover takes them
    // in until one holds the rest whole. Sorted once, so a burst's long cover costs n log n.
    int32_t n = 0;
    for (int32_t g = 0; g < s.ranks; ++g) {
      if (s.node_of[g] != s.node_of[h] && room(g) > 0 && can_take(g, e)) spare[n++] = g;
    }
    auto before = [&](int64_t a, int64_t b) {
      const auto x = static_cast<int32_t>(a), y = static_cast<int32_t>(b);
      if (room(x) != room(y)) return room(x) > room(y);
      if (transfer(e, x) != transfer(e, y)) return transfer(e, x) < transfer(e, y);
      return x < y;
    };
    HeapSort(spare, n, before);
    int32_t first = -1;
    *cost_out = 0;
    *covered = 0;
    for (int32_t i = 0; i < n && *covered < want; ++i) {
      const int64_t rest = want - *covered;
      auto g = static_cast<int32_t>(spare[i]);
      if (room(g) >= rest) {
        // The rest fits whole: the cheapest of the rooms that hold it, then the tightest.
        for (int32_t k = i + 1; k < n && room(static_cast<int32_t>(spare[k])) >= rest; ++k) {
          const auto f = static_cast<int32_t>(spare[k]);
          if (transfer(e, f) < transfer(e, g) ||
              (transfer(e, f) == transfer(e, g) && (room(f) < room(g) || (room(f) == room(g) && f < g))))
            g = f;
        }
      }
      if (first < 0) first = g;
      *cost_out += transfer(e, g);
      *covered += Min(room(g), rest);
    }
    return first;
  }

  // What shedding b into its node-mates' room makes room for once b takes `extra` more tokens,
  // tried on copies: the tokens of `extra` covered, and the cost of the pieces. An estimate of
  // shed_inside(b, node of b), which may choose other rooms (it first uses ranks that hold b's
  // experts already); what the real shed leaves over the cap, step 2 sheds later.
  TAOT_HOST_DEVICE int64_t try_shed(int32_t b, int64_t extra, int64_t* cost_out) {
    const int32_t n = s.node_of[b], first = b * per_rank();
    for (int32_t i = s.node_start[n]; i < s.node_start[n + 1]; ++i) {
      const int32_t g = s.by_node[i];
      sim_room[g] = room(g);
      sim_used[g] = used[g];
    }
    for (int32_t x = 0; x < per_rank(); ++x) sim_left[x] = home_left[first + x];
    int64_t over = extra - room(b);
    *cost_out = 0;
    while (over > 0) {
      int32_t x = -1;
      for (int32_t y = 0; y < per_rank(); ++y) {
        if (sim_left[y] > 0 && (x < 0 || sim_left[y] > sim_left[x])) x = y;
      }
      if (x < 0) break;
      const int64_t want = Min(over, sim_left[x]);
      int32_t fit = -1, roomiest = -1;
      for (int32_t i = s.node_start[n]; i < s.node_start[n + 1]; ++i) {
        const int32_t g = s.by_node[i];
        if (g == b || sim_room[g] <= 0) continue;
        if (sim_used[g] >= s.slots && held(g, first + x) < 0) continue;
        if (sim_room[g] >= want && (fit < 0 || sim_room[g] < sim_room[fit])) fit = g;
        if (roomiest < 0 || sim_room[g] > sim_room[roomiest]) roomiest = g;
      }
      const int32_t g = fit >= 0 ? fit : roomiest;
      if (g < 0) break;
      const int64_t tokens = Min(want, sim_room[g]);
      sim_room[g] -= tokens;
      sim_used[g] += 1;
      sim_left[x] -= tokens;
      over -= tokens;
      *cost_out += transfer(first + x, g);
    }
    return over > 0 ? extra - over : extra;
  }

  // A chain: a receiver takes a piece and sheds its own experts into its node-mates' room.
  struct Chain {
    int32_t receiver = -1;
    int64_t cost = 0, covered = 0;
  };

  // Weighs the chain into node n, whose roomiest rank that can take e receives up to `amount` of
  // it, against `best`: the cheaper per token covered wins, then the one that
  // covers more, then the lower receiver.
  TAOT_HOST_DEVICE void weigh_chain(int32_t n, int32_t e, int64_t amount, Chain& best) {
    int32_t b = -1;
    for (int32_t i = s.node_start[n]; i < s.node_start[n + 1]; ++i) {
      const int32_t g = s.by_node[i];
      if (can_take(g, e) && (b < 0 || room(g) > room(b))) b = g;
    }
    if (b < 0) return;
    int64_t shed_cost = 0;
    const int64_t cover = try_shed(b, amount, &shed_cost);
    if (cover <= 0) return;
    const int64_t c = transfer(e, b) + shed_cost;
    const int order = PerToken(c, cover, best.cost, best.covered);
    if (best.receiver < 0 || order < 0 ||
        (order == 0 && (cover > best.covered || (cover == best.covered && b < best.receiver)))) {
      best = {b, c, cover};
    }
  }

  // One step across nodes for hot rank h: the cheaper per token of direct pieces and a chain.
  // Returns whether anything moved.
  TAOT_HOST_DEVICE bool cross_once(int32_t h) {
    if (use_held(h) > 0) return true;
    const int32_t e = biggest(h);
    if (e < 0) return false;
    const int64_t want = Min(-room(h), home_left[e]);
    int64_t direct_cost = 0, direct_covered = 0;
    const int32_t direct = direct_cover(h, e, want, &direct_cost, &direct_covered);
    Chain best;
    for (int32_t n = 0; n < s.nodes && trial != Trial::kDirect; ++n) {
      if (n != s.node_of[h]) weigh_chain(n, e, want, best);
    }
    const int32_t receiver = best.receiver;
    const int64_t chain_cost = best.cost, chain_covered = best.covered;
    // kWholeFirst takes a direct piece that holds all of `want` over any chain (one slot).
    const bool whole = trial == Trial::kWholeFirst && direct >= 0 && room(direct) >= want;
    const bool chain =
        !whole && receiver >= 0 && (direct < 0 || PerToken(chain_cost, chain_covered, direct_cost, direct_covered) < 0);
    if (chain) {
      add(e, receiver, chain_covered);
      shed_inside(receiver, s.node_of[receiver]);
      return true;
    }
    if (direct < 0) return false;
    add(e, direct, Min(want, room(direct)));
    return true;
  }

  // A relay for hot rank h that step 2 left over the cap (every room that could take its expert
  // is spent or too small: with few slots, the part-filled rooms of the last pieces): rank m with
  // a free slot takes the rest of h's expert and sheds as much of its own into rooms that already
  // hold its experts (use_held), for one piece more. The cheapest m whose room and held rooms hold
  // it all (the lower on ties). Returns whether it moved.
  TAOT_HOST_DEVICE bool relay(int32_t h) {
    const int32_t e = biggest(h);
    if (e < 0 || home_left[e] < -room(h)) return false;
    const int64_t want = -room(h);
    // spare[m]: what m can shed with no slot, the rooms of the ranks holding its experts (one
    // pass over the pieces for all m).
    for (int32_t m = 0; m < s.ranks; ++m) spare[m] = 0;
    for (int32_t p = 0; p < pieces; ++p) {
      const int32_t x = pe[p], g = pr[p];
      if (room(g) > 0 && home_left[x] > 0) spare[home(x)] += Min(room(g), home_left[x]);
    }
    int32_t best = -1;
    for (int32_t m = 0; m < s.ranks; ++m) {
      if (m == h || !can_take(m, e) || room(m) + spare[m] < want) continue;
      if (best < 0 || transfer(e, m) < transfer(e, best)) best = m;
    }
    if (best < 0) return false;
    add(e, best, want);
    use_held(best);
    return true;
  }

  // Room minus surplus over node n's ranks: what the node can take in once its own hot ranks are
  // under the cap (negative: what it must send out).
  TAOT_HOST_DEVICE int64_t node_net(int32_t n) const {
    int64_t net = 0;
    for (int32_t i = s.node_start[n]; i < s.node_start[n + 1]; ++i) net += room(s.by_node[i]);
    return net;
  }

  // One export out of node x, `deficit` tokens short of room: its biggest expert goes, as much of
  // it as one chain takes, to the node where that is cheapest per token (a receiver, its roomiest
  // rank, sheds what overflows into its node-mates). Returns whether anything moved.
  TAOT_HOST_DEVICE bool export_once(int32_t x, int64_t deficit) {
    int32_t e = -1;
    for (int32_t i = s.node_start[x]; i < s.node_start[x + 1]; ++i) {
      const int32_t r = biggest(s.by_node[i]);
      if (r >= 0 && (e < 0 || home_left[r] > home_left[e] || (home_left[r] == home_left[e] && r < e))) e = r;
    }
    if (e < 0) return false;
    Chain best;
    const int64_t limit = trial == Trial::kExportWhole ? home_left[e] : Min(home_left[e], deficit);
    for (int32_t n = 0; n < s.nodes; ++n) {
      const int64_t net = n == x ? 0 : node_net(n);
      if (net > 0) weigh_chain(n, e, Min(limit, net), best);
    }
    if (best.receiver < 0) return false;
    add(e, best.receiver, best.covered);
    shed_inside(best.receiver, s.node_of[best.receiver]);
    return true;
  }

  // Step 0: the nodes that cannot take their own surplus send it out, the shortest first, in as
  // few cross-node pieces as chains allow (the hot ranks then shed into the room this leaves).
  TAOT_HOST_DEVICE void export_nodes() {
    for (int32_t n = 0; n < s.nodes; ++n) done[n] = 0;
    while (true) {
      int32_t x = -1;
      int64_t most = 0;
      for (int32_t n = 0; n < s.nodes; ++n) {
        const int64_t short_by = -node_net(n);
        if (done[n] == 0 && short_by > most) {
          x = n;
          most = short_by;
        }
      }
      if (x < 0) break;
      if (!export_once(x, most)) done[x] = 1;
    }
    for (int32_t r = 0; r < s.ranks; ++r) done[r] = 0;
  }

  // Every expert back home, no piece.
  TAOT_HOST_DEVICE void reset() {
    for (int32_t r = 0; r < s.ranks; ++r) {
      int64_t sum = 0;
      for (int32_t e = r * per_rank(); e < (r + 1) * per_rank(); ++e) {
        home_left[e] = total[e];
        sum += total[e];
      }
      load[r] = sum;
      used[r] = 0;
      done[r] = 0;
    }
    pieces = 0;
    // The resident replicas first, as pieces holding no tokens yet (not in kFresh, for when they
    // hold slots the plan needs); those still empty at the end are dropped.
    for (int32_t i = 0; i < l.resident_count && trial != Trial::kFresh; ++i) {
      const int32_t e = l.resident[2 * i], r = l.resident[2 * i + 1];
      if (e < 0 || e >= s.experts || r < 0 || r >= s.ranks || r == home(e) || used[r] >= s.slots || held(r, e) >= 0) {
        continue;
      }
      pe[pieces] = e;
      pr[pieces] = r;
      pt[pieces] = 0;
      slot_piece[int64_t{r} * s.slots + used[r]++] = pieces++;
    }
  }

  // A handoff inside h's node: h's whole surplus goes in one piece to a node-mate m (a hot one
  // too: its slots are otherwise idle) that first sheds as much of its own biggest expert into a
  // room that holds it whole. Two pieces, as a split would be, but on slots a split cannot use.
  // The first mate (by rank) that works, with its tightest room. Returns whether it moved.
  TAOT_HOST_DEVICE bool hand_off(int32_t h) {
    const int32_t e = biggest(h), n = s.node_of[h];
    if (e < 0 || home_left[e] < -room(h)) return false;
    const int64_t surplus = -room(h);
    for (int32_t i = s.node_start[n]; i < s.node_start[n + 1]; ++i) {
      const int32_t m = s.by_node[i];
      if (m == h || !can_take(m, e)) continue;
      const int64_t need = surplus - (room(m) > 0 ? room(m) : 0);
      const int32_t x = biggest(m);
      if (need <= 0 || x < 0 || home_left[x] < need) continue;
      int32_t fit = -1;
      for (int32_t j = s.node_start[n]; j < s.node_start[n + 1]; ++j) {
        const int32_t g = s.by_node[j];
        if (g == h || g == m || room(g) < need || !can_take(g, x)) continue;
        if (fit < 0 || room(g) < room(fit)) fit = g;
      }
      if (fit < 0) continue;
      add(x, fit, need);
      add(e, m, surplus);
      return true;
    }
    return false;
  }

  // Step 1 over every hot rank, the hottest first; whole_only: a rank whose whole surplus fits no
  // room tries a handoff, else waits for step 2.
  TAOT_HOST_DEVICE void shed_inside_all(bool whole_only) {
    for (int32_t h = hottest(); h >= 0; h = hottest()) {
      shed_inside(h, s.node_of[h], whole_only);
      if (whole_only && room(h) < 0) hand_off(h);
      done[h] = 1;
    }
    for (int32_t r = 0; r < s.ranks; ++r) done[r] = 0;
  }

  // The transfer cost of the pieces placed.
  TAOT_HOST_DEVICE int64_t placed_cost() const {
    int64_t sum = 0;
    for (int32_t p = 0; p < pieces; ++p) {
      if (!resident(pe[p], pr[p])) sum += cost(home(pe[p]), pr[p]);
    }
    return sum;
  }

  // Whether (e, r) is a resident replica (the list is canonical: a binary search).
  TAOT_HOST_DEVICE bool resident(int32_t e, int32_t r) const {
    int32_t lo = 0, hi = l.resident_count;
    while (lo < hi) {
      const int32_t mid = lo + (hi - lo) / 2;
      const int32_t me = l.resident[2 * mid], mr = l.resident[2 * mid + 1];
      if (me == e && mr == r) return true;
      if (me < e || (me == e && mr < r)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return false;
  }

  // Steps (0,) 1 and 2 of `trial` from every expert at home. Returns the most tokens a rank computes.
  TAOT_HOST_DEVICE int64_t place() {
    reset();
    if (s.slots > 0) {
      if (trial == Trial::kExportShortfall || trial == Trial::kExportWhole) export_nodes();
      // Step 1: inside the nodes, the hottest rank first (kWholeFirst: only whole surpluses).
      shed_inside_all(trial == Trial::kWholeFirst);
      // Step 2: across nodes, the hottest rank first, until every rank is under the cap or stuck.
      // kDirect finishes each rank before the next, so that the roomiest ranks go to one hot rank
      // whole and only its last piece leaves a room part-filled (with one slot, that room is lost).
      for (int32_t h = hottest(); h >= 0; h = hottest()) {
        bool moved = cross_once(h);
        while (trial == Trial::kDirect && moved && room(h) < 0) moved = cross_once(h);
        if (!moved) done[h] = 1;
      }
      for (int32_t r = 0; r < s.ranks; ++r) done[r] = 0;
      // What crossing left, inside the nodes after all; then relays for what is still over.
      if (trial == Trial::kWholeFirst) shed_inside_all(false);
      for (int32_t r = 0; r < s.ranks; ++r) {
        if (room(r) < 0) relay(r);
      }
    }
    int64_t most = 0;
    for (int32_t r = 0; r < s.ranks; ++r) most = load[r] > most ? load[r] : most;
    return most;
  }
};

// Sorts the pieces by (expert, rank): a few hundred at most, so insertion sort.
TAOT_HOST_DEVICE inline void SortPieces(const Layer& l, int32_t pieces) {
  for (int32_t i = 1; i < pieces; ++i) {
    const int32_t e = l.piece_expert[i], r = l.piece_rank[i];
    const int64_t t = l.piece_tokens[i];
    int32_t j = i - 1;
    while (j >= 0 && (l.piece_expert[j] > e || (l.piece_expert[j] == e && l.piece_rank[j] > r))) {
      l.piece_expert[j + 1] = l.piece_expert[j];
      l.piece_rank[j + 1] = l.piece_rank[j];
      l.piece_tokens[j + 1] = l.piece_tokens[j];
      --j;
    }
    l.piece_expert[j + 1] = e;
    l.piece_rank[j + 1] = r;
    l.piece_tokens[j + 1] = t;
  }
}

// Step 3 for the pieces [first, last) of one expert: each guest's tokens from its sources nearest
// first, writing entries from `out`; `left` [R] is the scratch of what each source still has.
// Returns the entries written.
TAOT_HOST_DEVICE inline int32_t SplitExpert(const Shape& s, const Layer& l, int32_t first, int32_t last, int64_t* left,
                                            int32_t out) {
  const int32_t e = l.piece_expert[first], home = e / (s.experts / s.ranks);
  for (int32_t r = 0; r < s.ranks; ++r) left[r] = l.load[int64_t{r} * s.experts + e];
  int32_t written = 0;
  int64_t need = 0;
  auto take = [&](int32_t p, int32_t r) {
    const int64_t tokens = Min(need, left[r]);
    l.entry_piece[out + written] = p;
    l.entry_source[out + written] = r;
    l.entry_tokens[out + written] = tokens;
    ++written;
    left[r] -= tokens;
    need -= tokens;
  };
  // Sources before `cursor` have nothing left, so the scan across nodes starts there.
  int32_t cursor = 0;
  for (int32_t p = first; p < last; ++p) {
    const int32_t g = l.piece_rank[p], n = s.node_of[g];
    need = l.piece_tokens[p];
    // The guest itself; its node; the rest, in rank order; the home last.
    if (left[g] > 0) take(p, g);
    for (int32_t i = s.node_start[n]; i < s.node_start[n + 1] && need > 0; ++i) {
      const int32_t r = s.by_node[i];
      if (r != g && r != home && left[r] > 0) take(p, r);
    }
    while (cursor < s.ranks && left[cursor] == 0) ++cursor;
    for (int32_t r = cursor; r < s.ranks && need > 0; ++r) {
      if (r != home && s.node_of[r] != n && left[r] > 0) take(p, r);
    }
    if (need > 0 && left[home] > 0) take(p, home);
  }
  return written;
}

}  // namespace detail

namespace detail {

// Trial t's state over its parts of the scratch.
TAOT_HOST_DEVICE inline State TrialState(const Shape& s, const Layer& l, int32_t t) {
  const int64_t E = s.experts, R = s.ranks, P = s.experts / s.ranks, K = MaxPieces(s);
  int64_t* w = l.scratch + E + 3 * kTrials + t * TrialWords(s);
  int32_t* w32 = l.scratch32 + 2 * K * t;
  return State{s,
               l,
               l.scratch,
               w,
               w + E,
               w + E + R,
               w + E + 2 * R,
               w + E + 3 * R,
               w + E + 4 * R,
               w + E + 4 * R + K,
               w + E + 5 * R + K,
               w + E + 6 * R + K,
               w32,
               w32 + K,
               w + E + 6 * R + K + P};
}

}  // namespace detail

// Plans one layer. Call it from every thread of a block (tid in [0, threads)) with the same
// arguments; on the CPU, once with tid 0 and threads 1.
TAOT_HOST_DEVICE inline void PlanLayer(const Shape& s, const Layer& l, int tid, int threads) {
  int64_t* total = l.scratch;
  int64_t* result = l.scratch + s.experts;  // per trial: most load, cost, pieces (-1: not run)
  // Expert totals: integer sums, the same in any order. Rows outer: on a device the threads read
  // a row's consecutive entries (coalesced), on the CPU the rows stream through the cache.
  for (int32_t e = tid; e < s.experts; e += threads) total[e] = 0;
  for (int32_t r = 0; r < s.ranks; ++r) {
    const int64_t* row = l.load + int64_t{r} * s.experts;
    for (int32_t e = tid; e < s.experts; e += threads) total[e] += row[e];
  }
  TAOT_BLOCK_SYNC();
  // The trials, trial t by thread 32 t (the first of a warp) where the block has it, else by the
  // thread 32 t wraps to. The fallback kFresh counts only where no trial before it met the cap, so
  // a thread skips it after a trial of its own met it, and runs only with resident replicas.
  const Trial trials[kTrials] = {Trial::kShed,       Trial::kExportShortfall, Trial::kExportWhole,
                                 Trial::kWholeFirst, Trial::kFresh,           Trial::kDirect};
  bool met_before = false;  // a trial this thread ran met the cap: kFresh after it would not count
  for (int32_t t = 0; t < kTrials; ++t) {
    if ((t * 32) % threads != tid) continue;
    result[3 * t + 2] = -1;
    if (trials[t] == Trial::kFresh && (met_before || l.resident_count == 0)) continue;
    detail::State st = detail::TrialState(s, l, t);
    st.trial = trials[t];
    result[3 * t] = st.place();
    result[3 * t + 1] = st.placed_cost();
    result[3 * t + 2] = st.pieces;
    met_before = met_before || result[3 * t] <= l.cap;
  }
  TAOT_BLOCK_SYNC();
  if (tid == 0) {
    // The cheapest trial that meets the cap (else the lowest most load, then the cheapest; ties
    // to the earlier); kFresh only when none before it met it.
    int32_t kept = -1;
    for (int32_t t = 0; t < kTrials; ++t) {
      if (result[3 * t + 2] < 0) continue;
      const int64_t most = result[3 * t], cost = result[3 * t + 1];
      const bool met = most <= l.cap, kept_met = kept >= 0 && result[3 * kept] <= l.cap;
      if (trials[t] == Trial::kFresh && kept_met) continue;
      const int64_t kept_most = kept >= 0 ? result[3 * kept] : 0, kept_cost = kept >= 0 ? result[3 * kept + 1] : 0;
      const bool better =
          kept < 0 || (met && !kept_met) ||
          (met == kept_met && (met ? cost < kept_cost : most < kept_most || (most == kept_most && cost < kept_cost)));
      if (better) kept = t;
    }
    const detail::State st = detail::TrialState(s, l, kept);
    int32_t pieces = 0;
    for (int64_t p = 0; p < result[3 * kept + 2]; ++p) {
      if (st.pt[p] == 0) continue;  // a resident replica this plan does not use
      l.piece_expert[pieces] = st.pe[p];
      l.piece_rank[pieces] = st.pr[p];
      l.piece_tokens[pieces] = st.pt[p];
      ++pieces;
    }
    detail::SortPieces(l, pieces);
    *l.max_load = result[3 * kept];
    l.counts[0] = pieces;
  }
  TAOT_BLOCK_SYNC();
  // Step 3, expert by expert (thread 0: entries go out in piece order), its scratch trial 0's.
  if (tid == 0) {
    int64_t* left = detail::TrialState(s, l, 0).spare;
    int32_t entries = 0;
    for (int32_t first = 0; first < l.counts[0];) {
      int32_t last = first + 1;
      while (last < l.counts[0] && l.piece_expert[last] == l.piece_expert[first]) ++last;
      entries += detail::SplitExpert(s, l, first, last, left, entries);
      first = last;
    }
    l.counts[1] = entries;
  }
  TAOT_BLOCK_SYNC();
}

}  // namespace taot::block
