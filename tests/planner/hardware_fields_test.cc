#include "taot/planner/hardware_fields.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "planners/hardware_params.h"
#include "taot/planner/registry.h"

namespace taot {
namespace {

TEST(HardwareFieldsTest, ListsTheClustersFieldsThenTheModels) {
  EXPECT_EQ(HardwareFieldKeys(HardwareSide::kCluster),
            "gemm_tflops, hbm_gbps, nvlink_gbps, ib_gbps, nvlink_latency_us, ib_latency_us, gemm_launch_us, "
            "nics_per_gpu");
  EXPECT_EQ(HardwareFieldKeys(HardwareSide::kModel), "hidden, expert_ffn, top_k, dtype_bytes");
  ASSERT_FALSE(HardwareFields().empty());
  EXPECT_EQ(SideOf(HardwareFields().front()), HardwareSide::kCluster);
  EXPECT_EQ(SideOf(HardwareFields().back()), HardwareSide::kModel);
}

TEST(HardwareFieldsTest, TheTaotPlannersHelpListsThemFromTheTable) {
  const std::vector<std::string> help = PlannerRegistry::BuiltIn().Describe("taot")->params;
  for (const char* line : {"gemm_tflops, hbm_gbps, nvlink_gbps, ib_gbps, nvlink_latency_us, ib_latency_us, "
                           "gemm_launch_us, nics_per_gpu: override the cluster preset (docs/model.md)",
                           "hidden, expert_ffn, top_k, dtype_bytes: override the model preset"}) {
    EXPECT_NE(std::find(help.begin(), help.end(), line), help.end()) << line;
  }
}

TEST(HardwareFieldsTest, WhatIsWrittenReadsBackBitForBit) {
  ClusterSpec c;
  c.gemm_tflops = 1.0 / 3;
  c.hbm_gbps = 3350.125;
  c.nvlink_gbps = 0.1 + 0.2;
  c.ib_gbps = 47.5;
  c.nvlink_latency_us = 0;
  c.ib_latency_us = 1e-7;
  c.gemm_launch_us = 12.75;
  c.nics_per_gpu = 3;
  ModelSpec m;
  m.hidden = 4096;
  m.expert_ffn = 1408;
  m.top_k = 6;
  m.dtype_bytes = 1;
  const PlannerParams params = HardwareFieldParams(c, m);
  EXPECT_EQ(params.size(), HardwareFields().size());
  planners::ParamReader reader("taot", params);
  absl::StatusOr<planners::Hardware> hw = planners::ReadHardware(reader);
  ASSERT_TRUE(hw.ok()) << hw.status();
  ASSERT_TRUE(reader.Finish().ok()) << reader.Finish();
  EXPECT_EQ(hw->cluster.gemm_tflops, c.gemm_tflops);
  EXPECT_EQ(hw->cluster.hbm_gbps, c.hbm_gbps);
  EXPECT_EQ(hw->cluster.nvlink_gbps, c.nvlink_gbps);
  EXPECT_EQ(hw->cluster.ib_gbps, c.ib_gbps);
  EXPECT_EQ(hw->cluster.nvlink_latency_us, c.nvlink_latency_us);
  EXPECT_EQ(hw->cluster.ib_latency_us, c.ib_latency_us);
  EXPECT_EQ(hw->cluster.gemm_launch_us, c.gemm_launch_us);
  EXPECT_EQ(hw->cluster.nics_per_gpu, c.nics_per_gpu);
  EXPECT_EQ(hw->cluster.gpus_per_node, ClusterSpec{}.gpus_per_node);  // not a parameter
  EXPECT_EQ(hw->model.hidden, m.hidden);
  EXPECT_EQ(hw->model.expert_ffn, m.expert_ffn);
  EXPECT_EQ(hw->model.top_k, m.top_k);
  EXPECT_EQ(hw->model.dtype_bytes, m.dtype_bytes);
  EXPECT_EQ(hw->model.experts, ModelPreset("qwen3-30b-a3b")->experts);  // the preset's, not a parameter
}

TEST(HardwareFieldsTest, AbsentKeysKeepThePresetsValues) {
  const PlannerParams params = {{"cluster", "h100"}, {"hidden", "1024"}};  // outlives the reader
  planners::ParamReader reader("taot", params);
  absl::StatusOr<planners::Hardware> hw = planners::ReadHardware(reader);
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_EQ(hw->cluster.nvlink_gbps, ClusterPreset("h100")->nvlink_gbps);
  EXPECT_EQ(hw->model.hidden, 1024);
  EXPECT_EQ(hw->model.expert_ffn, ModelPreset("qwen3-30b-a3b")->expert_ffn);
}

TEST(HardwareFieldsTest, AValueOutOfItsFieldsRangeIsRefusedByName) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"nics_per_gpu", "0"}, {"nvlink_gbps", "0"}, {"ib_latency_us", "-1"}, {"top_k", "2000000"}}) {
    const PlannerParams params = {{key, value}};  // outlives the reader
    planners::ParamReader reader("taot", params);
    (void)planners::ReadHardware(reader);
    const absl::Status s = reader.Finish();
    EXPECT_FALSE(s.ok()) << key;
    EXPECT_NE(s.message().find(key), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace taot
