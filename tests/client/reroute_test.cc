// Token reroute against the plan's counts, checked pair by pair on real plans.
#include "taot/client/reroute.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "taot/client/in_process_transport.h"
#include "taot/client/layer_tables.h"
#include "taot/client/plane_reroute.h"
#include "taot/client/replica_moves.h"
#include "taot/kernels/block_tables.h"
#include "taot/kernels/reroute.h"
#include "taot/planner/block_host.h"
#include "taot/planner/load_stats.h"
#include "taot/planner/registry.h"
#include "taot/sim/case_generator.h"
#include "taot/sim/workload_families.h"

namespace taot::client {
namespace {

// Pairs of each source rank drawn so that their counts per expert are the case's load row.
std::vector<int32_t> PairsOf(const LoadMatrix& load, int source, uint64_t seed) {
  std::vector<int32_t> pairs;
  for (int e = 0; e < load.experts(); ++e) pairs.insert(pairs.end(), static_cast<size_t>(load.at(source, e)), e);
  std::mt19937_64 rng(seed);
  std::shuffle(pairs.begin(), pairs.end(), rng);
  return pairs;
}

// A generated case (R = 16) and taot's plan for it.
struct PlannedCase {
  sim::CaseOptions o;
  PlanRequest request;
  Plan plan;
};
PlannedCase TaotPlanOn(int experts, double imbalance) {
  PlannedCase c;
  c.o.ranks = 16;
  c.o.experts = experts;
  c.o.imbalance = imbalance;
  c.request = sim::GenerateCase(c.o)->request;
  c.plan = *PlannerRegistry::BuiltIn().Create("taot").value()->MakePlan(c.request);
  return c;
}

TEST(RerouteTest, EveryRankSendsExactlyThePlansCountsAndTheRestHome) {
  const auto [o, request, plan] = TaotPlanOn(64, 0.7);
  ASSERT_FALSE(plan.assignments.empty());
  for (int s = 0; s < o.ranks; ++s) {
    const std::vector<int32_t> pairs = PairsOf(request.load, s, static_cast<uint64_t>(s));
    absl::StatusOr<RerouteTable> table = RerouteTable::For(plan, o.ranks, o.experts, s);
    ASSERT_TRUE(table.ok()) << table.status();
    std::vector<int32_t> dest(pairs.size(), -1);
    std::vector<int64_t> sends(o.ranks, -1);
    ASSERT_TRUE(Reroute(*table, pairs, dest, sends).ok());
    // Oracle: count (expert, destination) from the output and compare with the plan.
    std::map<std::pair<int, int>, int64_t> got;
    std::vector<int64_t> per_rank(o.ranks, 0);
    for (size_t i = 0; i < pairs.size(); ++i) {
      ++got[{pairs[i], dest[i]}];
      ++per_rank[dest[i]];
    }
    std::map<std::pair<int, int>, int64_t> want;
    for (int e = 0; e < o.experts; ++e) {
      int64_t home = request.load.at(s, e);
      for (const Assignment& a : plan.assignments) {
        if (a.source == s && a.expert == e) {
          want[{e, a.rank}] += a.tokens;
          home -= a.tokens;
        }
      }
      if (home > 0) want[{e, request.home_of(e)}] += home;
    }
    EXPECT_EQ(got, want) << "source " << s;
    EXPECT_EQ(sends, per_rank);
  }
}

TEST(RerouteTest, TheFirstPairsOfAnExpertGoToItsLowestGuest) {
  Plan plan;
  plan.replicas = {{0, 2}, {0, 3}};
  plan.assignments = {{1, 0, 3, 1}, {1, 0, 2, 2}};
  const RerouteTable table = *RerouteTable::For(plan, 4, 8, 1);
  const std::vector<int32_t> pairs = {0, 5, 0, 0, 0, 0};
  std::vector<int32_t> dest(pairs.size());
  std::vector<int64_t> sends(4);
  ASSERT_TRUE(Reroute(table, pairs, dest, sends).ok());
  EXPECT_EQ(dest, (std::vector<int32_t>{2, 2, 2, 3, 0, 0}));
  EXPECT_EQ(sends, (std::vector<int64_t>{2, 0, 3, 1}));
}

TEST(RerouteTest, BadInputIsRefusedByNameAndWritesNothing) {
  Plan plan;
  plan.replicas = {{0, 2}};
  plan.assignments = {{1, 0, 2, 3}};
  EXPECT_EQ(RerouteTable::For(plan, 4, 6, 1).status().code(), absl::StatusCode::kInvalidArgument);  // 6 % 4
  EXPECT_NE(RerouteTable::For(plan, 4, 8, 4).status().message().find("rank: must be in [0, 4)"), std::string::npos);
  const RerouteTable table = *RerouteTable::For(plan, 4, 8, 1);
  std::vector<int32_t> dest(3, -7);
  std::vector<int64_t> sends(4, -7);
  // Only two pairs of expert 0, but the plan moves three of them.
  absl::Status s = Reroute(table, std::vector<int32_t>{0, 0, 4}, dest, sends);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("routes only 2"), std::string::npos) << s;
  s = Reroute(table, std::vector<int32_t>{0, 9, 0}, dest, sends);
  EXPECT_NE(s.message().find("expert_ids[1]: must be in [0, 8), got 9"), std::string::npos) << s;
  EXPECT_EQ(Reroute(table, std::vector<int32_t>{0, 0, 0}, std::span<int32_t>(dest).first(2), sends).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dest, std::vector<int32_t>(3, -7));
  EXPECT_EQ(sends, std::vector<int64_t>(4, -7));
}

// The data-plane kernel's CPU build (kernels/reroute.h) on the table's view: the same
// destinations as Reroute, written independently, and virtual ids that name the slot holding the
// pair's expert on that destination (GuestSlots) or the expert's home block.
TEST(RerouteTest, TheKernelsViewRoutesAsRerouteDoesToTheSlotsThatHoldTheExperts) {
  const auto [o, request, plan] = TaotPlanOn(128, 0.9);
  const int K = request.slots_per_rank();
  const int L = o.experts / o.ranks + K;
  for (int s = 0; s < o.ranks; ++s) {
    const std::vector<int32_t> pairs = PairsOf(request.load, s, static_cast<uint64_t>(s) + 100);
    const RerouteTable table = *RerouteTable::For(plan, o.ranks, o.experts, s, K);
    const int64_t n = static_cast<int64_t>(pairs.size());
    std::vector<int32_t> dest(pairs.size()), kernel_dest(pairs.size()), virtual_id(pairs.size());
    std::vector<int64_t> sends(o.ranks), kernel_sends(o.ranks), order(pairs.size());
    ASSERT_TRUE(Reroute(table, pairs, dest, sends).ok());
    const kernels::RouteTable view = table.view();
    std::vector<char> workspace(kernels::RerouteWorkspaceBytes(n, view));
    kernels::RouteCheck check;
    kernels::RerouteCpu(pairs.data(), n, view, virtual_id.data(), kernel_dest.data(), kernel_sends.data(), order.data(),
                        workspace.data(), &check);
    ASSERT_EQ(check.first_bad_pair, n);
    ASSERT_EQ(check.first_short_expert, o.experts);
    EXPECT_EQ(kernel_dest, dest) << "source " << s;
    EXPECT_EQ(kernel_sends, sends);
    for (size_t i = 0; i < pairs.size(); ++i) {
      const int local = virtual_id[i] % L;
      if (local < o.experts / o.ranks) {
        ASSERT_EQ(dest[i] * (o.experts / o.ranks) + local, pairs[i]);
      } else {
        const std::vector<int> held = GuestSlots(plan, dest[i]);
        ASSERT_LT(local - o.experts / o.ranks, static_cast<int>(held.size()));
        ASSERT_EQ(held[local - o.experts / o.ranks], pairs[i]);
      }
    }
    for (size_t p = 1; p < order.size(); ++p) {
      ASSERT_LE(virtual_id[order[p - 1]], virtual_id[order[p]]);
      if (virtual_id[order[p - 1]] == virtual_id[order[p]]) {
        ASSERT_LT(order[p - 1], order[p]);
      }
    }
  }
}

// The data path a GPU trainer takes, on host transports: the layer's tables uploaded once, the
// reroute run on the plane from them; the same destinations as Reroute and the same virtual
// ids as the kernel on the host-built table.
TEST(RerouteTest, ThePlanesRerouteFromTheUploadedTablesMatchesTheHostOne) {
  const auto [o, request, plan] = TaotPlanOn(64, 0.7);
  const int K = request.slots_per_rank();
  std::vector<std::unique_ptr<Transport>> transports = ConnectInProcess(o.ranks);
  for (int s = 0; s < o.ranks; ++s) {
    Transport& t = *transports[s];
    const std::vector<int32_t> pairs = PairsOf(request.load, s, static_cast<uint64_t>(s) + 7);
    const int64_t n = static_cast<int64_t>(pairs.size());
    LayerTables tables;
    ASSERT_TRUE(tables.Load(t, plan, o.experts, K).ok());
    std::vector<int32_t> virtual_id(pairs.size()), dest(pairs.size());
    std::vector<int64_t> sends(o.ranks), order(pairs.size());
    kernels::RouteCheck check;
    RerouteWorkspace workspace;
    const DataPlane::Copies before = t.plane().copies();
    ASSERT_TRUE(StartReroute(t, tables, pairs.data(), n,
                             {virtual_id.data(), dest.data(), sends.data(), order.data(), &check}, workspace)
                    .ok());
    EXPECT_EQ(t.plane().copies().uploads, before.uploads);  // the tables were uploaded by Load
    ASSERT_EQ(check.first_bad_pair, n);
    const RerouteTable host = *RerouteTable::For(plan, o.ranks, o.experts, s, K);
    std::vector<int32_t> want_dest(pairs.size()), want_virtual(pairs.size());
    std::vector<int64_t> want_sends(o.ranks), want_order(pairs.size());
    ASSERT_TRUE(Reroute(host, pairs, want_dest, want_sends).ok());
    EXPECT_EQ(dest, want_dest) << "source " << s;
    EXPECT_EQ(sends, want_sends);
    const kernels::RouteTable view = host.view();
    std::vector<char> scratch(kernels::RerouteWorkspaceBytes(n, view));
    kernels::RerouteCpu(pairs.data(), n, view, want_virtual.data(), want_dest.data(), want_sends.data(),
                        want_order.data(), scratch.data(), &check);
    EXPECT_EQ(virtual_id, want_virtual);
    EXPECT_EQ(order, want_order);
  }
  Transport& t = *transports[0];
  LayerTables none;
  RerouteWorkspace workspace;
  EXPECT_EQ(StartReroute(t, none, nullptr, 0, {}, workspace).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(none.Load(t, plan, o.experts, K).ok());
  int32_t id = 0;
  EXPECT_EQ(StartReroute(t, none, &id, 1, {}, workspace).message(), "outputs.virtual_expert: must not be null");
}

// What a CUDA graph captured reads fixed addresses: the tables keep theirs from the first plan of a
// shape (even one with no replica) to the fullest, and a reserved workspace does not grow again.
TEST(RerouteTest, TablesAndAReservedWorkspaceKeepTheirAddressesAcrossPlans) {
  const auto [o, request, plan] = TaotPlanOn(64, 0.7);
  const int K = request.slots_per_rank();
  std::vector<std::unique_ptr<Transport>> transports = ConnectInProcess(o.ranks);
  Transport& t = *transports[0];
  LayerTables tables;
  ASSERT_TRUE(tables.Load(t, Plan{}, o.experts, K).ok());
  const kernels::RouteTable first = tables.route();
  RerouteWorkspace workspace;
  constexpr int64_t kMostPairs = 4096;
  ASSERT_TRUE(ReserveRerouteWorkspace(t, o.experts, K, kMostPairs, workspace).ok());
  EXPECT_EQ(workspace.grows(), 1);
  const void* reserved = workspace.data();
  ASSERT_FALSE(plan.replicas.empty());
  for (const Plan* p : {&plan, static_cast<const Plan*>(nullptr)}) {
    ASSERT_TRUE(tables.Load(t, p == nullptr ? Plan{} : *p, o.experts, K).ok());
    EXPECT_EQ(tables.route().pair_end, first.pair_end);
    EXPECT_EQ(tables.route().virtual_id, first.virtual_id);
    for (int64_t n : {int64_t{0}, int64_t{7}, kMostPairs}) {
      // One entry more than the pairs: no layer's outputs are null, not even one of no pairs.
      std::vector<int32_t> ids(static_cast<size_t>(n) + 1, 5), virtual_id(ids.size()), dest(ids.size());
      std::vector<int64_t> sends(o.ranks), order(ids.size());
      kernels::RouteCheck check;
      ASSERT_TRUE(StartReroute(t, tables, ids.data(), n,
                               {virtual_id.data(), dest.data(), sends.data(), order.data(), &check}, workspace)
                      .ok());
      EXPECT_EQ(check.first_bad_pair, n);
    }
    EXPECT_EQ(workspace.grows(), 1);
    EXPECT_EQ(workspace.data(), reserved);
  }
  EXPECT_EQ(ReserveRerouteWorkspace(t, o.experts, K, -1, workspace).message(), "max_pairs: must be >= 0, got -1");
  EXPECT_EQ(ReserveRerouteWorkspace(t, o.experts, -1, 1, workspace).message(), "slots: must be >= 0, got -1");
  EXPECT_NE(ReserveRerouteWorkspace(t, o.experts + 1, K, 1, workspace).message().find("experts: must be a positive"),
            std::string::npos);
  EXPECT_EQ(workspace.grows(), 1);  // a refusal changes nothing
}

// Load's halves apart, as a CUDA graph that holds the upload uses them: staging a plan changes
// only the host's side (the accessors, the staging), the plane's tables change with the upload
// (one copy), and both keep their addresses.
TEST(RerouteTest, StagedTablesReachThePlaneOnlyWithTheUpload) {
  const auto [o, request, plan] = TaotPlanOn(64, 0.7);
  const int K = request.slots_per_rank();
  ASSERT_FALSE(plan.assignments.empty());
  const int source = plan.assignments.front().source;  // a rank that sends pairs to a guest
  std::vector<std::unique_ptr<Transport>> transports = ConnectInProcess(o.ranks);
  Transport& t = *transports[source];
  const std::vector<int32_t> pairs = PairsOf(request.load, source, 3);
  const int64_t n = static_cast<int64_t>(pairs.size());
  RerouteWorkspace workspace;
  ASSERT_TRUE(ReserveRerouteWorkspace(t, o.experts, K, n, workspace).ok());
  auto destinations = [&](const LayerTables& tables) {
    std::vector<int32_t> virtual_id(pairs.size() + 1), dest(pairs.size() + 1);
    std::vector<int64_t> sends(o.ranks), order(pairs.size() + 1);
    kernels::RouteCheck check;
    EXPECT_TRUE(StartReroute(t, tables, pairs.data(), n,
                             {virtual_id.data(), dest.data(), sends.data(), order.data(), &check}, workspace)
                    .ok());
    dest.pop_back();
    return dest;
  };
  auto reference = [&](const Plan& p) {
    std::vector<int32_t> dest(pairs.size());
    std::vector<int64_t> sends(o.ranks);
    EXPECT_TRUE(Reroute(*RerouteTable::For(p, o.ranks, o.experts, source, K), pairs, dest, sends).ok());
    return dest;
  };
  LayerTables tables;
  EXPECT_EQ(tables.Upload().message(), "tables: no plan is staged");
  ASSERT_TRUE(tables.Load(t, Plan{}, o.experts, K).ok());
  const std::vector<int32_t> home = reference(Plan{});
  const std::vector<int32_t> planned = reference(plan);
  ASSERT_NE(home, planned);
  EXPECT_EQ(destinations(tables), home);
  const kernels::RouteTable before = tables.route();
  const int64_t uploads = t.plane().copies().uploads;
  ASSERT_TRUE(tables.Stage(t, plan, o.experts, K).ok());
  EXPECT_EQ(tables.transfers().size(), Transfers(plan, o.experts / o.ranks).size());  // the host side: the plan
  EXPECT_EQ(destinations(tables), home);                                              // the plane: not yet
  EXPECT_EQ(t.plane().copies().uploads, uploads);
  ASSERT_TRUE(tables.Upload().ok());
  EXPECT_EQ(t.plane().copies().uploads, uploads + 1);
  EXPECT_EQ(destinations(tables), planned);
  EXPECT_EQ(tables.route().pair_end, before.pair_end);
  EXPECT_EQ(tables.route().guest_rank, before.guest_rank);
  // A refused plan changes nothing, not even the staging: the next upload copies the same plan.
  Plan bad = plan;
  bad.replicas.clear();  // its assignments without their replicas
  EXPECT_NE(tables.Stage(t, bad, o.experts, K).message().find("holds no replica"), std::string::npos);
  ASSERT_TRUE(tables.Upload().ok());
  EXPECT_EQ(destinations(tables), planned);
}

// The tables made from a taot-block plan where it lies (kernels/block_tables.h) are the ones the
// client builds from the same plan as a Plan (RerouteTable::For), for every source rank, on every
// workload family, K = 1 and 2.
TEST(RerouteTest, TablesFromABlockPlanAreTheTablesOfItsPlan) {
  for (int slots : {1, 2}) {
    for (const sim::WorkloadFamily& family : sim::WorkloadFamilies(32)) {
      sim::CaseOptions o;
      o.ranks = 32;
      o.experts = 128;
      o.slots_per_rank = slots;
      family.apply(o);
      const PlanRequest request = sim::GenerateCase(o).value().request;
      BlockHostLayer block;
      block.Prepare(request.problem);
      block.Plan(request.load, LoadCap(TotalTokens(request.load), o.ranks, 2.0));
      const Plan plan = block.ToPlan();
      const auto most = static_cast<size_t>(block::MaxPieces(block.shape())) + 1;
      std::vector<int32_t> begin(static_cast<size_t>(o.experts) + 1), rank(most), virtual_id(most), scratch(o.ranks);
      std::vector<int64_t> end(most);
      int32_t guests = -1;
      for (int source = 0; source < o.ranks; ++source) {
        kernels::BlockRouteTable(block.shape(), block.layer(), source,
                                 {begin.data(), rank.data(), end.data(), virtual_id.data(), &guests}, scratch.data());
        const RerouteTable want = RerouteTable::For(plan, o.ranks, o.experts, source, slots).value();
        const std::string where = family.name + ", K " + std::to_string(slots) + ", source " + std::to_string(source);
        ASSERT_EQ(guests, static_cast<int32_t>(want.guests.size())) << where;
        EXPECT_EQ(std::vector<int32_t>(begin.begin(), begin.end()), want.offsets) << where;
        EXPECT_EQ(std::vector<int32_t>(rank.begin(), rank.begin() + guests), want.guests) << where;
        EXPECT_EQ(std::vector<int64_t>(end.begin(), end.begin() + guests), want.pair_end) << where;
        EXPECT_EQ(std::vector<int32_t>(virtual_id.begin(), virtual_id.begin() + guests), want.virtual_id) << where;
      }
    }
  }
}

TEST(RerouteTest, ATableRefusesAPlanThatOverfillsTheSlotsOrAssignsWithoutAReplica) {
  Plan plan;
  plan.replicas = {{0, 2}, {1, 2}, {4, 2}};
  plan.assignments = {{1, 0, 2, 1}};
  EXPECT_NE(RerouteTable::For(plan, 4, 8, 1, 2).status().message().find("rank 2 holds 3 replicas"), std::string::npos);
  EXPECT_EQ(RerouteTable::For(plan, 4, 8, 1).value().slots, 3);  // K from the plan
  plan.replicas = {{1, 2}};
  EXPECT_NE(RerouteTable::For(plan, 4, 8, 1, 2).status().message().find("holds no replica"), std::string::npos);
  EXPECT_EQ(RerouteTable::For(plan, 4, 8, 1, -1).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace taot::client
