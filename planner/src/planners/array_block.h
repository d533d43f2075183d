// One buffer for several fixed-length arrays of plain values: copying it is one memcpy, and
// only its growth allocates.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace taot::planners {

// PlacementState keeps its per-rank, per-expert and per-node arrays in one (placement_state.h):
// a plan copies its state for every trial start and best, and nine vectors a copy made nine
// allocations on a new planner's first plan (a third of a first plan's time at EP16 went to
// malloc and free) and nine memcpy calls on every later one.
class ArrayBlock {
 public:
  ArrayBlock() = default;
  ArrayBlock(const ArrayBlock& other) { *this = other; }
  ArrayBlock& operator=(const ArrayBlock& other) {
    if (this != &other) {
      Resize(other.size_);
      if (size_ > 0) std::memcpy(bytes_.get(), other.bytes_.get(), size_);
    }
    return *this;
  }
  ArrayBlock(ArrayBlock&& other) noexcept
      : bytes_(std::move(other.bytes_)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  ArrayBlock& operator=(ArrayBlock&& other) noexcept {
    bytes_ = std::move(other.bytes_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    return *this;
  }

  // New storage of `size` bytes for a new layout: the arrays laid out before end, and the new
  // ones begin in the new storage ([intro.object]: storage from operator new implicitly creates
  // the objects that Array then names; a copy into a block does the same by memcpy).
  void Renew(size_t size) {
    bytes_ = std::make_unique_for_overwrite<std::byte[]>(size);
    size_ = capacity_ = size;
  }
  // Makes the block `size` bytes of the layout it holds; what it held is unspecified if it had
  // to grow.
  void Resize(size_t size) {
    if (size > capacity_) {
      Renew(size);
    } else {
      size_ = size;
    }
  }
  size_t size() const { return size_; }

  // The `count` values of T that start `offset` bytes in (a multiple of alignof(T)); empty when
  // the block does not hold them all (never sized, moved from, or smaller), so that an index
  // into them fails the library's bounds check (the sanitizer build's -D_GLIBCXX_ASSERTIONS)
  // instead of reading its neighbour.
  template <typename T>
  std::span<T> Array(size_t offset, size_t count) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    if (offset + count * sizeof(T) > size_) return {};
    return {std::launder(reinterpret_cast<T*>(bytes_.get() + offset)), count};
  }
  template <typename T>
  std::span<const T> Array(size_t offset, size_t count) const {
    return const_cast<ArrayBlock&>(*this).Array<T>(offset, count);
  }

 private:
  std::unique_ptr<std::byte[]> bytes_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace taot::planners
