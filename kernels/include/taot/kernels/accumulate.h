// dst[i] += src[i] for i < n, float32: a home expert adding a guest's returned gradient.
// The CPU reference and the CUDA launcher take the same arguments (DeepEP style: raw pointers,
// a size, a stream), and the tests hold one to the other.
#pragma once

#include <cstddef>

#if TAOT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace taot::kernels {

void AccumulateCpu(float* dst, const float* src, size_t n);

#if TAOT_WITH_CUDA
// Enqueues the add on `stream`; device pointers.
cudaError_t AccumulateCuda(float* dst, const float* src, size_t n, cudaStream_t stream);
#endif

}  // namespace taot::kernels
