#include "taot/planner/plan_hash.h"

#include <array>
#include <bit>

namespace taot {
namespace {

constexpr uint64_t kPrime = 0x100000001b3ULL;

// kPrime^k mod 2^64 for k = 0..8.
constexpr std::array<uint64_t, 9> PrimePowers() {
  std::array<uint64_t, 9> p{};
  p[0] = 1;
  for (size_t k = 1; k < p.size(); ++k) p[k] = p[k - 1] * kPrime;
  return p;
}
constexpr std::array<uint64_t, 9> kPrimePowers = PrimePowers();

// FNV-1a, byte by byte, with one shortcut that gives the same result: a zero byte's step is
// only the multiply (XOR with zero changes nothing), so the zero bytes above a value's highest
// nonzero one are a single multiply by a power of the prime. Plans' integers are small, so most
// of their 8 bytes are such bytes.
class Fnv1a {
 public:
  void Add(int64_t value) {
    auto bits = static_cast<uint64_t>(value);
    const int significant = static_cast<int>((std::bit_width(bits) + 7) / 8);
    for (int i = 0; i < significant; ++i, bits >>= 8) {
      hash_ ^= bits & 0xff;
      hash_ *= kPrime;
    }
    hash_ *= kPrimePowers[8 - significant];
  }
  uint64_t hash() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace

uint64_t PlanHash(const Plan& plan) {
  Fnv1a h;
  h.Add(static_cast<int64_t>(plan.replicas.size()));
  for (const Replica& r : plan.replicas) {
    h.Add(r.expert);
    h.Add(r.rank);
  }
  h.Add(static_cast<int64_t>(plan.assignments.size()));
  for (const Assignment& a : plan.assignments) {
    h.Add(a.source);
    h.Add(a.expert);
    h.Add(a.rank);
    h.Add(a.tokens);
  }
  return h.hash();
}

}  // namespace taot
