// Where the simulator's load matrices come from: one R x E matrix of routed token counts per
// (step, layer, microbatch). Synthetic sequences (sequence_workload.h) and recorded traces
// (trace.h) implement it.
#pragma once

#include <memory>

#include "taot/planner/load_matrix.h"

namespace taot::sim {

struct WorkloadShape {
  int ranks = 0;
  int experts = 0;
  int layers = 0;
  int steps = 0;
  int microbatches = 0;  // per optimizer step (gradient accumulation)
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual WorkloadShape shape() const = 0;
  // Counts of (step, layer, microbatch), each in range of shape(); the same call always
  // returns the same matrix.
  virtual LoadMatrix Load(int step, int layer, int microbatch) const = 0;
};

// One load matrix as a workload of one layer, one step and one microbatch (a CASE file, e.g.
// from `taot gen`); the simulator scales a layer to all of the model's MoE layers.
std::unique_ptr<Workload> SingleMatrix(LoadMatrix load);

// Every matrix of `workload` computed once and kept, for runs that read each many times (one
// per planner).
std::unique_ptr<Workload> Materialize(const Workload& workload);

}  // namespace taot::sim
