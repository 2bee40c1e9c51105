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

// A file from before the record: the encoder layer then declared each projection's weight before
// its bias. Its state must land on the same parameters in today's order.
TEST(OptimizerStateLayout, UnrecordedFilesAreReadInTheEarlierDeclarationOrder) {
  const std::string p = "bert.encoder.layer.0.attention.self.";
  const ParameterTable before = table_of({{"bert.embeddings.LayerNorm.weight", 8},
                                          {p + "query.weight", 64},
                                          {p + "query.bias", 8},
                                          {p + "key.weight", 64},
                                          {p + "key.bias", 8},
                                          {p + "value.weight", 64},
                                          {p + "value.bias", 8},
                                          {"bert.encoder.layer.0.attention.output.dense.weight", 64}});
  const ParameterTable now = table_of({{"bert.embeddings.LayerNorm.weight", 8},
                                       {p + "query.weight", 64},
                                       {p + "key.weight", 64},
                                       {p + "value.weight", 64},
                                       {p + "query.bias", 8},
                                       {p + "key.bias", 8},
                                       {p + "value.bias", 8},
                                       {"bert.encoder.layer.0.attention.output.dense.weight", 64}});
  const std::vector<StoredParameter> layout = unrecorded_parameter_layout(now);
  ASSERT_EQ(layout.size(), before.entries().size());
  for (size_t i = 0; i < layout.size(); ++i) {
    EXPECT_EQ(layout[i].name, before.entries()[i].name) << i;
    EXPECT_EQ(layout[i].offset, before.entries()[i].offset) << layout[i].name;
  }
  const std::vector<float> stored = labelled_state(before);
  std::vector<float> out(now.total_elements());
  remap_state(stored.data(), stored.size(), layout, now, out.data(), out.size(), "f");
  EXPECT_EQ(out[now.find(p + "key.bias")->offset + 1], stored[before.find(p + "key.bias")->offset + 1]);
  EXPECT_EQ(out[now.find(p + "value.weight")->offset], stored[before.find(p + "value.weight")->offset]);
  // A table without the group is its own layout.
  const ParameterTable other = table_of({{"a", 5}, {"b", 7}});
  const std::vector<StoredParameter> same = unrecorded_parameter_layout(other);
  EXPECT_EQ(same[1].offset, other.entries()[1].offset);
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
