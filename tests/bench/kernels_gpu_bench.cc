// The data-plane kernels on a GPU (a benchmark, not a test; scripts/gpu_check.sh runs it where a
// device is lent): reroute and count times for one rank's pairs, pack/unpack throughput as a
// fraction of a device-to-device cudaMemcpyAsync of the same bytes, and the gradient add's
// throughput as a fraction of that copy's; and taot-block's planning on the device (one block per
// layer), 1 and 48 layers per launch, on the workload families at EP64 and on the simulator's
// layers at EP64 and EP128 (with the share of the forward pass the `overhead` experiment
// reports), beside taot's and taot-block's CPU plans of the same layers on one core in the same
// run. Each figure is the median of --repeats timed runs
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
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "family_timing.h"
#include "taot/kernels/accumulate.h"
#include "taot/kernels/device_block_planner.h"
#include "taot/kernels/expert_weights.h"
#include "taot/kernels/plan_layers.h"
#include "taot/kernels/reroute.h"
#include "taot/planner/block_host.h"
#include "taot/planner/load_stats.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "taot/sim/scenario.h"
#include "taot/sim/sequence_workload.h"
#include "taot/sim/simulator.h"
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

// Median microseconds of `repeats` runs of `run` on the CPU, by its clock, after one warm-up.
double MedianCpuMicros(int repeats, const std::function<void()>& run) {
  run();
  std::vector<double> us;
  for (int i = 0; i < repeats; ++i) {
    const taot::bench::Clock::time_point start = taot::bench::Clock::now();
    run();
    us.push_back(taot::bench::MicrosSince(start));
  }
  return taot::bench::Median(std::move(us));
}

// Layers to plan, all of one problem: the workload families at EP64 (E = 256, K = 2, target 2%),
// or one microbatch's MoE layers as the simulator plans them (docs/model.md). Where they are the
// simulator's, each figure is also given as the share of the forward pass that the `overhead`
// experiment reports: planning on the critical path of every MoE layer.
struct BenchLayers {
  std::string title;
  std::vector<taot::PlanRequest> requests;
  int moe_layers = 0;             // > 0 for the simulator's layers
  double forward_us_no_plan = 0;  // one microbatch's modelled forward pass, less its planning
};

// The 12 families 4 times: as many layers as a microbatch of the simulator's model has.
BenchLayers FamilyLayers() {
  BenchLayers out;
  out.title = "EP64 / E256, K = 2, target 2%: the 12 workload families, 4 times";
  for (int round = 0; round < 4; ++round) {
    for (const taot::sim::WorkloadFamily& family : taot::sim::WorkloadFamilies(64)) {
      out.requests.push_back(taot::bench::FamilyCase(family, 64, 256, 2, 1));
      out.requests.back().target_imbalance_pct = 2.0;
    }
  }
  return out;
}

// The default scenario's layers at EP`ranks` (Qwen3-30B-A3B, 128 experts, K = 2): those of
// microbatch 1 of step 1, each with the replicas taot-block's plan of microbatch 0 left
// resident, as the simulator's `overhead` experiment plans them; and the forward pass under
// taot-block's plans.
BenchLayers SimulatorLayers(int ranks) {
  taot::sim::Scenario sc = taot::sim::DefaultScenario();
  sc.ranks = ranks;
  sc.workload.layers = std::min(sc.workload.layers, sc.model.moe_layers);
  const std::unique_ptr<taot::sim::SequenceWorkload> workload =
      taot::sim::SequenceWorkload::Create(taot::sim::WorkloadOptions(sc)).value();
  const std::unique_ptr<taot::Planner> planner = taot::PlannerRegistry::BuiltIn().Create("taot-block").value();
  BenchLayers out;
  out.title = absl::StrFormat("EP%d / E%d, K = %d: the simulator's layers of one microbatch", ranks, sc.model.experts,
                              sc.slots_per_rank);
  out.moe_layers = sc.model.moe_layers;
  const taot::sim::RequestObserver keep = [&](const taot::sim::PlanPoint& point, const taot::PlanRequest& request) {
    if (point.step == 1 && point.microbatch == 1) out.requests.push_back(request);
    return absl::OkStatus();
  };
  const taot::sim::SimResult result = taot::sim::Simulate(sc, *workload, *planner, keep).value();
  // The forward pass counts the planning of each of the model's MoE layers (Simulate).
  out.forward_us_no_plan = result.forward_ms * 1e3 - result.plan_time_us * out.moe_layers;
  return out;
}

// The layers on the device, each with its load, residents, outputs and scratch, as PlanLayersCuda
// takes them.
struct DeviceLayers {
  taot::block::Shape shape;
  taot::block::Layer* layers = nullptr;  // device memory
};

DeviceLayers ToDevice(const std::vector<taot::PlanRequest>& requests) {
  const taot::BlockShapeArrays arrays(*requests.front().problem);
  DeviceLayers out{.shape = arrays.shape};
  taot::block::Shape& shape = out.shape;
  shape.node_of = Upload(arrays.node_of);
  shape.by_node = Upload(arrays.by_node);
  shape.node_start = Upload(arrays.node_start);
  shape.cost = Upload(arrays.cost);
  const size_t loads = static_cast<size_t>(shape.ranks) * shape.experts;
  const auto pieces = static_cast<size_t>(taot::block::MaxPieces(shape));
  const auto entries = static_cast<size_t>(taot::block::MaxEntries(shape));
  std::vector<taot::Replica> sorted;
  std::vector<int32_t> pairs;
  std::vector<taot::block::Layer> layers;
  for (const taot::PlanRequest& request : requests) {
    auto* load = static_cast<int64_t*>(Alloc(loads * 8));
    Check(cudaMemcpy(load, request.load.row(0).data(), loads * 8, cudaMemcpyHostToDevice), "copy");
    taot::ResidentPairs(request.resident, sorted, pairs);
    layers.push_back(
        {.load = load,
         .cap = taot::BlockCap(request, {}),
         .resident = pairs.empty() ? nullptr : Upload(pairs),
         .resident_count = static_cast<int32_t>(request.resident.size()),
         .piece_expert = static_cast<int32_t*>(Alloc(pieces * 4)),
         .piece_rank = static_cast<int32_t*>(Alloc(pieces * 4)),
         .piece_tokens = static_cast<int64_t*>(Alloc(pieces * 8)),
         .entry_piece = static_cast<int32_t*>(Alloc(entries * 4)),
         .entry_source = static_cast<int32_t*>(Alloc(entries * 4)),
         .entry_tokens = static_cast<int64_t*>(Alloc(entries * 8)),
         .counts = static_cast<int32_t*>(Alloc(8)),
         .max_load = static_cast<int64_t*>(Alloc(8)),
         .scratch = static_cast<int64_t*>(Alloc(static_cast<size_t>(taot::block::ScratchWords(shape)) * 8)),
         .scratch32 = static_cast<int32_t*>(Alloc(static_cast<size_t>(taot::block::Scratch32Words(shape)) * 4))});
  }
  out.layers = Upload(layers);
  return out;
}

// taot-block on the device (one layer per launch, each in turn, as a rank's local planning
// launches it at its layer; all of them in one launch, as a batch of a microbatch's rounds; and
// the daemon's path, uploads and downloads included), beside taot's and taot-block's plans of
// the same layers on one CPU core: taot's with the checks and the hash around it, the stage the
// simulator times.
void BenchPlanner(const BenchLayers& bench, int repeats, cudaStream_t stream) {
  const std::vector<taot::PlanRequest>& requests = bench.requests;
  const int count = static_cast<int>(requests.size());
  const DeviceLayers device = ToDevice(requests);
  std::printf("## taot-block on the device: %s\n\n", bench.title.c_str());
  const bool simulated = bench.moe_layers > 0;
  std::printf(simulated
                  ? "| what | us per layer | share of the forward pass (under taot-block's plans) |\n|---|---|---|\n"
                  : "| what | us per layer |\n|---|---|\n");
  const auto row = [&](const std::string& what, double us) {
    if (!simulated) {
      std::printf("| %s | %.1f |\n", what.c_str(), us);
      return;
    }
    const double planning_us = us * bench.moe_layers;
    std::printf("| %s | %.1f | %.2f%% |\n", what.c_str(), us,
                100.0 * planning_us / (bench.forward_us_no_plan + planning_us));
  };
  double one_per_launch = 0;
  for (int i = 0; i < count; ++i) {
    one_per_launch += MedianMicros(
        repeats, stream, [&] { Check(PlanLayersCuda(device.shape, device.layers + i, 1, stream), "PlanLayersCuda"); });
  }
  row("device, 1 layer per launch (the mean over the layers)", one_per_launch / count);
  row(absl::StrFormat("device, %d layers in one launch", count),
      MedianMicros(repeats, stream, [&] {
        Check(PlanLayersCuda(device.shape, device.layers, count, stream), "PlanLayersCuda");
      }) / count);
  {
    std::unique_ptr<taot::Planner> planner = taot::kernels::MakeDeviceBlockPlanner(0, {}).value();
    std::vector<const taot::PlanRequest*> batch;
    for (const taot::PlanRequest& request : requests) batch.push_back(&request);
    row(absl::StrFormat("device planner (the daemon's --device), %d layers, uploads and downloads included", count),
        MedianCpuMicros(repeats, [&] {
          for (const auto& plan : planner->MakePlans(batch))
            Check(plan.ok() ? cudaSuccess : cudaErrorUnknown, "MakePlans");
        }) / count);
  }
  for (const char* name : {"taot", "taot-block"}) {
    std::unique_ptr<taot::Planner> planner = taot::PlannerRegistry::BuiltIn().Create(name).value();
    const bool stage = std::string_view(name) == "taot";
    row(absl::StrFormat("CPU (one core), %s%s", name, stage ? ", the whole stage (checks and hash)" : ""),
        MedianCpuMicros(repeats, [&] {
          for (const taot::PlanRequest& request : requests) {
            uint64_t hash = 0;
            Check((stage ? taot::CheckedPlan(*planner, request, &hash) : planner->MakePlan(request)).ok()
                      ? cudaSuccess
                      : cudaErrorUnknown,
                  name);
          }
        }) / count);
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
  BenchPlanner(FamilyLayers(), repeats, stream);
  // The simulator's `overhead` experiment misses its goal (0.5% of the forward pass) at EP128 on
  // the CPU (docs/performance.md): these are the figures that say whether the device meets it.
  for (int ranks : {64, 128}) BenchPlanner(SimulatorLayers(ranks), repeats, stream);
  cudaStreamDestroy(stream);
  return 0;
}
