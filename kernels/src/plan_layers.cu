#include "taot/kernels/plan_layers.h"

namespace taot::kernels {
namespace {

__global__ void PlanLayers(block::Shape shape, const block::Layer* layers) {
  block::PlanLayer(shape, layers[blockIdx.x], static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x));
}

}  // namespace

cudaError_t PlanLayersCuda(const block::Shape& shape, const block::Layer* layers, int32_t count, cudaStream_t stream,
                           int threads) {
  if (count < 0 || threads < 1 || threads > 1024) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  PlanLayers<<<count, threads, 0, stream>>>(shape, layers);
  return cudaGetLastError();
}

}  // namespace taot::kernels
