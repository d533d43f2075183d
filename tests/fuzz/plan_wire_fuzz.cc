// The client's decoding of the daemon's plans (wire::PlanFromProto, taot/wire/plan_wire.h) on any
// reply a daemon could send: a buggy or hostile daemon must get a DATA_LOSS or INVALID_ARGUMENT,
// never a plan with negative indices or tokens. The first byte's low bit says whether to fix the
// message's hash to its content first (a daemon that hashes consistently but plans wrongly), so
// the fuzzer reaches the checks past the hash. An accepted plan encodes back to a message that
// decodes to the same plan.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.h"
#include "taot/planner/plan_hash.h"
#include "taot/wire/identity_wire.h"
#include "taot/wire/plan_wire.h"
#include "taot/wire/scorecard_wire.h"

namespace {

using taot::fuzz::Require;

// The message's lists as they are, unchecked: what a consistent daemon would have hashed.
taot::Plan Unchecked(const taot::v1::Plan& message) {
  taot::Plan plan;
  for (const auto& r : message.replicas()) plan.replicas.push_back({r.expert(), r.rank()});
  for (const auto& a : message.assignments())
    plan.assignments.push_back({a.source(), a.expert(), a.rank(), a.tokens()});
  return plan;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  taot::v1::Plan message;
  if (!message.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  if ((data[0] & 1) != 0) message.set_hash(taot::PlanHash(Unchecked(message)));
  (void)taot::wire::IdentityFromProto(message);
  if (message.has_stats()) {
    const absl::StatusOr<taot::Scorecard> stats = taot::wire::ScorecardFromProto(message.stats());
    Require(stats.ok() || !stats.status().message().empty(), "refused stats get a message");
  }
  const absl::StatusOr<taot::Plan> plan = taot::wire::PlanFromProto(message);
  if (!plan.ok()) {
    Require(!plan.status().message().empty(), "a refused plan gets a message");
    return 0;
  }
  for (const taot::Replica& r : plan->replicas) Require(r.expert >= 0 && r.rank >= 0, "replica indices >= 0");
  for (const taot::Assignment& a : plan->assignments) {
    Require(a.source >= 0 && a.expert >= 0 && a.rank >= 0, "assignment indices >= 0");
    Require(a.tokens >= 1, "assignments move at least one token");
  }
  taot::v1::Plan again;
  taot::wire::PlanToProto(*plan, again);
  again.set_hash(message.hash());
  const absl::StatusOr<taot::Plan> back = taot::wire::PlanFromProto(again);
  Require(back.ok() && *back == *plan, "an accepted plan encodes back to the same plan");
  return 0;
}
