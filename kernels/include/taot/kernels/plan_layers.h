// taot-block's layers planned on a device: one thread block per layer, running the function the
// CPU reference runs (taot/planner/block_planner.h), so each layer's plan is the CPU's bit for
// bit. A microbatch's layers that are ready together go in one launch.
#pragma once

#include <cstdint>

#include "taot/planner/block_planner.h"

#if TAOT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace taot::kernels {

// Threads per block: enough for the sums over the load, few enough to leave the device to the
// trainer's kernels.
inline constexpr int kPlanThreads = 256;

#if TAOT_WITH_CUDA
// Plans `count` layers on `stream`, block i planning layers[i]. `layers` is device memory, and so
// is everything it and `shape` point to (a layer's load, outputs and scratch: ScratchWords(shape)
// words). Nothing allocates or waits, so a CUDA graph can capture it. cudaErrorInvalidValue for
// count < 0 or threads outside [1, 1024].
cudaError_t PlanLayersCuda(const block::Shape& shape, const block::Layer* layers, int32_t count, cudaStream_t stream,
                           int threads = kPlanThreads);
#endif

}  // namespace taot::kernels
