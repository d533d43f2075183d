// --device cuda:N that cannot be used is an error naming the device, at once, and leaves the
// registry's taot-block on the CPU (runs everywhere CUDA is built, with a device or without).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "taot/kernels/device_block_planner.h"
#include "taot/planner/run_planner.h"
#include "test_requests.h"

namespace taot::kernels {
namespace {

int Devices() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

TEST(DeviceErrorsTest, ADeviceThatCannotBeUsedIsNamedAndChangesNothing) {
  const int missing = Devices() == 0 ? 0 : 1023;
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  const absl::Status bound = PlanBlocksOnDevice(registry, missing);
  EXPECT_EQ(bound.code(), absl::StatusCode::kFailedPrecondition) << bound;
  EXPECT_NE(bound.message().find("cuda:" + std::to_string(missing) + ": "), std::string::npos) << bound;
  // taot-block is still the CPU build: it plans here, without a device.
  const PlanRequest request = testing::RandomRequest(16, 64, 2, 3);
  absl::StatusOr<ScoredPlan> plan = RunPlanner(*registry.Create("taot-block").value(), request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->plan, RunPlanner(*PlannerRegistry::BuiltIn().Create("taot-block").value(), request)->plan);
  EXPECT_EQ(MakeDeviceBlockPlanner(missing, {}).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(DeviceErrorsTest, BadParametersAreNamedBeforeTheDeviceIsTouched) {
  const absl::Status s = MakeDeviceBlockPlanner(0, {{"target_imbalance_pct", "-1"}}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("target_imbalance_pct"), std::string::npos) << s;
  EXPECT_EQ(MakeDeviceBlockPlanner(0, {{"bogus", "1"}}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DeviceErrorsTest, RebindingAnUnknownPlannerIsNotFound) {
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  const absl::Status s = registry.Rebind("no-such-planner", nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("taot-block"), std::string::npos) << s;  // the known ones are listed
}

}  // namespace
}  // namespace taot::kernels
