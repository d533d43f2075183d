// Tokens each source rank routes to each expert, for one layer and one microbatch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace taot {

// Range rules (checked by ValidateRequest): every entry is in [0, kMaxTokensPerEntry] and the
// sum of all entries is at most kMaxTotalTokens, so every sum the planners form is exact in
// int64 and in a double.
inline constexpr int64_t kMaxTokensPerEntry = int64_t{1} << 40;
inline constexpr int64_t kMaxTotalTokens = int64_t{1} << 52;

// Dense row-major sources x experts matrix of token counts.
class LoadMatrix {
 public:
  LoadMatrix() = default;
  LoadMatrix(int sources, int experts)
      : sources_(sources), experts_(experts), data_(static_cast<size_t>(sources) * experts, 0) {}

  int sources() const { return sources_; }
  int experts() const { return experts_; }
  int64_t& at(int source, int expert) { return data_[index(source, expert)]; }
  int64_t at(int source, int expert) const { return data_[index(source, expert)]; }
  std::span<const int64_t> row(int source) const {
    return {data_.data() + index(source, 0), static_cast<size_t>(experts_)};
  }
  std::span<int64_t> row(int source) { return {data_.data() + index(source, 0), static_cast<size_t>(experts_)}; }
  const std::vector<int64_t>& data() const { return data_; }
  // Every entry, row after row: a collective (an all-gather of every rank's row) writes straight
  // into it.
  std::span<int64_t> values() { return data_; }

 private:
  size_t index(int source, int expert) const { return static_cast<size_t>(source) * experts_ + expert; }
  int sources_ = 0;
  int experts_ = 0;
  std::vector<int64_t> data_;
};

}  // namespace taot
