// The port keeps the peer's arithmetic: the weights are float32 (rebalance_experts calls
// weight.float()), per-copy loads are float32 quotients, pack loads float32 running sums in the
// peer's order. Where torch decides an order, the same rule is used here:
// - Tensor.sort(descending=True) is not stable; on CPU, PyTorch 1.13 sorts the (value, index)
//   pairs with std::sort under "value greater", so ties between equal weights (every copy of one
//   expert weighs the same) come out in libstdc++'s introsort order. SortDescending runs the same
//   std::sort on the same pairs in the same start order, and so gets the same permutation.
// - Tensor.max(dim).indices returns the first maximum; Python's min(key=...) the first minimum.
// - Group sums are float32 sums in ATen's cascade order (TorchSum), as weight.unflatten().sum(-1).
#include "planners/eplb_rebalance.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "planners/torch_float_order.h"

namespace taot::planners {
namespace {

struct Packing {
  std::vector<int> pack;          // per item
  std::vector<int> rank_in_pack;  // per item: its place in its pack
};

std::vector<int> SortDescending(const std::vector<float>& weight) {
  std::vector<std::pair<float, int>> pairs;
  pairs.reserve(weight.size());
  for (int i = 0; i < static_cast<int>(weight.size()); ++i) pairs.emplace_back(weight[i], i);
  std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<int> order;
  order.reserve(pairs.size());
  for (const auto& [value, index] : pairs) order.push_back(index);
  return order;
}

// balanced_packing: items by weight, heaviest first, each into the lightest pack not yet full.
Packing BalancedPacking(const std::vector<float>& weight, int packs) {
  const int items = static_cast<int>(weight.size());
  const int per_pack = items / packs;
  Packing out{std::vector<int>(weight.size()), std::vector<int>(weight.size(), 0)};
  if (per_pack == 1) {
    std::iota(out.pack.begin(), out.pack.end(), 0);
    return out;
  }
  std::vector<float> pack_weight(static_cast<size_t>(packs), 0.0f);
  std::vector<int> pack_items(static_cast<size_t>(packs), 0);
  for (int item : SortDescending(weight)) {
    int best = -1;
    for (int p = 0; p < packs; ++p) {
      if (pack_items[p] < per_pack && (best < 0 || pack_weight[p] < pack_weight[best])) best = p;
    }
    out.pack[item] = best;
    out.rank_in_pack[item] = pack_items[best]++;
    pack_weight[best] += weight[item];
  }
  return out;
}

struct Replication {
  std::vector<int> phy2log;  // per physical expert
  std::vector<int> rank;     // per physical expert: its copy number
  std::vector<int> count;    // per logical expert
};

// replicate_experts: each extra slot copies the expert with the heaviest load per copy.
Replication ReplicateExperts(const std::vector<float>& weight, int physical) {
  const int logical = static_cast<int>(weight.size());
  Replication out{std::vector<int>(static_cast<size_t>(physical)), std::vector<int>(static_cast<size_t>(physical), 0),
                  std::vector<int>(weight.size(), 1)};
  std::iota(out.phy2log.begin(), out.phy2log.begin() + logical, 0);
  for (int slot = logical; slot < physical; ++slot) {
    int best = 0;
    float best_load = weight[0] / static_cast<float>(out.count[0]);
    for (int e = 1; e < logical; ++e) {
      const float load = weight[e] / static_cast<float>(out.count[e]);
      if (load > best_load) {
        best = e;
        best_load = load;
      }
    }
    out.phy2log[slot] = best;
    out.rank[slot] = out.count[best]++;
  }
  return out;
}

std::vector<int> Inverse(const std::vector<int>& permutation) {
  std::vector<int> inverse(permutation.size());
  for (int i = 0; i < static_cast<int>(permutation.size()); ++i) inverse[permutation[i]] = i;
  return inverse;
}

absl::Status CheckShape(int experts, const EplbShape& s) {
  auto fail = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat("EPLB: ", parts...)); };
  if (experts % s.num_groups != 0) return fail(experts, " experts do not split into ", s.num_groups, " groups");
  if (s.num_groups % s.num_nodes != 0) return fail(s.num_groups, " groups do not split over ", s.num_nodes, " nodes");
  if (s.num_gpus % s.num_nodes != 0) return fail(s.num_gpus, " GPUs do not split over ", s.num_nodes, " nodes");
  if (s.num_replicas % s.num_gpus != 0) return fail(s.num_replicas, " slots do not split over ", s.num_gpus, " GPUs");
  if (s.num_replicas < experts) return fail(s.num_replicas, " slots are fewer than ", experts, " experts");
  return absl::OkStatus();
}

// rebalance_experts_hierarchical for one layer.
absl::StatusOr<EplbLayout> Hierarchical(const std::vector<float>& weight, const EplbShape& s) {
  const int experts = static_cast<int>(weight.size());
  if (absl::Status status = CheckShape(experts, s); !status.ok()) return status;
  const int group_size = experts / s.num_groups;
  const int groups_per_node = s.num_groups / s.num_nodes;
  const int experts_per_node = experts / s.num_nodes;
  const int slots_per_node = s.num_replicas / s.num_nodes;
  const int slots_per_gpu = s.num_replicas / s.num_gpus;

  // Step 1: groups to nodes. "mlog" numbers experts node by node, in the order groups landed.
  std::vector<float> group_weight(static_cast<size_t>(s.num_groups));
  for (int g = 0; g < s.num_groups; ++g) {
    group_weight[g] = TorchSum(std::span(weight).subspan(static_cast<size_t>(g) * group_size, group_size));
  }
  const Packing groups = BalancedPacking(group_weight, s.num_nodes);
  std::vector<int> log2mlog(static_cast<size_t>(experts));
  for (int e = 0; e < experts; ++e) {
    const int g = e / group_size;
    log2mlog[e] = (groups.pack[g] * groups_per_node + groups.rank_in_pack[g]) * group_size + e % group_size;
  }
  const std::vector<int> mlog2log = Inverse(log2mlog);

  EplbLayout out;
  out.slots_per_gpu = slots_per_gpu;
  out.phy2log.resize(static_cast<size_t>(s.num_replicas));
  out.phyrank.resize(static_cast<size_t>(s.num_replicas));
  std::vector<int> mlogcnt(static_cast<size_t>(experts));
  for (int node = 0; node < s.num_nodes; ++node) {
    // Step 2: copies inside the node.
    std::vector<float> node_weight(static_cast<size_t>(experts_per_node));
    for (int j = 0; j < experts_per_node; ++j) node_weight[j] = weight[mlog2log[node * experts_per_node + j]];
    const Replication copies = ReplicateExperts(node_weight, slots_per_node);
    // Step 3: the node's physical experts onto its GPUs, by load per copy.
    std::vector<float> copy_weight(static_cast<size_t>(slots_per_node));
    for (int i = 0; i < slots_per_node; ++i) {
      const int j = copies.phy2log[i];
      copy_weight[i] = node_weight[j] / static_cast<float>(copies.count[j]);
    }
    const Packing gpus = BalancedPacking(copy_weight, s.num_gpus / s.num_nodes);
    std::vector<int> phy2pphy(static_cast<size_t>(slots_per_node));
    for (int i = 0; i < slots_per_node; ++i) phy2pphy[i] = gpus.pack[i] * slots_per_gpu + gpus.rank_in_pack[i];
    const std::vector<int> pphy2phy = Inverse(phy2pphy);
    for (int q = 0; q < slots_per_node; ++q) {
      const int phy = pphy2phy[q];
      out.phy2log[node * slots_per_node + q] = mlog2log[node * experts_per_node + copies.phy2log[phy]];
      out.phyrank[node * slots_per_node + q] = copies.rank[phy];
    }
    for (int j = 0; j < experts_per_node; ++j) mlogcnt[node * experts_per_node + j] = copies.count[j];
  }
  out.logcnt.resize(static_cast<size_t>(experts));
  for (int e = 0; e < experts; ++e) out.logcnt[e] = mlogcnt[log2mlog[e]];
  return out;
}

}  // namespace

absl::StatusOr<EplbLayout> RebalanceExperts(std::span<const int64_t> weight, const EplbShape& shape) {
  if (weight.empty()) return absl::InvalidArgumentError("EPLB: no experts");
  if (shape.num_groups < 1 || shape.num_nodes < 1 || shape.num_gpus < 1) {
    return absl::InvalidArgumentError("EPLB: groups, nodes and GPUs must be >= 1");
  }
  std::vector<float> as_float(weight.size());
  for (size_t e = 0; e < weight.size(); ++e) as_float[e] = static_cast<float>(weight[e]);
  // The peer's own fallback: groups that do not split over the nodes give the global policy.
  if (shape.num_groups % shape.num_nodes == 0) return Hierarchical(as_float, shape);
  return Hierarchical(as_float, {shape.num_replicas, 1, 1, shape.num_gpus});
}

}  // namespace taot::planners
