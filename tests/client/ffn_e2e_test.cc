// The core path without Python: a small MoE layer of 2-layer FFN experts on 4 ranks (threads,
// Gloo transport for both taot's moves and the layer's own token exchange), trained for a few SGD
// steps as standard expert parallelism and with taot (local planning, weight moves into slots,
// reroute, guest gradients returned home). Outputs, input gradients, expert gradients and weights
// must agree within float32 tolerance (rtol 1e-5: the same terms summed in another order).
#include <gtest/gtest.h>

#include <random>

#include "ffn_testing.h"
#include "gloo_ranks.h"
#include "taot/client/client.h"
#include "taot/client/gloo_transport.h"
#include "taot/client/replica_exchange.h"
#include "taot/client/replica_moves.h"
#include "taot/client/reroute.h"

namespace taot::client {
namespace {

using namespace ffn;  // the layer shared with the device variant (ffn_testing.h)

TEST(FfnEndToEndTest, TrainingWithTaotMatchesStandardExpertParallelism) {
  std::vector<int64_t> bytes_moved(kRanks, 0);
  OnGlooRanks(kRanks, [&](std::shared_ptr<Transport> transport) {
    const int rank = transport->rank();
    ClientOptions o;
    o.experts = kExperts;
    o.slots_per_rank = kSlots;
    o.node = rank < 2 ? "n0" : "n1";
    o.mode = Mode::kLocal;
    std::unique_ptr<Client> client = *Client::Create(o, transport);
    Transport& t = *transport;
    // The same initial experts everywhere; this rank keeps its home ones, twice.
    const std::vector<Weights> all = InitialExperts();
    const int first = rank * (kExperts / kRanks);
    std::vector<Weights> base(all.begin() + first, all.begin() + first + kExperts / kRanks), with = base;
    std::mt19937 data(100 + rank);
    for (int step = 0; step < kSteps; ++step) {
      const Batch b = NextBatch(data);
      // Standard expert parallelism.
      std::vector<Weights> base_grad(base.size(), Weights(kParams, 0));
      std::vector<int32_t> home(kTokens);
      for (int i = 0; i < kTokens; ++i) home[i] = b.experts[i] / (kExperts / kRanks);
      const Result want = RunLayer(
          t, b, home, [&](int e) -> const Weights& { return base[e - first]; },
          [&](int e) { return base_grad[e - first].data(); });
      // With taot.
      std::vector<int64_t> counts(kExperts, 0);
      for (int32_t e : b.experts) ++counts[e];
      absl::StatusOr<LayerPlan> plan = client->PlanLayer(step, 0, counts);
      ASSERT_TRUE(plan.ok()) << plan.status();
      std::vector<Weights> slots(kSlots, Weights(kParams, 0)), slot_grad(kSlots, Weights(kParams, 0));
      std::vector<Weights> grad(with.size(), Weights(kParams, 0));
      ExpertBuffers weights{kParams * sizeof(float), {}, {}};
      for (Weights& w : with) weights.home.push_back(w.data());
      for (Weights& w : slots) weights.slots.push_back(w.data());
      MovedBytes moved;
      auto pending = StartWeightMoves(t, plan->plan, kExperts, weights, &moved);
      ASSERT_TRUE(pending.ok()) << pending.status();
      ASSERT_TRUE((*pending)->Wait(absl::Seconds(30)).ok());
      bytes_moved[rank] += moved.sent + moved.received;
      const std::vector<int> slot_experts = GuestSlots(plan->plan, rank);
      auto slot_of = [&](int e) {
        return static_cast<int>(std::find(slot_experts.begin(), slot_experts.end(), e) - slot_experts.begin());
      };
      const RerouteTable table = *RerouteTable::For(plan->plan, kRanks, kExperts, rank);
      std::vector<int32_t> dest(kTokens);
      std::vector<int64_t> per_rank(kRanks);
      ASSERT_TRUE(Reroute(table, b.experts, dest, per_rank).ok());
      auto is_home = [&](int e) { return e >= first && e < first + kExperts / kRanks; };
      const Result got = RunLayer(
          t, b, dest, [&](int e) -> const Weights& { return is_home(e) ? with[e - first] : slots[slot_of(e)]; },
          [&](int e) { return is_home(e) ? grad[e - first].data() : slot_grad[slot_of(e)].data(); });
      ExpertBuffers grads{kParams * sizeof(float), {}, {}};
      for (Weights& w : grad) grads.home.push_back(w.data());
      for (Weights& w : slot_grad) grads.slots.push_back(w.data());
      ASSERT_TRUE(ReturnGradients(t, plan->plan, kExperts, grads, absl::Seconds(30)).ok());
      CheckAndDescend(got, want, grad, base_grad, base, with);
    }
  });
  int64_t total = 0;
  for (int64_t b : bytes_moved) total += b;
  EXPECT_GT(total, 0) << "the skew should have made taot replicate";
}

}  // namespace
}  // namespace taot::client
