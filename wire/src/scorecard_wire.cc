#include "taot/wire/scorecard_wire.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace taot::wire {
namespace {

absl::Status Finite(const char* field, double value) {
  if (std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("stats.", field, ": must be finite, got ", value));
}

absl::Status NotNegative(const char* field, int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("stats.", field, ": must be >= 0, got ", value));
}

}  // namespace

void ScorecardToProto(const Scorecard& s, taot::v1::PlanStats& out) {
  out.set_imbalance_before_pct(s.imbalance_before_pct);
  out.set_imbalance_after_pct(s.imbalance_after_pct);
  out.set_target_imbalance_pct(s.target_imbalance_pct);
  out.set_target_met(s.target_met);
  out.set_intra_node_transfers(s.intra_node_transfers);
  out.set_inter_node_transfers(s.inter_node_transfers);
  out.set_reused_replicas(s.reused_replicas);
  out.set_weighted_cost(s.weighted_cost);
  out.set_bytes_moved_intra_node(s.bytes_moved_intra_node);
  out.set_bytes_moved_inter_node(s.bytes_moved_inter_node);
  out.set_tokens_local(s.tokens_local);
  out.set_tokens_intra_node(s.tokens_intra_node);
  out.set_tokens_inter_node(s.tokens_inter_node);
  out.set_plan_time_us(s.plan_time_us);
}

absl::StatusOr<Scorecard> ScorecardFromProto(const taot::v1::PlanStats& m) {
  for (auto [field, value] : {std::pair<const char*, double>{"imbalance_before_pct", m.imbalance_before_pct()},
                              {"imbalance_after_pct", m.imbalance_after_pct()},
                              {"target_imbalance_pct", m.target_imbalance_pct()},
                              {"weighted_cost", m.weighted_cost()},
                              {"plan_time_us", m.plan_time_us()}}) {
    if (absl::Status s = Finite(field, value); !s.ok()) return s;
  }
  for (auto [field, value] : {std::pair<const char*, int64_t>{"intra_node_transfers", m.intra_node_transfers()},
                              {"inter_node_transfers", m.inter_node_transfers()},
                              {"reused_replicas", m.reused_replicas()},
                              {"bytes_moved_intra_node", m.bytes_moved_intra_node()},
                              {"bytes_moved_inter_node", m.bytes_moved_inter_node()},
                              {"tokens_local", m.tokens_local()},
                              {"tokens_intra_node", m.tokens_intra_node()},
                              {"tokens_inter_node", m.tokens_inter_node()}}) {
    if (absl::Status s = NotNegative(field, value); !s.ok()) return s;
  }
  Scorecard s;
  s.imbalance_before_pct = m.imbalance_before_pct();
  s.imbalance_after_pct = m.imbalance_after_pct();
  s.target_imbalance_pct = m.target_imbalance_pct();
  s.target_met = m.target_met();
  s.intra_node_transfers = m.intra_node_transfers();
  s.inter_node_transfers = m.inter_node_transfers();
  s.reused_replicas = m.reused_replicas();
  s.weighted_cost = m.weighted_cost();
  s.bytes_moved_intra_node = m.bytes_moved_intra_node();
  s.bytes_moved_inter_node = m.bytes_moved_inter_node();
  s.tokens_local = m.tokens_local();
  s.tokens_intra_node = m.tokens_intra_node();
  s.tokens_inter_node = m.tokens_inter_node();
  s.plan_time_us = m.plan_time_us();
  return s;
}

}  // namespace taot::wire
