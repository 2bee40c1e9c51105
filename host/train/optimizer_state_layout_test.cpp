// The optimizer state's parameter layout: recorded, read back, and applied by name, so state
// written in one declaration order lands on the same parameters in another; mismatches are refused
// naming the file and the parameter.
#include "train/optimizer_state_layout.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loom::host {
namespace {

ParameterTable table_of(const std::vector<std::pair<std::string, int64_t>>& parameters) {
  ParameterTable table;
  for (const auto& [name, count] : parameters) table.add(name, {count}, loom::ParameterInit::zeros, false, 0);
  return table;
}

// State whose every element is 1000·(parameter index + 1) + element index, in `table`'s layout.
std::vector<float> labelled_state(const ParameterTable& table) {
  std::vector<float> state(table.total_elements(), -1.0f);
  for (size_t p = 0; p < table.entries().size(); ++p) {
    const ParameterEntry& e = table.entries()[p];
    for (size_t i = 0; i < e.count; ++i) state[e.offset + i] = static_cast<float>(1000 * (p + 1) + i);
  }
  return state;
}

TEST(OptimizerStateLayout, RecordRoundTrips) {
  const ParameterTable table = table_of({{"a.weight", 5}, {"a.bias", 3}, {"b.weight", 40}});
  const std::vector<StoredParameter> layout = parse_parameter_layout(parameter_layout_record(table), "f");
  ASSERT_EQ(layout.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(layout[i].name, table.entries()[i].name);
    EXPECT_EQ(layout[i].offset, table.entries()[i].offset);
    EXPECT_EQ(layout[i].count, table.entries()[i].count);
  }
}

TEST(OptimizerStateLayout, StateFollowsEachParameterIntoAnotherOrder) {
  const ParameterTable written = table_of({{"q.weight", 6}, {"q.bias", 2}, {"k.weight", 6}, {"k.bias", 2}});
  const ParameterTable now = table_of({{"q.weight", 6}, {"k.weight", 6}, {"q.bias", 2}, {"k.bias", 2}});
  const std::vector<float> stored = labelled_state(written);
  std::vector<float> out(now.total_elements(), 7.0f);
  remap_state(stored.data(), stored.size(), parse_parameter_layout(parameter_layout_record(written), "f"),
              now, out.data(), out.size(), "f");
  const std::vector<float> expected_by_name = labelled_state(written);
  for (const ParameterEntry& e : now.entries()) {
    const ParameterEntry* before = written.find(e.name);
    ASSERT_NE(before, nullptr);
    for (size_t i = 0; i < e.count; ++i)
      EXPECT_EQ(out[e.offset + i], expected_by_name[before->offset + i]) << e.name << " element " << i;
  }
  // Alignment gaps hold no state.
  EXPECT_EQ(out[now.find("q.weight")->offset + 6], 0.0f);
}

TEST(OptimizerStateLayout, MismatchesAreRefusedNamingFileAndParameter) {
  const ParameterTable model = table_of({{"a.weight", 5}, {"b.weight", 4}});
  std::vector<float> out(model.total_elements());
  const auto refused = [&](const std::vector<StoredParameter>& layout, size_t stored_count,
                           const std::string& expected) {
    const std::vector<float> stored(stored_count, 1.0f);
    try {
      remap_state(stored.data(), stored.size(), layout, model, out.data(), out.size(),
                  "run/optimizer.safetensors");
      ADD_FAILURE() << "accepted; expected: " << expected;
    } catch (const std::runtime_error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("run/optimizer.safetensors"), std::string::npos) << message;
      EXPECT_NE(message.find(expected), std::string::npos) << message;
    }
  };
  refused({{"a.weight", 0, 5}}, 32, "no parameter 'b.weight'");
  refused({{"a.weight", 0, 5}, {"b.weight", 16, 3}}, 32, "'b.weight' has 3 elements");
  refused({{"a.weight", 0, 5}, {"b.weight", 30, 4}}, 32, "'b.weight' lies outside");
  EXPECT_THROW(parse_parameter_layout("[[\"a\", 0]]", "f"), std::runtime_error);
  EXPECT_THROW(parse_parameter_layout("{}", "f"), std::runtime_error);
  EXPECT_THROW(parse_parameter_layout("[[\"a\", -1, 3]]", "f"), std::runtime_error);
}

}  // namespace
}  // namespace loom::host
