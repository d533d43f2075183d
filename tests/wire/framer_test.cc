#include "taot/wire/framer.h"

#include <gtest/gtest.h>

#include <grpcpp/support/proto_buffer_reader.h>

#include "taot/v1/planner.pb.h"

namespace taot::wire {
namespace {

// A plan whose encoding is long enough to need `replicas` replicas' worth of bytes.
std::shared_ptr<const std::string> EncodedPlan(int64_t step, int replicas) {
  taot::v1::Plan plan;
  plan.set_step(step);
  for (int i = 0; i < replicas; ++i) {
    taot::v1::Replica* r = plan.add_replicas();
    r->set_expert(i);
    r->set_rank(i % 7);
  }
  return std::make_shared<const std::string>(plan.SerializeAsString());
}

taot::v1::StreamResponse Parsed(grpc::ByteBuffer& buffer) {
  taot::v1::StreamResponse response;
  grpc::ProtoBufferReader reader(&buffer);
  EXPECT_TRUE(response.ParseFromZeroCopyStream(&reader));
  return response;
}

TEST(FramerTest, TheHeadIsTheKeyAndTheLengthAsVarints) {
  EXPECT_EQ(LengthDelimitedHead(1, 0), std::string("\x0A\x00", 2));
  EXPECT_EQ(LengthDelimitedHead(1, 127), "\x0A\x7F");
  EXPECT_EQ(LengthDelimitedHead(1, 300), "\x0A\xAC\x02");
  EXPECT_EQ(LengthDelimitedHead(16, 1), "\x82\x01\x01");  // a key past one byte
}

TEST(FramerTest, ElementsOfEverySizeParseBackInOrder) {
  // Empty, one-byte, two-byte and three-byte lengths.
  const std::vector<int> sizes = {0, 3, 40, 3000};
  std::vector<std::shared_ptr<const std::string>> plans;
  std::vector<SharedBytes> elements;
  for (size_t i = 0; i < sizes.size(); ++i) {
    plans.push_back(EncodedPlan(static_cast<int64_t>(i), sizes[i]));
    elements.push_back({*plans.back(), plans.back()});
  }
  ASSERT_GT(plans[3]->size(), 16384u);
  grpc::ByteBuffer buffer = RepeatedFieldBuffer(taot::v1::StreamResponse::kPlansFieldNumber, std::move(elements));
  const taot::v1::StreamResponse response = Parsed(buffer);
  ASSERT_EQ(response.plans_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(response.plans(i).step(), i);
    EXPECT_EQ(response.plans(i).replicas_size(), sizes[i]);
    EXPECT_EQ(response.plans(i).SerializeAsString(), *plans[i]);
  }
}

TEST(FramerTest, NoElementsIsTheEmptyMessage) {
  grpc::ByteBuffer buffer = RepeatedFieldBuffer(1, {});
  EXPECT_EQ(buffer.Length(), 0u);
  EXPECT_EQ(Parsed(buffer).plans_size(), 0);
}

TEST(FramerTest, TheBytesStayAliveUntilTheBufferGoes) {
  std::shared_ptr<const std::string> plan = EncodedPlan(5, 10);
  const std::weak_ptr<const std::string> watch = plan;
  {
    grpc::ByteBuffer buffer = MessageBuffer({*plan, plan});
    plan.reset();
    ASSERT_FALSE(watch.expired());
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(buffer.Dump(&slices).ok());
    ASSERT_EQ(slices.size(), 1u);
    EXPECT_EQ(slices[0].begin(), reinterpret_cast<const uint8_t*>(watch.lock()->data()));  // not a copy
    taot::v1::Plan parsed;
    ASSERT_TRUE(parsed.ParseFromArray(slices[0].begin(), static_cast<int>(slices[0].size())));
    EXPECT_EQ(parsed.step(), 5);
  }
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace taot::wire
