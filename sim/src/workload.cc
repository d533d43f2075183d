#include "taot/sim/workload.h"

#include <utility>
#include <vector>

namespace taot::sim {
namespace {

class MemoryWorkload final : public Workload {
 public:
  explicit MemoryWorkload(const Workload& source) : shape_(source.shape()) {
    for (int step = 0; step < shape_.steps; ++step) {
      for (int layer = 0; layer < shape_.layers; ++layer) {
        for (int mb = 0; mb < shape_.microbatches; ++mb) loads_.push_back(source.Load(step, layer, mb));
      }
    }
  }
  WorkloadShape shape() const override { return shape_; }
  LoadMatrix Load(int step, int layer, int microbatch) const override {
    return loads_[(static_cast<size_t>(step) * shape_.layers + layer) * shape_.microbatches + microbatch];
  }

 private:
  WorkloadShape shape_;
  std::vector<LoadMatrix> loads_;
};

class SingleMatrixWorkload final : public Workload {
 public:
  explicit SingleMatrixWorkload(LoadMatrix load) : load_(std::move(load)) {}
  WorkloadShape shape() const override { return {load_.sources(), load_.experts(), 1, 1, 1}; }
  LoadMatrix Load(int, int, int) const override { return load_; }

 private:
  LoadMatrix load_;
};

}  // namespace

std::unique_ptr<Workload> SingleMatrix(LoadMatrix load) {
  return std::make_unique<SingleMatrixWorkload>(std::move(load));
}

std::unique_ptr<Workload> Materialize(const Workload& workload) { return std::make_unique<MemoryWorkload>(workload); }

}  // namespace taot::sim
