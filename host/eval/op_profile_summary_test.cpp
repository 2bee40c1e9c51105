// The per-family report of `loom bench --profile`: steps summed and averaged, shares of the step,
// families without calls left out, most time first, and a backend's array shorter or longer than
// this SDK's family count.
#include "eval/op_profile_summary.hpp"

#include <gtest/gtest.h>

namespace loom::host {
namespace {

using loom::OpFamily;

std::vector<loom::OpFamilyTime> step(std::initializer_list<std::pair<OpFamily, loom::OpFamilyTime>> entries) {
  std::vector<loom::OpFamilyTime> totals(loom::kOpFamilyCount, loom::OpFamilyTime{0, 0});
  for (const auto& [family, time] : entries) totals[static_cast<size_t>(family)] = time;
  return totals;
}

TEST(OpProfileSummary, AveragesStepsAndSharesTheStepTime) {
  OpProfileSummary summary;
  auto a = step({{OpFamily::gemm, {6.0, 10}}, {OpFamily::optimizer, {1.0, 2}}});
  auto b = step({{OpFamily::gemm, {4.0, 10}}, {OpFamily::optimizer, {3.0, 2}}, {OpFamily::upload, {0.5, 3}}});
  summary.add_step(a.data(), a.size());
  summary.add_step(b.data(), b.size());
  EXPECT_EQ(summary.steps(), 2);
  EXPECT_DOUBLE_EQ(summary.ms_per_step(), 7.25);  // (7 + 7.5) / 2
  const std::vector<OpFamilyRow> rows = summary.rows(10.0);
  ASSERT_EQ(rows.size(), 3u);  // families without calls are not rows
  EXPECT_EQ(rows[0].family, "gemm");
  EXPECT_DOUBLE_EQ(rows[0].ms_per_step, 5.0);
  EXPECT_DOUBLE_EQ(rows[0].calls_per_step, 10.0);
  EXPECT_DOUBLE_EQ(rows[0].share_of_step, 0.5);
  EXPECT_EQ(rows[1].family, "optimizer");
  EXPECT_DOUBLE_EQ(rows[1].ms_per_step, 2.0);
  EXPECT_EQ(rows[2].family, "upload");
  EXPECT_DOUBLE_EQ(rows[2].calls_per_step, 1.5);
  EXPECT_DOUBLE_EQ(rows[2].share_of_step, 0.025);
}

TEST(OpProfileSummary, JsonHoldsEveryFamilyThatRan) {
  OpProfileSummary summary;
  auto a = step({{OpFamily::attention_forward, {2.0, 4}}, {OpFamily::attention_backward, {3.0, 4}}});
  summary.add_step(a.data(), a.size());
  const nlohmann::json profile = summary.to_json(8.0);
  ASSERT_EQ(profile.size(), 2u);
  EXPECT_DOUBLE_EQ(profile["attention_backward"]["ms_per_step"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(profile["attention_backward"]["calls_per_step"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(profile["attention_forward"]["share_of_step"].get<double>(), 0.25);
  const std::string table = summary.table(8.0, "  ");
  EXPECT_NE(table.find("attention_backward"), std::string::npos) << table;
  EXPECT_NE(table.find("between ops"), std::string::npos) << table;
  EXPECT_LT(table.find("attention_backward"), table.find("attention_forward")) << "most time first\n"
                                                                               << table;
}

TEST(OpProfileSummary, TakesWhatTheBackendKnows) {
  OpProfileSummary summary;
  // An older backend's shorter array, then a newer backend's longer one: the families this SDK
  // knows are read, the rest ignored.
  const loom::OpFamilyTime shorter[2] = {{1.0, 1}, {2.0, 1}};
  summary.add_step(shorter, 2);
  std::vector<loom::OpFamilyTime> longer(loom::kOpFamilyCount + 3, loom::OpFamilyTime{1.0, 1});
  summary.add_step(longer.data(), longer.size());
  EXPECT_EQ(summary.steps(), 2);
  EXPECT_DOUBLE_EQ(summary.ms_per_step(), (3.0 + static_cast<double>(loom::kOpFamilyCount)) / 2);
  EXPECT_EQ(summary.rows(0).size(), loom::kOpFamilyCount);
  EXPECT_DOUBLE_EQ(summary.rows(0)[0].share_of_step, 0.0) << "no step time, no share";
}

TEST(OpProfileSummary, EmptyBeforeTheFirstStep) {
  const OpProfileSummary summary;
  EXPECT_TRUE(summary.rows(5.0).empty());
  EXPECT_TRUE(summary.to_json(5.0).empty());
  EXPECT_DOUBLE_EQ(summary.ms_per_step(), 0.0);
}

}  // namespace
}  // namespace loom::host
