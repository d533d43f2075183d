// 64-bit FNV-1a (Fowler, Noll and Vo; offset basis 0xcbf29ce484222325, prime 0x100000001b3):
// the hash behind PlanHash and the names ranks compare, the same on every platform.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <string_view>

namespace taot {
namespace fnv1a_internal {

inline constexpr uint64_t kPrime = 0x100000001b3ULL;

// kPrime^k mod 2^64 for k = 0..8.
constexpr std::array<uint64_t, 9> PrimePowers() {
  std::array<uint64_t, 9> p{};
  p[0] = 1;
  for (size_t k = 1; k < p.size(); ++k) p[k] = p[k - 1] * kPrime;
  return p;
}
inline constexpr std::array<uint64_t, 9> kPrimePowers = PrimePowers();

}  // namespace fnv1a_internal

class Fnv1a {
 public:
  void AddBytes(std::string_view bytes) {
    for (const char c : bytes) {
      hash_ ^= static_cast<unsigned char>(c);
      hash_ *= kPrime;
    }
  }
  // The 8 bytes of `value`, little-endian, with one shortcut that gives the same result: a zero
  // byte's step is only the multiply (XOR with zero changes nothing), so the zero bytes above a
  // value's highest nonzero one are a single multiply by a power of the prime. Plans' integers
  // are small, so most of their 8 bytes are such bytes.
  void AddInt64(int64_t value) {
    auto bits = static_cast<uint64_t>(value);
    const int significant = static_cast<int>((std::bit_width(bits) + 7) / 8);
    for (int i = 0; i < significant; ++i, bits >>= 8) {
      hash_ ^= bits & 0xff;
      hash_ *= kPrime;
    }
    hash_ *= kPrimePowers[8 - significant];
  }
  // The same as AddInt64(value) where value's bits (as uint64_t) fit in `bytes` bytes (1 to 8):
  // bytes past the significant ones are zero, and a zero byte's step is only the multiply, so
  // adding more bytes than AddInt64 would changes nothing. The last byte's multiply takes the
  // remaining powers of the prime with it. A caller that fixes `bytes` for a run of values (a
  // field's widest, FieldBytes) gets a loop whose trip count never changes, where AddInt64's
  // varies with each value and its branches mispredict.
  void AddInt64Bytes(int64_t value, int bytes) {
    auto bits = static_cast<uint64_t>(value);
    for (int i = 1; i < bytes; ++i, bits >>= 8) {
      hash_ ^= bits & 0xff;
      hash_ *= kPrime;
    }
    hash_ ^= bits;  // the last byte: above it, bits are zero
    hash_ *= kPrimePowers[9 - bytes];
  }
  // The bytes AddInt64Bytes needs for every value whose bits OR together to `any_bits`.
  static int FieldBytes(uint64_t any_bits) { return std::max(1, static_cast<int>((std::bit_width(any_bits) + 7) / 8)); }
  uint64_t hash() const { return hash_; }

 private:
  static constexpr uint64_t kPrime = fnv1a_internal::kPrime;
  static constexpr const std::array<uint64_t, 9>& kPrimePowers = fnv1a_internal::kPrimePowers;

  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace taot
