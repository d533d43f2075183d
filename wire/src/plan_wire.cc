#include "taot/wire/plan_wire.h"

#include "absl/strings/str_cat.h"
#include "taot/planner/plan_hash.h"

namespace taot::wire {
namespace {

absl::Status AtLeast(int64_t least, int64_t value, const char* list, int index, const char* field) {
  if (value >= least) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(list, "[", index, "].", field, ": must be >= ", least, ", got ", value));
}

}  // namespace

void ReplicasToProto(std::span<const Replica> replicas, ReplicasProto& out) {
  out.Reserve(static_cast<int>(replicas.size()));
  for (const Replica& r : replicas) {
    taot::v1::Replica* m = out.Add();
    m->set_expert(r.expert);
    m->set_rank(r.rank);
  }
}

absl::StatusOr<std::vector<Replica>> ReplicasFromProto(const ReplicasProto& replicas) {
  std::vector<Replica> out;
  out.reserve(static_cast<size_t>(replicas.size()));
  for (int i = 0; i < replicas.size(); ++i) {
    const taot::v1::Replica& m = replicas[i];
    if (absl::Status s = AtLeast(0, m.expert(), "replicas", i, "expert"); !s.ok()) return s;
    if (absl::Status s = AtLeast(0, m.rank(), "replicas", i, "rank"); !s.ok()) return s;
    out.push_back({m.expert(), m.rank()});
  }
  return out;
}

void PlanToProto(const Plan& plan, taot::v1::Plan& out) {
  ReplicasToProto(plan.replicas, *out.mutable_replicas());
  out.mutable_assignments()->Reserve(static_cast<int>(plan.assignments.size()));
  for (const Assignment& a : plan.assignments) {
    taot::v1::Assignment* m = out.add_assignments();
    m->set_source(a.source);
    m->set_expert(a.expert);
    m->set_rank(a.rank);
    m->set_tokens(a.tokens);
  }
}

absl::StatusOr<Plan> PlanFromProto(const taot::v1::Plan& message) {
  Plan plan;
  absl::StatusOr<std::vector<Replica>> replicas = ReplicasFromProto(message.replicas());
  if (!replicas.ok()) return replicas.status();
  plan.replicas = *std::move(replicas);
  plan.assignments.reserve(static_cast<size_t>(message.assignments_size()));
  for (int i = 0; i < message.assignments_size(); ++i) {
    const taot::v1::Assignment& m = message.assignments(i);
    for (auto [field, value] :
         {std::pair<const char*, int64_t>{"source", m.source()}, {"expert", m.expert()}, {"rank", m.rank()}}) {
      if (absl::Status s = AtLeast(0, value, "assignments", i, field); !s.ok()) return s;
    }
    if (absl::Status s = AtLeast(1, m.tokens(), "assignments", i, "tokens"); !s.ok()) return s;
    plan.assignments.push_back({m.source(), m.expert(), m.rank(), m.tokens()});
  }
  if (const uint64_t hash = PlanHash(plan); hash != message.hash()) {
    return absl::DataLossError(absl::StrCat("hash: ", absl::Hex(message.hash()),
                                            " is not the hash of its replicas and assignments (", absl::Hex(hash),
                                            ")"));
  }
  return plan;
}

}  // namespace taot::wire
