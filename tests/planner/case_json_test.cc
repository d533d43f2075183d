#include "taot/planner/case_json.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "taot/planner/plan_json.h"
#include "test_requests.h"

namespace taot {
namespace {

constexpr char kCase[] = R"({
  "topology": {"ranks": 4, "ranks_per_node": 2, "inter_node_cost": 2.5},
  "experts": 8, "slots_per_rank": 2, "expert_bytes": 1024, "target_imbalance_pct": 5,
  "resident": [{"expert": 0, "rank": 3}],
  "meta": {"anything": [1, 2]},
  "load": [[1, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 0, 0, 0], [9, 9, 9, 9, 9, 9, 9, 9], [1, 1, 1, 1, 1, 1, 1, 1]]
})";

TEST(CaseJsonTest, ParsesEveryField) {
  const PlanRequest r = ParseCase(kCase).value();
  EXPECT_EQ(r.ranks(), 4);
  EXPECT_EQ(r.topology().nodes(), 2);
  EXPECT_EQ(r.topology().cost(0, 2), 2.5);
  EXPECT_EQ(r.experts(), 8);
  EXPECT_EQ(r.slots_per_rank(), 2);
  EXPECT_EQ(r.expert_bytes(), 1024);
  EXPECT_EQ(r.target_imbalance_pct, 5.0);
  ASSERT_EQ(r.resident.size(), 1u);
  EXPECT_EQ(r.resident[0], (Replica{0, 3}));
  EXPECT_EQ(r.load.at(2, 7), 9);
}

TEST(CaseJsonTest, RoundTrips) {
  const PlanRequest r = ParseCase(kCase).value();
  const PlanRequest again = ParseCase(CaseToJson(r, R"({"seed": 1})")).value();
  EXPECT_EQ(again.load.data(), r.load.data());
  EXPECT_EQ(again.topology().node_of_rank(), r.topology().node_of_rank());
  EXPECT_EQ(again.topology().cost(1, 3), r.topology().cost(1, 3));
  EXPECT_EQ(again.resident, r.resident);
  EXPECT_EQ(again.target_imbalance_pct, r.target_imbalance_pct);
  EXPECT_EQ(again.expert_bytes(), r.expert_bytes());
}

TEST(CaseJsonTest, CostMatrixAndNodeOfRank) {
  const PlanRequest r = ParseCase(R"({"topology": {"ranks": 3, "node_of_rank": [0, 0, 1],
      "cost_matrix": [[0, 1, 4], [2, 0, 4], [4, 4, 0]]}, "experts": 3, "slots_per_rank": 1,
      "load": [[1, 2, 3], [1, 2, 3], [1, 2, 3]]})")
                            .value();
  EXPECT_FALSE(r.topology().symmetric());
  EXPECT_EQ(r.topology().cost(1, 0), 2.0);
  const PlanRequest again = ParseCase(CaseToJson(r)).value();
  EXPECT_EQ(again.topology().cost(1, 0), 2.0);
}

std::string Error(const std::string& text) {
  const auto r = ParseCase(text);
  EXPECT_FALSE(r.ok()) << text;
  return std::string(r.status().message());
}

TEST(CaseJsonTest, ErrorsNameTheProblem) {
  EXPECT_NE(Error("{").find("malformed JSON"), std::string::npos);
  EXPECT_EQ(Error("[]"), "input: must be an object, got []");
  EXPECT_EQ(Error(R"({"experts": 4})"), "topology: is required");
  const std::string base = R"({"topology": {"ranks": 2}, "experts": 4, "slots_per_rank": 1, )";
  EXPECT_EQ(Error(base + R"("load": [[1, 2, 3, 4], [1, 2, 3, -4]]})"),
            "load[1][3]: must be in [0, 1099511627776], got -4");
  EXPECT_EQ(Error(base + R"("load": [[1, 2, 3, 4], [1, 2, 3.5, 4]]})"), "load[1][2]: must be an integer, got 3.5");
  EXPECT_EQ(Error(base + R"("load": [[1, 2, 3, 4]]})"), "load: must have 2 rows, got 1");
  EXPECT_EQ(Error(base + R"("load": [[1, 2, 3], [1, 2, 3, 4]]})"), "load[0]: must have 4 entries, got 3");
  EXPECT_EQ(Error(base + R"("lod": [], "load": [[1, 2, 3, 4], [1, 2, 3, 4]]})"), "lod: unknown field");
  EXPECT_EQ(Error(R"({"topology": {"ranks": 2}, "experts": 3, "slots_per_rank": 1, "load": [[1,1,1],[1,1,1]]})"),
            "experts: 3 is not divisible by topology.ranks 2 (every rank hosts experts/ranks experts)");
  EXPECT_EQ(Error(R"({"topology": {"ranks": 2}, "experts": 2, "slots_per_rank": -1, "load": [[1,1],[1,1]]})"),
            "slots_per_rank: must be in [0, 2], got -1");
  EXPECT_EQ(Error(R"({"topology": {"ranks": "2"}, "experts": 2, "slots_per_rank": 1, "load": []})"),
            "topology.ranks: must be an integer, got \"2\"");
  EXPECT_EQ(Error(R"({"topology": {"ranks": 2, "ranks_per_node": 1, "node_of_rank": [0, 1]}, "experts": 2,
      "slots_per_rank": 1, "load": [[1,1],[1,1]]})"),
            "topology: give ranks_per_node or node_of_rank, not both");
  EXPECT_EQ(Error(R"({"topology": {"ranks": 2, "cost_matrix": [[0, 1], [1, 1]]}, "experts": 2,
      "slots_per_rank": 1, "load": [[1,1],[1,1]]})"),
            "topology.cost_matrix[1][1]: the diagonal must be 0 (no move), got 1");
  EXPECT_EQ(Error(base + R"("resident": [{"expert": 0, "rank": 0}], "load": [[1, 2, 3, 4], [1, 2, 3, 4]]})"),
            "resident[0]: rank 0 is the home of expert 0 (a replica lives on a guest rank)");
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// 2.1 of issue 11: deep nesting overflowed the stack (formatting the error, parsing, freeing).
TEST(CaseJsonTest, DeepNestingIsRefusedWithoutEchoingIt) {
  for (const int depth : {64, 70000, 100000}) {
    const std::string message = Error(R"({"meta": )" + Nested(depth) + "}");
    EXPECT_TRUE(Contains(message, "meta[0][0]")) << message;
    EXPECT_TRUE(Contains(message, "nests deeper than 64 arrays and objects")) << message;
    EXPECT_LT(message.size(), 200u);
    EXPECT_TRUE(Contains(Error(R"({"meta": )" + std::string(depth, '[')), "nests deeper than 64"));
  }
  // 64 levels are allowed (the document's object and 63 arrays): the error is about the type,
  // and quotes only a short prefix of the value.
  EXPECT_EQ(Error(R"({"topology": {"ranks": 1}, "experts": 1, "slots_per_rank": 0, "load": [[1]],
                   "meta": )" +
                  Nested(63) + "}"),
            "meta: must be an object, got [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[...");
}

// 2.5 of issue 11: a number beyond a double threw out of the reader.
TEST(CaseJsonTest, NumbersBeyondADoubleNameTheFieldAndPosition) {
  const std::string base = R"({"topology": {"ranks": 2}, "experts": 4, "slots_per_rank": 1, )";
  EXPECT_EQ(Error(base + R"("load": [[1, 2, 3, 4], [1, 2, 1e400, 4]]})"),
            "load[1][2]: number 1e400 is out of range (beyond a double), at line 1, column 93");
  EXPECT_EQ(Error("{\n\"meta\": {\"a\": [-1E+999]}}"),
            "meta.a[0]: number -1E+999 is out of range (beyond a double), at line 2, column 16");
  EXPECT_EQ(Error(R"({"experts": )" + std::string(5000, '7') + "}"),
            "experts: number 77777777777777777777... is out of range (beyond a double), at line 1, "
            "column 13");
}

// 2.4 of issue 11: a few bytes declaring 20,000 or 65,536 ranks allocated gigabytes.
TEST(CaseJsonTest, DeclaredSizesAreCheckedBeforeAllocating) {
  auto declared = [](int64_t ranks, int64_t experts, const std::string& topology_extra = "") {
    return absl::StrCat(R"({"topology": {"ranks": )", ranks, topology_extra, R"(}, "experts": )", experts,
                        R"(, "slots_per_rank": 1, "load": [[1, 2]]})");
  };
  EXPECT_EQ(Error(declared(20000, 20000)), "topology.ranks: must be in [1, 4096], got 20000");
  EXPECT_EQ(Error(declared(65536, 65536)), "topology.ranks: must be in [1, 4096], got 65536");
  EXPECT_EQ(Error(declared(1, 65537)), "experts: must be in [1, 65536], got 65537");
  EXPECT_EQ(Error(declared(4096, 65536)),
            "topology.ranks x experts: 4096 x 65536 load entries is more than the limit of "
            "16777216 (2^24)");
  EXPECT_EQ(Error(declared(4096, 4096)), "load: must have 4096 rows, got 1");
  EXPECT_EQ(Error(R"({"topology": {"ranks": 2, "cost_matrix": [[0]]}, "experts": 2,
      "slots_per_rank": 1, "load": [[1, 1], [1, 1]]})"),
            "topology.cost_matrix: must have 2 rows, got 1");
}

TEST(CaseJsonTest, LongValuesAreQuotedShort) {
  const std::string message = Error(R"({"topology": {"ranks": ")" + std::string(1 << 20, 'x') +
                                    R"("}, "experts": 1, "slots_per_rank": 0, "load": [[1]]})");
  EXPECT_EQ(message, R"(topology.ranks: must be an integer, got ")" + std::string(36, 'x') + "...");
  const std::string unterminated = Error(R"({"topology": ")" + std::string(1 << 20, 'y'));
  EXPECT_TRUE(Contains(unterminated, "malformed JSON")) << unterminated.substr(0, 300);
  EXPECT_LT(unterminated.size(), 300u);
}

TEST(CaseJsonTest, RepeatedKeysAreRefused) {
  EXPECT_EQ(Error(R"({"experts": 1, "experts": 2})"), "experts: given twice");
  EXPECT_EQ(Error(R"({"topology": {"ranks": 1, "ranks": 2}})"), "topology.ranks: given twice");
}

TEST(CaseJsonTest, OversizedDocumentsAreRefusedBeforeParsing) {
  const std::string message = Error(std::string(kMaxJsonBytes + 1, ' '));
  EXPECT_EQ(message, absl::StrCat("input: ", kMaxJsonBytes + 1, " bytes is more than the limit of ", kMaxJsonBytes,
                                  " (256 MiB)"));
}

TEST(PlanJsonTest, DeepNestingAndHugeNumbersAreRefused) {
  const std::string deep =
      std::string(ParsePlan(R"({"replicas": [], "assignments": )" + Nested(100000) + "}").status().message());
  EXPECT_TRUE(Contains(deep, "assignments[0][0]")) << deep;
  EXPECT_TRUE(Contains(deep, "nests deeper than 64")) << deep;
  EXPECT_EQ(
      std::string(
          ParsePlan(R"({"replicas": [], "assignments": [{"source": 0, "expert": 1, "rank": 2, "tokens": 1e400}]})")
              .status()
              .message()),
      "assignments[0].tokens: number 1e400 is out of range (beyond a double), at line 1, column 82");
}

// The same limits hold for a request however it was built (the daemon builds its own).
TEST(CaseJsonTest, AnErrorQuotingAMultiByteStringNeverThrows) {
  // The fuzzer's find (tests/fuzz/corpus/case_json_fuzz): the quoted prefix of a long string of
  // two-byte characters ended inside one, and formatting the error threw.
  std::string text = R"({"topology": "a)";
  for (int i = 0; i < 30; ++i) text += "\xc3\xa9";
  text += R"("})";
  absl::StatusOr<PlanRequest> parsed;
  ASSERT_NO_THROW(parsed = ParseCase(text));
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("topology"), std::string::npos) << parsed.status();
  // Invalid UTF-8 in the input is refused the same way.
  ASSERT_NO_THROW(parsed = ParseCase("{\"topology\": \"\xff\xfe\"}"));
  EXPECT_FALSE(parsed.ok());
}

TEST(RequestLimitsTest, ValidateRequestRefusesSizesPastTheLimits) {
  PlanRequest r;
  r.problem = std::make_shared<const Problem>(Problem{*Topology::Uniform(2), 2 * 65536, 0, 0});
  EXPECT_EQ(ValidateRequest(r).message(), "experts: must be in [1, 65536], got 131072");
  EXPECT_EQ(CheckRequestSize(4096, 8192).message(),
            "topology.ranks x experts: 4096 x 8192 load entries is more than the limit of "
            "16777216 (2^24)");
  EXPECT_EQ(CheckRequestSize(4097, 1, "--world-size").message(), "--world-size: must be in [1, 4096], got 4097");
  EXPECT_TRUE(CheckRequestSize(4096, 4096).ok());
}

TEST(PlanJsonTest, ParsesWhatItWrites) {
  Plan plan;
  plan.replicas = {{0, 3}, {5, 1}};
  plan.assignments = {{0, 0, 3, 7}, {2, 5, 1, 9}};
  const Plan back = ParsePlan(PlanToJson("x", plan, Scorecard{})).value();
  EXPECT_EQ(back.replicas, plan.replicas);
  EXPECT_EQ(back.assignments, plan.assignments);
  EXPECT_NE(ParsePlan(R"({"replicas": [], "assignments": [{"source": 0, "expert": 1, "rank": 2}]})")
                .status()
                .message()
                .find("assignments[0].tokens: is required"),
            std::string::npos);
}

}  // namespace
}  // namespace taot
