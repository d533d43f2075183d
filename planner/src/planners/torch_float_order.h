// Float32 reductions and a top-1 pick in the order PyTorch 1.13's CPU kernels use, so that a port
// of a peer's torch code rounds as the peer's code does and breaks exact ties the same way.
// Checked bit for bit against torch 1.13.1 (Debian 12, CPU capability AVX2) on the public
// peer cases and on random vectors of 1 to 4096 entries.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace taot::planners {

// tensor.sum() of a contiguous float32 vector: ATen's cascade sum (SumKernel.cpp), eight float
// lanes at a time with four interleaved accumulators, the lanes then added in order.
float TorchSum(std::span<const float> values);

// tensor.sum(0) of a contiguous rows x cols float32 matrix (row-major), one sum per column.
std::vector<float> TorchColumnSums(std::span<const float> matrix, int64_t rows, int64_t cols);

// tensor.topk(1, dim=0) of a float32 column: the index torch returns. With at least 64 entries
// torch takes the first maximum (std::partial_sort); with fewer it takes the one
// std::nth_element leaves in front, which among equal maxima need not be the first: this calls
// the same libstdc++ algorithm on the same (value, index) sequence, as torch's build does.
int64_t TorchTopOne(std::span<const float> column);

}  // namespace taot::planners
