// The data-plane kernels on a GPU (a benchmark, not a test; scripts/gpu_check.sh runs it where a
// device is lent): reroute and count times for one rank's pairs, pack/unpack throughput as a
// fraction of a device-to-device cudaMemcpyAsync of the same bytes, and the gradient add's
// throughput as a fraction of that copy's; and taot-block's planning on the device (one block per
// layer) at EP64 for 1 and 48 layers per launch, beside taot's and taot-block's CPU plans of the
// same layers on one core in the same run. Each figure is the median of --repeats timed runs
// (CUDA events; the CPU's by its clock) after a warm-up. Prints markdown.
//   build/tests/bench/kernels_gpu_bench [--repeats 50]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "taot/kernels/accumulate.h"
#include "taot/kernels/device_block_planner.h"
#include "taot/kernels/expert_weights.h"
#include "taot/kernels/plan_layers.h"
#include "taot/kernels/reroute.h"
#include "taot/planner/block_host.h"
#include "taot/planner/load_stats.h"
#include "taot/planner/registry.h"
#include "taot/sim/case_generator.h"
#include "taot/sim/workload_families.h"
#include "taot/tools/parse_or_exit.h"

namespace {

using namespace taot::kernels;

void Check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "kernels_gpu_bench: %s: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}

void* Alloc(size_t bytes) {
  void* p = nullptr;
  Check(cudaMalloc(&p, bytes + 256), "cudaMalloc");
  Check(cudaMemset(p, 0, bytes + 256), "cudaMemset");
  return p;
}

// Median microseconds of `repeats` runs of `launch` on `stream`, after one warm-up.
double MedianMicros(int repeats, cudaStream_t stream, const std::function<void()>& launch) {
  cudaEvent_t start, stop;
  Check(cudaEventCreate(&start), "event");
  Check(cudaEventCreate(&stop), "event");
  launch();
  Check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<float> ms;
  for (int i = 0; i < repeats; ++i) {
    Check(cudaEventRecord(start, stream), "record");
    launch();
    Check(cudaEventRecord(stop, stream), "record");
    Check(cudaEventSynchronize(stop), "sync");
    float t = 0;
    Check(cudaEventElapsedTime(&t, start, stop), "elapsed");
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2] * 1000.0;
}

template <typename T>
T* Upload(const std::vector<T>& host) {
  T* d = static_cast<T*>(Alloc(host.size() * sizeof(T)));
  Check(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return d;
}

void BenchReroute(int repeats, cudaStream_t stream) {
  std::printf("| EP | E | pairs | CountExpertsCuda us | RerouteCuda us (counts included) |\n|---|---|---|---|---|\n");
  struct Shape {
    int32_t ranks, experts;
    int64_t pairs;
  };
  for (const Shape s : {Shape{16, 128, 32768}, Shape{64, 256, 32768}, Shape{64, 256, 262144}, Shape{256, 256, 32768}}) {
    std::mt19937 rng(1);
    std::vector<int32_t> ids(static_cast<size_t>(s.pairs));
    for (int32_t& e : ids) e = rng() % 4 == 0 ? 7 : static_cast<int32_t>(rng() % static_cast<uint32_t>(s.experts));
    std::vector<int64_t> routed(static_cast<size_t>(s.experts), 0);
    for (int32_t e : ids) ++routed[e];
    // Expert 7 (a quarter of the pairs) split over two guests beside its home, slot 0 on each.
    const int32_t home = 7 / (s.experts / s.ranks);
    std::vector<int32_t> rank = {(home + 1) % s.ranks, (home + 2) % s.ranks};
    std::sort(rank.begin(), rank.end());
    std::vector<int32_t> begin(static_cast<size_t>(s.experts) + 1, 0);
    for (int32_t e = 8; e <= s.experts; ++e) begin[e] = 2;
    const int32_t local = s.experts / s.ranks + 2;
    std::vector<int64_t> end = {routed[7] / 3, 2 * (routed[7] / 3)};
    std::vector<int32_t> virtual_id = {rank[0] * local + s.experts / s.ranks, rank[1] * local + s.experts / s.ranks};
    RouteTable t;
    t.ranks = s.ranks;
    t.experts = s.experts;
    t.slots = 2;
    t.guest_begin = Upload(begin);
    t.guest_rank = Upload(rank);
    t.pair_end = Upload(end);
    t.virtual_id = Upload(virtual_id);
    int32_t* d_ids = Upload(ids);
    auto* virt = static_cast<int32_t*>(Alloc(ids.size() * 4));
    auto* dest = static_cast<int32_t*>(Alloc(ids.size() * 4));
    auto* sends = static_cast<int64_t*>(Alloc(static_cast<size_t>(s.ranks) * 8));
    auto* order = static_cast<int64_t*>(Alloc(ids.size() * 8));
    auto* counts = static_cast<int64_t*>(Alloc(static_cast<size_t>(s.experts) * 8));
    auto* check = static_cast<RouteCheck*>(Alloc(sizeof(RouteCheck)));
    const size_t bytes = RerouteCudaWorkspaceBytes(s.pairs, t);
    void* workspace = Alloc(bytes);
    const double count_us = MedianMicros(repeats, stream, [&] {
      Check(CountExpertsCuda(d_ids, s.pairs, s.experts, counts, check, stream), "CountExpertsCuda");
    });
    const double reroute_us = MedianMicros(repeats, stream, [&] {
      Check(RerouteCuda(d_ids, s.pairs, t, virt, dest, sends, order, workspace, bytes, check, stream), "RerouteCuda");
    });
    std::printf("| %d | %d | %lld | %.1f | %.1f |\n", s.ranks, s.experts, static_cast<long long>(s.pairs), count_us,
                reroute_us);
    for (const void* p :
         {static_cast<const void*>(t.guest_begin), static_cast<const void*>(t.guest_rank),
          static_cast<const void*>(t.pair_end), static_cast<const void*>(t.virtual_id), static_cast<const void*>(d_ids),
          static_cast<const void*>(virt), static_cast<const void*>(dest), static_cast<const void*>(sends),
          static_cast<const void*>(order), static_cast<const void*>(counts), static_cast<const void*>(check),
          static_cast<const void*>(workspace)}) {
      cudaFree(const_cast<void*>(p));
    }
  }
}

void BenchPackAndAccumulate(int repeats, cudaStream_t stream) {
  // 8 experts of a Qwen3-30B-A3B layer in bf16: 3 x 2048 x 768 x 2 bytes each, contiguous; and the
  // same bytes with the expert dimension in the middle ([rows, experts, cols], 3 x 2048 runs).
  const int experts = 8;
  const int64_t expert_bytes = int64_t{3} * 2048 * 768 * 2, row = 768 * 2;
  char* weights = static_cast<char*>(Alloc(static_cast<size_t>(expert_bytes) * experts));
  char* packed = static_cast<char*>(Alloc(static_cast<size_t>(expert_bytes) * experts));
  std::vector<int32_t> list(experts);
  for (int i = 0; i < experts; ++i) list[i] = i;
  int32_t* d_list = Upload(list);
  ExpertTensors contiguous, strided;
  contiguous.count = strided.count = 1;
  contiguous.tensor[0] = {weights, expert_bytes, 1, expert_bytes, 0};
  strided.tensor[0] = {weights, row, expert_bytes / row, row, row * experts};
  const size_t total = static_cast<size_t>(expert_bytes) * experts;
  const double copy_us = MedianMicros(repeats, stream, [&] {
    Check(cudaMemcpyAsync(packed, weights, total, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  });
  std::printf("\n| operation | bytes | us | GB/s | / cudaMemcpyAsync D2D |\n|---|---|---|---|---|\n");
  auto row_of = [&](const char* name, double us) {
    std::printf("| %s | %zu | %.1f | %.1f | %.2f |\n", name, total, us, static_cast<double>(total) / us / 1e3,
                copy_us / us);
  };
  row_of("cudaMemcpyAsync D2D", copy_us);
  row_of("PackExpertsCuda, contiguous", MedianMicros(repeats, stream, [&] {
           Check(PackExpertsCuda(contiguous, d_list, experts, packed, stream), "pack");
         }));
  row_of("UnpackExpertsCuda, contiguous", MedianMicros(repeats, stream, [&] {
           Check(UnpackExpertsCuda(contiguous, d_list, experts, packed, stream), "unpack");
         }));
  row_of("PackExpertsCuda, [rows, experts, cols]", MedianMicros(repeats, stream, [&] {
           Check(PackExpertsCuda(strided, d_list, experts, packed, stream), "pack strided");
         }));
  // The gradient add reads dst and a bf16 source and writes dst: 10 bytes per element, against the
  // copy's 2 x its bytes (read and write).
  const size_t n = total / 4;
  GradSources bf16;
  bf16.type = GradType::kBfloat16;
  bf16.count = 1;
  bf16.source[0] = packed;
  const double add_us = MedianMicros(repeats, stream, [&] {
    Check(AccumulateManyCuda(reinterpret_cast<float*>(weights), bf16, n / 2, stream), "accumulate");
  });
  const double add_rate = static_cast<double>(n / 2) * 10 / add_us,
               copy_rate = 2.0 * static_cast<double>(total) / copy_us;
  std::printf(
      "\n| AccumulateManyCuda bf16 into fp32 | elements %zu | %.1f us | %.1f GB/s moved | %.2f of the copy's %.1f GB/s "
      "|\n",
      n / 2, add_us, add_rate / 1e3, add_rate / copy_rate, copy_rate / 1e3);
  cudaFree(weights);
  cudaFree(packed);
  cudaFree(d_list);
}

// taot-block at EP64 (E = 256, K = 2, target 2%): the workload families as layers, 1 per launch
// and 48 per launch (the 12 families 4 times: a microbatch's MoE layers), against the CPU.
void BenchPlanner(int repeats, cudaStream_t stream) {
  std::vector<taot::PlanRequest> requests;
  for (const taot::sim::WorkloadFamily& family : taot::sim::WorkloadFamilies(64)) {
    taot::sim::CaseOptions o;
    o.ranks = 64;
    o.experts = 256;
    family.apply(o);
    requests.push_back(taot::sim::GenerateCase(o).value().request);
    requests.back().target_imbalance_pct = 2.0;
  }
  const taot::BlockShapeArrays arrays(*requests.front().problem);
  const int R = arrays.shape.ranks;
  taot::block::Shape shape = arrays.shape;
  shape.node_of = Upload(arrays.node_of);
  shape.by_node = Upload(arrays.by_node);
  shape.node_start = Upload(arrays.node_start);
  shape.cost = Upload(arrays.cost);
  constexpr int kLayers = 48;
  const size_t loads = static_cast<size_t>(R) * shape.experts;
  std::vector<taot::block::Layer> layers(kLayers);
  for (int i = 0; i < kLayers; ++i) {
    const taot::PlanRequest& request = requests[static_cast<size_t>(i) % requests.size()];
    auto* load = static_cast<int64_t*>(Alloc(loads * 8));
    Check(cudaMemcpy(load, request.load.row(0).data(), loads * 8, cudaMemcpyHostToDevice), "copy");
    const auto pieces = static_cast<size_t>(taot::block::MaxPieces(shape));
    const auto entries = static_cast<size_t>(taot::block::MaxEntries(shape));
    layers[i] = {
        .load = load,
        .cap = taot::LoadCap(taot::TotalTokens(request.load), R, 2.0),
        .piece_expert = static_cast<int32_t*>(Alloc(pieces * 4)),
        .piece_rank = static_cast<int32_t*>(Alloc(pieces * 4)),
        .piece_tokens = static_cast<int64_t*>(Alloc(pieces * 8)),
        .entry_piece = static_cast<int32_t*>(Alloc(entries * 4)),
        .entry_source = static_cast<int32_t*>(Alloc(entries * 4)),
        .entry_tokens = static_cast<int64_t*>(Alloc(entries * 8)),
        .counts = static_cast<int32_t*>(Alloc(8)),
        .max_load = static_cast<int64_t*>(Alloc(8)),
        .scratch = static_cast<int64_t*>(Alloc(static_cast<size_t>(taot::block::ScratchWords(shape)) * 8)),
        .scratch32 = static_cast<int32_t*>(Alloc(static_cast<size_t>(taot::block::Scratch32Words(shape)) * 4))};
  }
  auto* d_layers = static_cast<taot::block::Layer*>(Alloc(layers.size() * sizeof(taot::block::Layer)));
  Check(cudaMemcpy(d_layers, layers.data(), layers.size() * sizeof(taot::block::Layer), cudaMemcpyHostToDevice),
        "copy");
  std::printf("## taot-block on the device, EP64 / E256, K = 2, target 2%%\n\n");
  std::printf("| what | us per launch | us per layer |\n|---|---|---|\n");
  for (int count : {1, kLayers}) {
    const double us =
        MedianMicros(repeats, stream, [&] { Check(PlanLayersCuda(shape, d_layers, count, stream), "PlanLayersCuda"); });
    std::printf("| device, %d layer%s per launch | %.1f | %.1f |\n", count, count == 1 ? "" : "s", us, us / count);
  }
  // The daemon's path (--device cuda:0): a batch through the registry planner, the loads' upload
  // and the plans' download included.
  {
    std::unique_ptr<taot::Planner> device = taot::kernels::MakeDeviceBlockPlanner(0, {}).value();
    std::vector<const taot::PlanRequest*> batch;
    for (int i = 0; i < kLayers; ++i) batch.push_back(&requests[static_cast<size_t>(i) % requests.size()]);
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
      const auto start = std::chrono::steady_clock::now();
      for (const auto& plan : device->MakePlans(batch)) Check(plan.ok() ? cudaSuccess : cudaErrorUnknown, "MakePlans");
      times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
    const double us = times[times.size() / 2];
    std::printf("| device planner (the daemon's --device), %d layers with upload and download | %.1f | %.1f |\n",
                kLayers, us, us / kLayers);
  }
  // The CPU, one core: every family once per round, the median round per layer.
  for (const char* name : {"taot", "taot-block"}) {
    std::unique_ptr<taot::Planner> planner = taot::PlannerRegistry::BuiltIn().Create(name).value();
    std::vector<double> per_layer;
    for (int i = 0; i < repeats; ++i) {
      const auto start = std::chrono::steady_clock::now();
      for (const taot::PlanRequest& request : requests) (void)planner->MakePlan(request);
      per_layer.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                          static_cast<double>(requests.size()));
    }
    std::nth_element(per_layer.begin(), per_layer.begin() + static_cast<std::ptrdiff_t>(per_layer.size() / 2),
                     per_layer.end());
    std::printf("| CPU (one core), %s, 1 layer | %.1f | %.1f |\n", name, per_layer[per_layer.size() / 2],
                per_layer[per_layer.size() / 2]);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 50;
  CLI::App app("kernels_gpu_bench: the data-plane kernels and taot-block on a device (scripts/gpu_check.sh)");
  app.add_option("--repeats", repeats, "Runs per measurement (default 50)")->check(CLI::Range(1, 100000));
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "kernels_gpu_bench")) return *code;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "kernels_gpu_bench: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop;
  Check(cudaGetDeviceProperties(&prop, 0), "properties");
  std::printf("device: %s\n\n", prop.name);
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "stream");
  BenchReroute(repeats, stream);
  BenchPackAndAccumulate(repeats, stream);
  BenchPlanner(repeats, stream);
  cudaStreamDestroy(stream);
  return 0;
}
