#include "planners/torch_float_order.h"

#include <algorithm>
#include <array>
#include <bit>
#include <utility>

namespace taot::planners {
namespace {

// Vectorized<float>::size() under AVX2, the capability torch dispatched to where the peer
// fixtures were made; an AVX-512 build would sum 16 lanes at a time and round differently.
constexpr int64_t kLanes = 8;

struct Lanes {
  std::array<float, kLanes> v{};
};

void Accumulate(float& into, float x) { into = into + x; }
void Accumulate(Lanes& into, const Lanes& x) {
  for (int64_t k = 0; k < kLanes; ++k) into.v[k] = into.v[k] + x.v[k];
}

int64_t CeilLog2(int64_t x) { return x <= 2 ? 1 : std::bit_width(static_cast<uint64_t>(x - 1)); }

// ATen's multi_row_sum: `rows` accumulators over `size` steps, each step adding load(i, k) to
// accumulator k; every 16 steps the partial sums cascade into a higher level, which keeps the
// rounding error logarithmic.
template <typename Acc, typename Load>
std::vector<Acc> CascadeRows(int64_t size, int64_t rows, const Load& load) {
  constexpr int64_t kLevels = 4;
  const int64_t level_power = std::max<int64_t>(4, CeilLog2(size) / kLevels);
  const int64_t level_step = int64_t{1} << level_power;
  const int64_t level_mask = level_step - 1;
  std::vector<std::vector<Acc>> acc(kLevels, std::vector<Acc>(static_cast<size_t>(rows)));
  int64_t i = 0;
  while (i + level_step <= size) {
    for (int64_t j = 0; j < level_step; ++j, ++i) {
      for (int64_t k = 0; k < rows; ++k) Accumulate(acc[0][k], load(i, k));
    }
    for (int64_t level = 1; level < kLevels; ++level) {
      for (int64_t k = 0; k < rows; ++k) {
        Accumulate(acc[level][k], acc[level - 1][k]);
        acc[level - 1][k] = Acc{};
      }
      if ((i & (level_mask << (level * level_power))) != 0) break;
    }
  }
  for (; i < size; ++i) {
    for (int64_t k = 0; k < rows; ++k) Accumulate(acc[0][k], load(i, k));
  }
  for (int64_t level = 1; level < kLevels; ++level) {
    for (int64_t k = 0; k < rows; ++k) Accumulate(acc[0][k], acc[level][k]);
  }
  return acc[0];
}

// ATen's row_sum: `size` terms read as rows of four (four interleaved accumulators), the
// leftover terms into the first, then the four added in order.
template <typename Acc, typename Load>
Acc InterleavedSum(int64_t size, const Load& load) {
  constexpr int64_t kInterleave = 4;
  const int64_t rows = size / kInterleave;
  std::vector<Acc> partial =
      CascadeRows<Acc>(rows, kInterleave, [&](int64_t i, int64_t k) { return load(i * kInterleave + k); });
  for (int64_t i = rows * kInterleave; i < size; ++i) Accumulate(partial[0], load(i));
  for (int64_t k = 1; k < kInterleave; ++k) Accumulate(partial[0], partial[k]);
  return partial[0];
}

// Eight consecutive entries from `start`.
Lanes LoadLanes(std::span<const float> values, int64_t start) {
  Lanes lanes;
  for (int64_t k = 0; k < kLanes; ++k) lanes.v[k] = values[start + k];
  return lanes;
}

}  // namespace

float TorchSum(std::span<const float> values) {
  const auto n = static_cast<int64_t>(values.size());
  if (n < kLanes) return InterleavedSum<float>(n, [&](int64_t i) { return values[i]; });
  const int64_t vectors = n / kLanes;
  const Lanes lanes = InterleavedSum<Lanes>(vectors, [&](int64_t i) { return LoadLanes(values, i * kLanes); });
  // The entries past the last whole vector come first, then the lanes.
  float sum = 0;
  for (int64_t i = vectors * kLanes; i < n; ++i) sum = sum + values[i];
  for (float lane : lanes.v) sum = sum + lane;
  return sum;
}

std::vector<float> TorchColumnSums(std::span<const float> matrix, int64_t rows, int64_t cols) {
  std::vector<float> sums(static_cast<size_t>(cols), 0.0f);
  auto at = [&](int64_t i, int64_t j) { return matrix[i * cols + j]; };
  int64_t j = 0;
  if (cols < kLanes) {
    // Too narrow for a vector: scalar columns, four at a time down the rows.
    for (; j + 3 < cols; j += 4) {
      const std::vector<float> four = CascadeRows<float>(rows, 4, [&](int64_t i, int64_t k) { return at(i, j + k); });
      std::copy(four.begin(), four.end(), sums.begin() + j);
    }
  } else {
    // Four vectors of columns at a time down the rows, then single vectors.
    for (; j + 4 * kLanes <= cols; j += 4 * kLanes) {
      const std::vector<Lanes> blocks = CascadeRows<Lanes>(
          rows, 4, [&](int64_t i, int64_t k) { return LoadLanes(matrix, i * cols + j + k * kLanes); });
      for (int64_t k = 0; k < 4; ++k) std::copy(blocks[k].v.begin(), blocks[k].v.end(), sums.begin() + j + k * kLanes);
    }
    for (; j + kLanes <= cols; j += kLanes) {
      const Lanes block = InterleavedSum<Lanes>(rows, [&](int64_t i) { return LoadLanes(matrix, i * cols + j); });
      std::copy(block.v.begin(), block.v.end(), sums.begin() + j);
    }
  }
  for (; j < cols; ++j) sums[j] = InterleavedSum<float>(rows, [&](int64_t i) { return at(i, j); });
  return sums;
}

int64_t TorchTopOne(std::span<const float> column) {
  const auto n = static_cast<int64_t>(column.size());
  if (n >= 64) return std::max_element(column.begin(), column.end()) - column.begin();
  // torch's queue: (value widened to double, index) pairs in index order, compared by value.
  std::vector<std::pair<double, int64_t>> queue(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) queue[i] = {column[i], i};
  std::nth_element(queue.begin(), queue.begin(), queue.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  return queue.front().second;
}

}  // namespace taot::planners
