// A fingerprint of a plan's content, so that ranks can check cheaply that they hold the same
// plan before any weight moves (docs/design.md, "The data path of one layer").
#pragma once

#include <cstdint>

#include "taot/planner/plan.h"

namespace taot {

// 64-bit FNV-1a over the canonical plan (Canonicalize): every replica's (expert, rank), then
// every assignment's (source, expert, rank, tokens), each integer as 8 little-endian bytes,
// the list lengths first. The same on every platform; equal plans hash equal.
uint64_t PlanHash(const Plan& canonical_plan);

}  // namespace taot
