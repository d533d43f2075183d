#include "taot/planner/plan_hash.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "taot/planner/fnv1a.h"
#include "taot/planner/registry.h"
#include "taot/sim/case_generator.h"
#include "taot/sim/workload_families.h"

namespace taot {
namespace {

// The hash as plan_hash.h defines it, written out plainly: FNV-1a over every byte of each
// integer's 8 little-endian bytes, the list lengths first. The oracle the fast paths answer to.
uint64_t SpecHash(const Plan& plan) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&h](int64_t value) {
    const auto bits = static_cast<uint64_t>(value);
    for (int byte = 0; byte < 8; ++byte) {
      h ^= (bits >> (8 * byte)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  };
  add(static_cast<int64_t>(plan.replicas.size()));
  for (const Replica& r : plan.replicas) {
    add(r.expert);
    add(r.rank);
  }
  add(static_cast<int64_t>(plan.assignments.size()));
  for (const Assignment& a : plan.assignments) {
    add(a.source);
    add(a.expert);
    add(a.rank);
    add(a.tokens);
  }
  return h;
}

// Values of every width a field can hold, with the edges where a byte count changes.
int64_t AnyWidth(std::mt19937_64& rng, bool int32) {
  static const std::vector<int64_t> kEdges = {0,
                                              1,
                                              255,
                                              256,
                                              65535,
                                              65536,
                                              (int64_t{1} << 24) - 1,
                                              int64_t{1} << 24,
                                              std::numeric_limits<int32_t>::max(),
                                              -1,
                                              std::numeric_limits<int32_t>::min(),
                                              int64_t{1} << 40,
                                              std::numeric_limits<int64_t>::max(),
                                              std::numeric_limits<int64_t>::min()};
  int64_t v = rng() % 3 == 0 ? kEdges[rng() % kEdges.size()] : static_cast<int64_t>(rng() >> (rng() % 64));
  // Negated as two's complement does (the lowest int64 is its own negation).
  if (rng() % 5 == 0) v = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
  return int32 ? static_cast<int32_t>(v) : v;
}

TEST(PlanHashTest, IsFnv1aOverEveryByteOfTheEntries) {
  EXPECT_EQ(PlanHash(Plan{}), SpecHash(Plan{}));
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    Plan plan;
    // Narrow plans (as planners make them) and plans with a few wide or negative entries, so
    // that each field's widest value varies from one plan to the next.
    const bool narrow = trial % 2 == 0;
    const auto field = [&](bool int32, int64_t bound) {
      return narrow ? static_cast<int64_t>(rng() % static_cast<uint64_t>(bound)) : AnyWidth(rng, int32);
    };
    const size_t replicas = rng() % 20, assignments = rng() % 60;
    for (size_t i = 0; i < replicas; ++i) {
      plan.replicas.push_back({static_cast<int32_t>(field(true, 300)), static_cast<int32_t>(field(true, 70))});
    }
    for (size_t i = 0; i < assignments; ++i) {
      plan.assignments.push_back({static_cast<int32_t>(field(true, 70)), static_cast<int32_t>(field(true, 70000)),
                                  static_cast<int32_t>(field(true, 256)), field(false, 5000)});
    }
    ASSERT_EQ(PlanHash(plan), SpecHash(plan)) << "trial " << trial;
  }
}

TEST(PlanHashTest, EqualPlansHashEqualAndAnyChangeShows) {
  Plan a;
  a.replicas = {{1, 2}, {3, 4}};
  a.assignments = {{0, 1, 2, 10}, {5, 3, 4, 7}};
  Plan b = a;
  EXPECT_EQ(PlanHash(a), PlanHash(b));
  b.assignments[1].tokens = 8;
  EXPECT_NE(PlanHash(a), PlanHash(b));
  Plan c = a;
  c.replicas[0].rank = 5;
  EXPECT_NE(PlanHash(a), PlanHash(c));
  EXPECT_NE(PlanHash(Plan{}), PlanHash(a));
  // Fixed on every platform: the empty plan's hash (two zero lengths through FNV-1a).
  EXPECT_EQ(PlanHash(Plan{}), 0x88201fb960ff6465ULL);
}

TEST(PlanHashTest, RealPlansHashAsTheDefinitionSays) {
  for (int ranks : {16, 64}) {
    for (const sim::WorkloadFamily& family : sim::WorkloadFamilies(ranks)) {
      sim::CaseOptions o;
      o.ranks = ranks;
      o.experts = 4 * ranks;
      o.seed = 1;
      family.apply(o);
      const PlanRequest request = sim::GenerateCase(o).value().request;
      for (const char* name : {"taot", "echo"}) {
        Plan plan = PlannerRegistry::BuiltIn().Create(name).value()->MakePlan(request).value();
        Canonicalize(plan);
        ASSERT_EQ(PlanHash(plan), SpecHash(plan)) << name << " EP" << ranks << " " << family.name;
      }
    }
  }
}

TEST(Fnv1aTest, AddingMoreBytesThanAValueNeedsIsAddingTheValue) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t value = AnyWidth(rng, trial % 2 == 0);
    const int needed = Fnv1a::FieldBytes(static_cast<uint64_t>(value));
    Fnv1a reference;
    reference.AddBytes("seed");
    reference.AddInt64(value);
    for (int bytes = needed; bytes <= 8; ++bytes) {
      Fnv1a fixed;
      fixed.AddBytes("seed");
      fixed.AddInt64Bytes(value, bytes);
      ASSERT_EQ(fixed.hash(), reference.hash()) << "value " << value << ", " << bytes << " bytes";
    }
  }
}

TEST(Fnv1aTest, FieldBytesIsTheWidestValuesByteCount) {
  EXPECT_EQ(Fnv1a::FieldBytes(0), 1);
  EXPECT_EQ(Fnv1a::FieldBytes(255), 1);
  EXPECT_EQ(Fnv1a::FieldBytes(256), 2);
  EXPECT_EQ(Fnv1a::FieldBytes(1 | (uint64_t{1} << 23)), 3);
  EXPECT_EQ(Fnv1a::FieldBytes(~uint64_t{0}), 8);
}

}  // namespace
}  // namespace taot
