#include "taot/kernels/block_tables.h"

namespace taot::kernels {
namespace {

// One thread per layer: the tables are a pass over the plan's pieces and entries.
__global__ void BlockRouteTables(block::Shape shape, const block::Layer* layers, int32_t rank, const RouteArrays* outs,
                                 int32_t* slot_scratch) {
  const int32_t i = static_cast<int32_t>(blockIdx.x);
  BlockRouteTable(shape, layers[i], rank, outs[i], slot_scratch + int64_t{i} * shape.ranks);
}

}  // namespace

cudaError_t BlockRouteTablesCuda(const block::Shape& shape, const block::Layer* layers, int32_t count, int32_t rank,
                                 const RouteArrays* outs, int32_t* slot_scratch, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  BlockRouteTables<<<count, 1, 0, stream>>>(shape, layers, rank, outs, slot_scratch);
  return cudaGetLastError();
}

}  // namespace taot::kernels
