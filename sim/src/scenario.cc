#include "taot/sim/scenario.h"

#include <fstream>
#include <sstream>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "taot/planner/hardware_fields.h"
#include "taot/planner/json_fields.h"
#include "taot/planner/plan_request.h"

namespace taot::sim {
namespace {

using json_fields::Join;
using nlohmann::json;

// Reads one JSON value into a field, keeping the field's value when the key is absent.
class FieldReader {
 public:
  FieldReader(json_fields::Reader& in, const json& obj, std::string path)
      : in_(in), obj_(obj), path_(std::move(path)) {}
  void Number(std::string_view key, double& field) {
    if (const json* v = in_.Member(obj_, path_, key, false)) field = in_.Number(*v, Join(path_, key));
  }
  void Int(std::string_view key, int& field, int64_t min, int64_t max) {
    if (const json* v = in_.Member(obj_, path_, key, false)) {
      field = static_cast<int>(in_.Int(*v, Join(path_, key), min, max));
    }
  }
  void Int64(std::string_view key, int64_t& field, int64_t min, int64_t max) {
    if (const json* v = in_.Member(obj_, path_, key, false)) field = in_.Int(*v, Join(path_, key), min, max);
  }
  void String(std::string_view key, std::string& field) {
    if (const json* v = in_.Member(obj_, path_, key, false)) {
      if (v->is_string()) {
        field = v->get<std::string>();
      } else {
        in_.Fail(Join(path_, key), absl::StrCat("must be a string, got ", json_fields::Show(*v)));
      }
    }
  }

 private:
  json_fields::Reader& in_;
  const json& obj_;
  std::string path_;
};

constexpr int64_t kMaxInt = 1 << 30;

// The fields of one side that a planner parameter may also set (hardware_fields.h). Integers get
// the table's limits; numbers are checked with the whole scenario (ValidateScenario: "must be a
// positive number").
void ReadHardwareFields(FieldReader& f, HardwareSide side, ClusterSpec& cluster, ModelSpec& model) {
  for (const HardwareField& field : HardwareFields()) {
    if (SideOf(field) != side) continue;
    const std::variant<double*, int*> value = FieldIn(field, cluster, model);
    if (double* const* d = std::get_if<double*>(&value)) {
      f.Number(field.key, **d);
    } else {
      f.Int(field.key, *std::get<int*>(value), static_cast<int64_t>(field.min), static_cast<int64_t>(field.max));
    }
  }
}

// The keys an object for `side` may hold: "preset", the side's hardware fields and `own`.
std::vector<std::string_view> SideKeys(HardwareSide side, std::initializer_list<std::string_view> own) {
  std::vector<std::string_view> keys = {"preset"};
  for (const HardwareField& field : HardwareFields()) {
    if (SideOf(field) == side) keys.push_back(field.key);
  }
  keys.insert(keys.end(), own.begin(), own.end());
  return keys;
}

// "cluster": "h100" or {"preset": "h100", "nvlink_gbps": 300, ...}
void ReadCluster(json_fields::Reader& in, const json& v, Scenario& sc) {
  std::string preset = sc.cluster_name;
  const json* obj = nullptr;
  if (v.is_string()) {
    preset = v.get<std::string>();
  } else if ((obj = in.Object(v, "cluster")) != nullptr) {
    in.OnlyKeys(*obj, "cluster", SideKeys(HardwareSide::kCluster, {"gpus_per_node"}));
    FieldReader(in, *obj, "cluster").String("preset", preset);
  }
  if (!in.ok()) return;
  absl::StatusOr<ClusterSpec> base = ClusterPreset(preset);
  if (!base.ok()) return in.Fail("cluster", std::string(base.status().message()));
  sc.cluster_name = preset;
  sc.cluster = *base;
  if (obj == nullptr) return;
  FieldReader f(in, *obj, "cluster");
  ClusterSpec& c = sc.cluster;
  f.Int("gpus_per_node", c.gpus_per_node, 1, 1024);
  ReadHardwareFields(f, HardwareSide::kCluster, c, sc.model);
}

// "model": "deepseek-v3" or {"preset": "deepseek-v3", "tokens_per_rank": 8192, ...}
void ReadModel(json_fields::Reader& in, const json& v, Scenario& sc) {
  std::string preset = sc.model.name;
  const json* obj = nullptr;
  if (v.is_string()) {
    preset = v.get<std::string>();
  } else if ((obj = in.Object(v, "model")) != nullptr) {
    in.OnlyKeys(*obj, "model",
                SideKeys(HardwareSide::kModel, {"experts", "moe_layers", "tokens_per_rank", "dense_params_per_layer",
                                                "attention_flops_per_token"}));
    FieldReader(in, *obj, "model").String("preset", preset);
  }
  if (!in.ok()) return;
  absl::StatusOr<ModelSpec> base = ModelPreset(preset);
  if (!base.ok()) return in.Fail("model", std::string(base.status().message()));
  sc.model = *base;
  if (obj == nullptr) return;
  FieldReader f(in, *obj, "model");
  ModelSpec& m = sc.model;
  ReadHardwareFields(f, HardwareSide::kModel, sc.cluster, m);
  f.Int("experts", m.experts, 1, 65536);
  f.Int("moe_layers", m.moe_layers, 1, 1024);
  f.Int64("tokens_per_rank", m.tokens_per_rank, 1, kMaxInt);
  f.Number("dense_params_per_layer", m.dense_params_per_layer);
  f.Number("attention_flops_per_token", m.attention_flops_per_token);
}

void ReadWorkload(json_fields::Reader& in, const json& v, Scenario& sc) {
  const json* obj = in.Object(v, "workload");
  if (obj == nullptr) return;
  in.OnlyKeys(*obj, "workload",
              {"trace", "layers", "steps", "microbatches", "imbalance", "noise", "drift", "burst_rate", "burst_experts",
               "burst_steps", "burst_factor", "seed"});
  FieldReader f(in, *obj, "workload");
  SequenceOptions& w = sc.workload;
  f.String("trace", sc.trace);
  f.Int("layers", w.layers, 1, 1024);
  f.Int("steps", w.steps, 1, 100000);
  f.Int("microbatches", w.microbatches, 1, 1024);
  f.Number("imbalance", w.imbalance);
  f.Number("noise", w.noise);
  f.Number("drift", w.drift);
  f.Number("burst_rate", w.burst_rate);
  f.Int("burst_experts", w.burst_experts, 0, 65536);
  f.Int("burst_steps", w.burst_steps, 1, 100000);
  f.Number("burst_factor", w.burst_factor);
  int64_t seed = static_cast<int64_t>(w.seed);
  f.Int64("seed", seed, 0, int64_t{1} << 53);
  w.seed = static_cast<uint64_t>(seed);
}

}  // namespace

absl::StatusOr<PlanningMode> ParsePlanningMode(const std::string& name) {
  if (name == "local") return PlanningMode::kLocal;
  if (name == "remote") return PlanningMode::kRemote;
  if (name == "predictive") return PlanningMode::kPredictive;
  return absl::InvalidArgumentError(absl::StrCat("mode: must be local, remote or predictive, got '", name, "'"));
}

const char* PlanningModeName(PlanningMode mode) {
  switch (mode) {
    case PlanningMode::kLocal:
      return "local";
    case PlanningMode::kRemote:
      return "remote";
    case PlanningMode::kPredictive:
      return "predictive";
  }
  return "?";
}

Scenario DefaultScenario() {
  Scenario sc;
  sc.cluster = *ClusterPreset(sc.cluster_name);
  sc.model = *ModelPreset("qwen3-30b-a3b");
  sc.workload.layers = sc.model.moe_layers;
  sc.workload.steps = 4;
  sc.workload.microbatches = 4;
  return sc;
}

absl::StatusOr<Scenario> ReadScenario(const std::string& path, Scenario base) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open the scenario file"));
  std::stringstream text;
  text << file.rdbuf();
  auto prefixed = [&](const absl::Status& s) { return absl::Status(s.code(), absl::StrCat(path, ": ", s.message())); };
  absl::StatusOr<json> parsed = json_fields::Parse(text.str());
  if (!parsed.ok()) return prefixed(parsed.status());
  json_fields::Reader in;
  const json* root = in.Object(*parsed, "");
  if (root != nullptr) {
    in.OnlyKeys(*root, "",
                {"cluster", "model", "ranks", "slots_per_rank", "inter_node_cost", "mode", "rpc_us",
                 "reuse_chosen_target", "workload"});
  }
  if (!in.ok()) return prefixed(in.status());
  Scenario sc = std::move(base);
  if (const json* v = in.Member(*root, "", "cluster", false)) ReadCluster(in, *v, sc);
  if (const json* v = in.Member(*root, "", "model", false)) ReadModel(in, *v, sc);
  FieldReader f(in, *root, "");
  f.Int("ranks", sc.ranks, 1, kMaxRanks);
  f.Int("slots_per_rank", sc.slots_per_rank, 0, 65536);
  f.Number("inter_node_cost", sc.inter_node_cost);
  f.Number("rpc_us", sc.rpc_us);
  if (const json* v = in.Member(*root, "", "reuse_chosen_target", false)) {
    if (v->is_boolean()) {
      sc.reuse_chosen_target = v->get<bool>();
    } else {
      in.Fail("reuse_chosen_target", absl::StrCat("must be true or false, got ", json_fields::Show(*v)));
    }
  }
  std::string mode = PlanningModeName(sc.mode);
  f.String("mode", mode);
  if (const json* v = in.Member(*root, "", "workload", false)) ReadWorkload(in, *v, sc);
  if (!in.ok()) return prefixed(in.status());
  absl::StatusOr<PlanningMode> parsed_mode = ParsePlanningMode(mode);
  if (!parsed_mode.ok()) return prefixed(parsed_mode.status());
  sc.mode = *parsed_mode;
  if (absl::Status s = ValidateScenario(sc); !s.ok()) return prefixed(s);
  return sc;
}

absl::Status ValidateScenario(const Scenario& sc) {
  if (absl::Status s = ValidateCluster(sc.cluster); !s.ok()) return s;
  if (absl::Status s = ValidateModel(sc.model); !s.ok()) return s;
  auto bad = [](const char* field, auto value, const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", rule, ", got ", value));
  };
  if (sc.ranks <= 0) return bad("ranks", sc.ranks, "must be >= 1");
  if (sc.trace.empty() && sc.model.experts % sc.ranks != 0) {
    return bad("ranks", sc.ranks, absl::StrCat("must divide model.experts (", sc.model.experts, ")"));
  }
  if (sc.slots_per_rank < 0) return bad("slots_per_rank", sc.slots_per_rank, "must be >= 0");
  if (!std::isfinite(sc.inter_node_cost) || sc.inter_node_cost < 1) {
    return bad("inter_node_cost", sc.inter_node_cost, "must be >= 1 (the intra-node cost)");
  }
  if (!std::isfinite(sc.rpc_us) || sc.rpc_us < 0) return bad("rpc_us", sc.rpc_us, "must be >= 0");
  if (!sc.trace.empty()) return absl::OkStatus();
  if (absl::Status s = ValidateSequenceOptions(WorkloadOptions(sc)); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("workload.", s.message()));
  }
  return absl::OkStatus();
}

SequenceOptions WorkloadOptions(const Scenario& sc) {
  SequenceOptions o = sc.workload;
  o.ranks = sc.ranks;
  o.experts = sc.model.experts;
  o.top_k = sc.model.top_k;
  o.tokens_per_rank = sc.model.tokens_per_rank;
  return o;
}

}  // namespace taot::sim
