// A device copy of a host vector for the CUDA tests (label `gpu`), freed with the object.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <vector>

namespace taot::kernels::testing {

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : size_(host.size()) {
    EXPECT_EQ(cudaMalloc(&data_, Bytes() + 1), cudaSuccess);
    if (!host.empty()) {
      EXPECT_EQ(cudaMemcpy(data_, host.data(), Bytes(), cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  explicit DeviceArray(size_t size) : DeviceArray(std::vector<T>(size)) {}
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() { return data_; }
  std::vector<T> Host() const {
    std::vector<T> out(size_);
    if (size_ > 0) {
      EXPECT_EQ(cudaMemcpy(out.data(), data_, Bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return out;
  }

 private:
  size_t Bytes() const { return size_ * sizeof(T); }
  T* data_ = nullptr;
  size_t size_;
};

}  // namespace taot::kernels::testing
