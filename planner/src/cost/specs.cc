#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "taot/planner/cluster_spec.h"
#include "taot/planner/model_spec.h"

namespace taot {
namespace {

absl::Status Positive(const char* field, double value) {
  if (!std::isfinite(value) || value <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": must be a positive number, got ", value));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterSpec> ClusterPreset(const std::string& name) {
  ClusterSpec c;
  if (name == "h800") return c;
  if (name == "h100") {
    c.nvlink_gbps = 360;
    return c;
  }
  return absl::NotFoundError(absl::StrCat("cluster: unknown preset '", name, "' (known: h800, h100)"));
}

absl::Status ValidateCluster(const ClusterSpec& c) {
  for (auto [field, value] : {std::pair{"cluster.gpus_per_node", double(c.gpus_per_node)},
                              {"cluster.gemm_tflops", c.gemm_tflops},
                              {"cluster.hbm_gbps", c.hbm_gbps},
                              {"cluster.nvlink_gbps", c.nvlink_gbps},
                              {"cluster.ib_gbps", c.ib_gbps},
                              {"cluster.nics_per_gpu", double(c.nics_per_gpu)}}) {
    if (absl::Status s = Positive(field, value); !s.ok()) return s;
  }
  for (auto [field, value] : {std::pair{"cluster.nvlink_latency_us", c.nvlink_latency_us},
                              {"cluster.ib_latency_us", c.ib_latency_us},
                              {"cluster.gemm_launch_us", c.gemm_launch_us}}) {
    if (!std::isfinite(value) || value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": must be a number >= 0, got ", value));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> ModelPresetNames() { return {"qwen3-30b-a3b", "deepseek-v3"}; }

absl::StatusOr<ModelSpec> ModelPreset(const std::string& name) {
  ModelSpec m;
  m.name = name;
  m.tokens_per_rank = 4096;  // one 4096-token sequence per rank per microbatch
  m.dtype_bytes = 2;
  const double seq = 4096;
  if (name == "qwen3-30b-a3b") {
    // Hugging Face Qwen/Qwen3-30B-A3B config: hidden 2048, moe_intermediate_size 768, 128
    // experts, 8 per token, 48 layers; attention 32 query heads and 4 key/value heads of 128.
    m.hidden = 2048;
    m.expert_ffn = 768;
    m.experts = 128;
    m.top_k = 8;
    m.moe_layers = 48;
    m.dense_params_per_layer = 2048.0 * 4096 * 2 + 2048.0 * 512 * 2;  // q, o; k, v
    // Causal attention: QK^T and AV, 2 FLOPs per multiply-add, half the pairs.
    m.attention_flops_per_token = 2.0 * 2.0 * seq * 4096 * 0.5;
    return m;
  }
  if (name == "deepseek-v3") {
    // Hugging Face deepseek-ai/DeepSeek-V3 config: hidden 7168, moe_intermediate_size 2048, 256
    // routed experts, 8 per token, 58 MoE layers (of 61), one shared expert; MLA attention with
    // 128 heads (query-key dim 192, value dim 128), about 187M parameters per layer.
    m.hidden = 7168;
    m.expert_ffn = 2048;
    m.experts = 256;
    m.top_k = 8;
    m.moe_layers = 58;
    m.dense_params_per_layer = 187e6 + 3.0 * 7168 * 2048;  // attention + shared expert
    m.attention_flops_per_token = 2.0 * seq * 128 * (192 + 128) * 0.5;
    return m;
  }
  return absl::NotFoundError(
      absl::StrCat("model: unknown preset '", name, "' (known: ", absl::StrJoin(ModelPresetNames(), ", "), ")"));
}

absl::Status ValidateModel(const ModelSpec& m) {
  for (auto [field, value] : {std::pair{"model.hidden", double(m.hidden)},
                              {"model.expert_ffn", double(m.expert_ffn)},
                              {"model.experts", double(m.experts)},
                              {"model.top_k", double(m.top_k)},
                              {"model.moe_layers", double(m.moe_layers)},
                              {"model.tokens_per_rank", double(m.tokens_per_rank)},
                              {"model.dtype_bytes", double(m.dtype_bytes)}}) {
    if (absl::Status s = Positive(field, value); !s.ok()) return s;
  }
  if (m.top_k > m.experts) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.top_k: must be at most model.experts (", m.experts, "), got ", m.top_k));
  }
  if (!std::isfinite(m.dense_params_per_layer) || m.dense_params_per_layer < 0 ||
      !std::isfinite(m.attention_flops_per_token) || m.attention_flops_per_token < 0) {
    return absl::InvalidArgumentError("model.dense_params_per_layer / attention_flops_per_token: must be >= 0");
  }
  return absl::OkStatus();
}

}  // namespace taot
