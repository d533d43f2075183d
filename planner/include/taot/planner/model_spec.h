// The MoE model whose steps are modelled (docs/model.md gives the presets' sources).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace taot {

struct ModelSpec {
  std::string name;
  int hidden = 0;      // model dimension
  int expert_ffn = 0;  // intermediate size of one routed expert
  int experts = 0;     // routed experts per MoE layer
  int top_k = 0;       // experts per token
  int moe_layers = 0;
  int64_t tokens_per_rank = 0;  // per microbatch
  int dtype_bytes = 2;          // bf16
  // Parameters of the rest of an MoE layer that every token runs through (attention, shared
  // experts), and the attention's sequence-dependent FLOPs per token (scores and values).
  double dense_params_per_layer = 0;
  double attention_flops_per_token = 0;

  // Gate, up and down projections of one expert.
  int64_t expert_bytes() const { return int64_t{3} * hidden * expert_ffn * dtype_bytes; }
  double expert_flops_per_token() const { return 2.0 * 3.0 * hidden * expert_ffn; }
  int64_t token_bytes() const { return int64_t{hidden} * dtype_bytes; }
};

// "qwen3-30b-a3b" or "deepseek-v3".
absl::StatusOr<ModelSpec> ModelPreset(const std::string& name);
std::vector<std::string> ModelPresetNames();

absl::Status ValidateModel(const ModelSpec& model);

}  // namespace taot
