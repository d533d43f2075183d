#include "taot/planner/hardware_fields.h"

#include <array>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace taot {
namespace {

constexpr double kBig = 1e9;
constexpr double kMaxModelDimension = 1 << 20;

// Overloads for std::visit over a field's member, whichever struct and type it has.
template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
// Spelled out: clang 14 (the fuzz and sanitizer builds) does not deduce an aggregate's arguments.
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

const std::array<HardwareField, 12> kFields = {{
    {"gemm_tflops", &ClusterSpec::gemm_tflops, 1e-9, kBig},
    {"hbm_gbps", &ClusterSpec::hbm_gbps, 1e-9, kBig},
    {"nvlink_gbps", &ClusterSpec::nvlink_gbps, 1e-9, kBig},
    {"ib_gbps", &ClusterSpec::ib_gbps, 1e-9, kBig},
    {"nvlink_latency_us", &ClusterSpec::nvlink_latency_us, 0, kBig},
    {"ib_latency_us", &ClusterSpec::ib_latency_us, 0, kBig},
    {"gemm_launch_us", &ClusterSpec::gemm_launch_us, 0, kBig},
    {"nics_per_gpu", &ClusterSpec::nics_per_gpu, 1, 64},
    {"hidden", &ModelSpec::hidden, 1, kMaxModelDimension},
    {"expert_ffn", &ModelSpec::expert_ffn, 1, kMaxModelDimension},
    {"top_k", &ModelSpec::top_k, 1, kMaxModelDimension},
    {"dtype_bytes", &ModelSpec::dtype_bytes, 1, kMaxModelDimension},
}};

}  // namespace

HardwareSide SideOf(const HardwareField& field) {
  return std::holds_alternative<int ModelSpec::*>(field.member) ? HardwareSide::kModel : HardwareSide::kCluster;
}

std::span<const HardwareField> HardwareFields() { return kFields; }

std::variant<double*, int*> FieldIn(const HardwareField& field, ClusterSpec& cluster, ModelSpec& model) {
  return std::visit(Overloaded{[&](double ClusterSpec::*m) -> std::variant<double*, int*> { return &(cluster.*m); },
                               [&](int ClusterSpec::*m) -> std::variant<double*, int*> { return &(cluster.*m); },
                               [&](int ModelSpec::*m) -> std::variant<double*, int*> { return &(model.*m); }},
                    field.member);
}

std::string HardwareFieldKeys(HardwareSide side) {
  std::vector<std::string> keys;
  for (const HardwareField& f : kFields) {
    if (SideOf(f) == side) keys.emplace_back(f.key);
  }
  return absl::StrJoin(keys, ", ");
}

PlannerParams HardwareFieldParams(const ClusterSpec& cluster, const ModelSpec& model) {
  PlannerParams out;
  for (const HardwareField& f : kFields) {
    out[std::string(f.key)] =
        std::visit(Overloaded{[&](double ClusterSpec::*m) { return absl::StrFormat("%.17g", cluster.*m); },
                              [&](int ClusterSpec::*m) { return absl::StrCat(cluster.*m); },
                              [&](int ModelSpec::*m) { return absl::StrCat(model.*m); }},
                   f.member);
  }
  return out;
}

}  // namespace taot
