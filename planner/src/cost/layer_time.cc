#include "taot/planner/layer_time.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

namespace taot {
namespace {

// GB/s to bytes per microsecond.
double BytesPerUs(double gbps) { return gbps * 1e3; }

// Bytes each rank sends and receives on each link class.
struct LinkBytes {
  explicit LinkBytes(int ranks)
      : nvl_send(static_cast<size_t>(ranks)), nvl_recv(nvl_send), ib_send(nvl_send), ib_recv(nvl_send) {}
  std::vector<double> nvl_send, nvl_recv, ib_send, ib_recv;
};

struct Links {
  double nvl_bytes_per_us, ib_bytes_per_us, nvl_latency_us, ib_latency_us;
};

Links LinksOf(const ClusterSpec& cluster) {
  return {BytesPerUs(cluster.nvlink_gbps), BytesPerUs(cluster.ib_gbps_per_gpu()), cluster.nvlink_latency_us,
          cluster.ib_latency_us};
}

// x^k for a small whole k, without libm's general pow (this runs for every source and node).
double IntPow(double x, int k) {
  double result = 1;
  for (; k > 0; k >>= 1, x *= x) {
    if (k & 1) result *= x;
  }
  return result;
}

// copies[s * R + d]: token copies source s sends to rank d with no replication (d == s stays
// local). Experts are laid out home by home: each home's block of the row is summed.
std::vector<double> HomeCopies(const PlanRequest& request) {
  const int R = request.ranks();
  const int per_rank = request.experts_per_rank();
  std::vector<double> copies(static_cast<size_t>(R) * R, 0.0);
  for (int s = 0; s < R; ++s) {
    const std::span<const int64_t> row = request.load.row(s);
    for (int home = 0; home < R; ++home) {
      int64_t sum = 0;
      for (int e = home * per_rank; e < (home + 1) * per_rank; ++e) sum += row[e];
      copies[static_cast<size_t>(s) * R + home] = static_cast<double>(sum);
    }
  }
  return copies;
}

// The copies once the plan's assignments move tokens from homes to guests.
std::vector<double> PlannedCopies(const PlanRequest& request, const Plan& plan, std::vector<double> copies) {
  const int R = request.ranks();
  for (const Assignment& a : plan.assignments) {
    const size_t row = static_cast<size_t>(a.source) * R;
    copies[row + request.home_of(a.expert)] -= static_cast<double>(a.tokens);
    copies[row + a.rank] += static_cast<double>(a.tokens);
  }
  return copies;
}

std::vector<int64_t> ExpertSums(const PlanRequest& request) {
  std::vector<int64_t> totals(static_cast<size_t>(request.experts()), 0);
  for (int s = 0; s < request.ranks(); ++s) {
    const std::span<const int64_t> row = request.load.row(s);
    for (int e = 0; e < request.experts(); ++e) totals[e] += row[e];
  }
  return totals;
}

// Dispatch as DeepEP does it: copies inside the node go over NVLink; a token crosses
// InfiniBand once per destination node (to the rank with the sender's local index there), and
// that rank forwards it over NVLink to every destination rank of its node. Which tokens share
// a node is not in the counts: a source's tokens each pick k experts, so a token reaches node n
// with probability 1 - (1 - p_n)^k, p_n being the share of the source's picks that go to n.
LinkBytes DispatchBytes(const PlanRequest& request, const ModelSpec& model, const std::vector<double>& copies) {
  const Topology& topo = request.topology();
  const int R = request.ranks();
  const double token_bytes = static_cast<double>(model.token_bytes());
  LinkBytes bytes(R);
  for (int s = 0; s < R; ++s) {
    const double* row = &copies[static_cast<size_t>(s) * R];
    double picks = 0;
    for (int d = 0; d < R; ++d) picks += row[d];
    if (picks <= 0) continue;
    const double tokens = picks / model.top_k;
    std::span<const int> own = topo.ranks_of_node(topo.node_of(s));
    const size_t local = static_cast<size_t>(std::find(own.begin(), own.end(), s) - own.begin());
    for (int n = 0; n < topo.nodes(); ++n) {
      std::span<const int> members = topo.ranks_of_node(n);
      if (n == topo.node_of(s)) {
        for (int d : members) {
          if (d == s) continue;
          bytes.nvl_send[s] += row[d] * token_bytes;
          bytes.nvl_recv[d] += row[d] * token_bytes;
        }
        continue;
      }
      double to_node = 0;
      for (int d : members) to_node += row[d];
      if (to_node <= 0) continue;
      const double reached = tokens * (1.0 - IntPow(1.0 - std::min(1.0, to_node / picks), model.top_k));
      const int nic = members[local % members.size()];
      bytes.ib_send[s] += reached * token_bytes;
      bytes.ib_recv[nic] += reached * token_bytes;
      for (int d : members) {
        if (d == nic) continue;
        bytes.nvl_send[nic] += row[d] * token_bytes;
        bytes.nvl_recv[d] += row[d] * token_bytes;
      }
    }
  }
  return bytes;
}

// How long the busiest rank's link takes to carry `bytes`, both link classes in parallel.
double AllToAllUs(const LinkBytes& bytes, const Links& links) {
  double nvl = 0, ib = 0;
  for (size_t r = 0; r < bytes.nvl_send.size(); ++r) {
    nvl = std::max({nvl, bytes.nvl_send[r], bytes.nvl_recv[r]});
    ib = std::max({ib, bytes.ib_send[r], bytes.ib_recv[r]});
  }
  const double nvl_us = nvl > 0 ? nvl / links.nvl_bytes_per_us + links.nvl_latency_us : 0;
  const double ib_us = ib > 0 ? ib / links.ib_bytes_per_us + links.ib_latency_us : 0;
  return std::max(nvl_us, ib_us);
}

// One expert's forward GEMMs (gate, up, down) over n tokens: compute-bound for large n, bound
// by reading the weights from HBM for small n, plus the launch; no GEMM for no tokens.
double GemmUs(const ClusterSpec& cluster, const ModelSpec& model, double n) {
  if (n <= 0) return 0;
  const double compute = n * model.expert_flops_per_token() / (cluster.gemm_tflops * 1e6);
  const double read = static_cast<double>(model.expert_bytes()) / BytesPerUs(cluster.hbm_gbps);
  return std::max(compute, read) + cluster.gemm_launch_us;
}

std::vector<Replica> Sorted(std::vector<Replica> replicas) {
  std::sort(replicas.begin(), replicas.end());
  return replicas;
}

bool Contains(const std::vector<Replica>& sorted, const Replica& replica) {
  return std::binary_search(sorted.begin(), sorted.end(), replica);
}

// Adds one expert's weights moving from `from` to `to` (direct, NIC to NIC across nodes).
void AddWeights(const Topology& topo, double weight_bytes, int from, int to, LinkBytes& bytes) {
  if (topo.same_node(from, to)) {
    bytes.nvl_send[from] += weight_bytes;
    bytes.nvl_recv[to] += weight_bytes;
  } else {
    bytes.ib_send[from] += weight_bytes;
    bytes.ib_recv[to] += weight_bytes;
  }
}

// When each guest rank holds all its new replicas' weights. The transfers start with the
// dispatch and share its links: a transfer ends once the sender has pushed, and the receiver
// taken in, their dispatch bytes and all their weight bytes on that link class.
std::vector<double> WeightArrivalUs(const PlanRequest& request, const Plan& plan, const ModelSpec& model,
                                    const LinkBytes& dispatch, const Links& links) {
  const Topology& topo = request.topology();
  const double weight_bytes = static_cast<double>(model.expert_bytes());
  LinkBytes weights(request.ranks());
  const std::vector<Replica> resident = Sorted(request.resident);
  std::vector<Replica> moving;
  for (const Replica& r : plan.replicas) {
    if (Contains(resident, r)) continue;
    AddWeights(topo, weight_bytes, request.home_of(r.expert), r.rank, weights);
    moving.push_back(r);
  }
  std::vector<double> arrival(static_cast<size_t>(request.ranks()), 0.0);
  for (const Replica& r : moving) {
    const int from = request.home_of(r.expert);
    double done;
    if (topo.same_node(from, r.rank)) {
      done = std::max(dispatch.nvl_send[from] + weights.nvl_send[from],
                      dispatch.nvl_recv[r.rank] + weights.nvl_recv[r.rank]) /
                 links.nvl_bytes_per_us +
             links.nvl_latency_us;
    } else {
      done =
          std::max(dispatch.ib_send[from] + weights.ib_send[from], dispatch.ib_recv[r.rank] + weights.ib_recv[r.rank]) /
              links.ib_bytes_per_us +
          links.ib_latency_us;
    }
    arrival[r.rank] = std::max(arrival[r.rank], done);
  }
  return arrival;
}

// Forward GEMM time of each rank's home experts and of its guest replicas.
struct RankCompute {
  std::vector<double> home_us, guest_us;
};

RankCompute ComputeUs(const ClusterSpec& cluster, const ModelSpec& model, const PlanRequest& request,
                      const std::vector<int64_t>& totals, const Plan& plan) {
  const int R = request.ranks();
  std::vector<double> kept(totals.begin(), totals.end());
  // Tokens per replica (assignments name their replica by (expert, rank)).
  const std::vector<Replica> replicas = Sorted(plan.replicas);
  std::vector<double> served(replicas.size(), 0.0);
  for (const Assignment& a : plan.assignments) {
    const auto it = std::lower_bound(replicas.begin(), replicas.end(), Replica{a.expert, a.rank});
    served[static_cast<size_t>(it - replicas.begin())] += static_cast<double>(a.tokens);
    kept[a.expert] -= static_cast<double>(a.tokens);
  }
  RankCompute out{std::vector<double>(static_cast<size_t>(R), 0.0), std::vector<double>(static_cast<size_t>(R), 0.0)};
  for (int e = 0; e < request.experts(); ++e) out.home_us[request.home_of(e)] += GemmUs(cluster, model, kept[e]);
  for (size_t i = 0; i < replicas.size(); ++i) out.guest_us[replicas[i].rank] += GemmUs(cluster, model, served[i]);
  return out;
}

// Guest gradients (one expert's worth per replica) going home; they overlap the next layer's
// backward, so only what outlasts a layer's backward is exposed.
double GradientReturnUs(const PlanRequest& request, const Plan& plan, const ModelSpec& model, const Links& links,
                        double backward_us) {
  LinkBytes grads(request.ranks());
  for (const Replica& r : plan.replicas) {
    AddWeights(request.topology(), static_cast<double>(model.expert_bytes()), r.rank, request.home_of(r.expert), grads);
  }
  return std::max(0.0, AllToAllUs(grads, links) - backward_us);
}

}  // namespace

LayerTimeModel::LayerTimeModel(const ClusterSpec& cluster, const ModelSpec& model, const PlanRequest& request)
    : cluster_(cluster),
      model_(model),
      request_(request),
      home_copies_(HomeCopies(request)),
      expert_totals_(ExpertSums(request)) {}

LayerTime LayerTimeModel::Evaluate(const Plan& plan, bool return_gradients) const {
  const ClusterSpec& cluster = cluster_;
  const ModelSpec& model = model_;
  const PlanRequest& request = request_;
  const Links links = LinksOf(cluster);
  const LinkBytes dispatch = DispatchBytes(request, model, PlannedCopies(request, plan, home_copies_));
  const std::vector<double> arrival = WeightArrivalUs(request, plan, model, dispatch, links);
  const RankCompute compute = ComputeUs(cluster, model, request, expert_totals_, plan);

  LayerTime t;
  t.dispatch_us = AllToAllUs(dispatch, links);
  t.combine_us = t.dispatch_us;  // the same bytes, the other way
  double busiest_backward = 0;
  for (int r = 0; r < request.ranks(); ++r) {
    const double home_done = t.dispatch_us + compute.home_us[r];
    double end = home_done;
    if (compute.guest_us[r] > 0) {
      const double start = std::max(home_done, arrival[r]);
      t.stall_us = std::max(t.stall_us, start - home_done);
      end = start + compute.guest_us[r];
    }
    t.compute_us = std::max(t.compute_us, end - t.dispatch_us);
    t.resident_compute_us = std::max(t.resident_compute_us, compute.home_us[r] + compute.guest_us[r]);
    busiest_backward = std::max(busiest_backward, 2.0 * (compute.home_us[r] + compute.guest_us[r]));
  }
  t.backward_us = t.combine_us + busiest_backward + t.dispatch_us;
  if (return_gradients) t.gradient_return_us = GradientReturnUs(request, plan, model, links, t.backward_us);
  return t;
}

LayerTime ModelLayerTime(const ClusterSpec& cluster, const ModelSpec& model, const PlanRequest& request,
                         const Plan& plan, bool return_gradients) {
  return LayerTimeModel(cluster, model, request).Evaluate(plan, return_gradients);
}

double WeightMovesUs(const ClusterSpec& cluster, const ModelSpec& model, const PlanRequest& request,
                     const std::vector<Replica>& replicas) {
  if (replicas.empty()) return 0;
  const Links links = LinksOf(cluster);
  LinkBytes weights(request.ranks());
  for (const Replica& r : replicas) {
    AddWeights(request.topology(), static_cast<double>(model.expert_bytes()), request.home_of(r.expert), r.rank,
               weights);
  }
  return AllToAllUs(weights, links);
}

}  // namespace taot
