// One buffer for several fixed-length arrays of plain values: copying it is one memcpy, and
// only its growth allocates.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
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

  // Makes the block `size` bytes; what it held is unspecified if it had to grow.
  void Resize(size_t size) {
    if (size > capacity_) {
      // New storage for bytes implicitly creates the arrays that At then names ([intro.object]).
      bytes_ = std::make_unique_for_overwrite<std::byte[]>(size);
      capacity_ = size;
    }
    size_ = size;
  }
  size_t size() const { return size_; }

  // The array of T that starts `offset` bytes in (a multiple of alignof(T), at most 16); null
  // while the block has never held anything.
  template <typename T>
  T* At(size_t offset) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    return bytes_ ? std::launder(reinterpret_cast<T*>(bytes_.get() + offset)) : nullptr;
  }
  template <typename T>
  const T* At(size_t offset) const {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    return bytes_ ? std::launder(reinterpret_cast<const T*>(bytes_.get() + offset)) : nullptr;
  }

 private:
  std::unique_ptr<std::byte[]> bytes_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace taot::planners
