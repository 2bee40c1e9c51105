// The optimizer's segment table with [train] freeze: frozen prefixes (and tied names) drop their
// parameters' segments; a prefix that names nothing, or one that leaves nothing to train, is refused.
#include "model/parameter_table.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace loom::host {
namespace {

ParameterTable encoder_table() {
  ParameterTable table;
  for (const char* name : {"model.embeddings.tok_embeddings.weight", "model.embeddings.norm.weight",
                           "model.layers.0.attn.Wqkv.weight", "model.layers.1.attn.Wqkv.weight", "head.dense.weight",
                           "classifier.weight"})
    table.add(name, {4, 3}, loom::ParameterInit::zeros, true, 0);
  table.add_alias("decoder.weight", "model.embeddings.tok_embeddings.weight", {4, 3});
  return table;
}

std::vector<std::string> names(const std::vector<loom::ParameterSegment>& segments) {
  std::vector<std::string> out;
  for (const auto& s : segments) out.emplace_back(s.name);
  return out;
}

TEST(ParameterTableFreeze, NothingFrozenByDefault) {
  EXPECT_EQ(encoder_table().segments().size(), 6u);
}

TEST(ParameterTableFreeze, PrefixesDropTheirSegments) {
  const ParameterTable table = encoder_table();
  EXPECT_EQ(names(table.segments({"model.embeddings.", "model.layers.0."})),
            (std::vector<std::string>{"model.layers.1.attn.Wqkv.weight", "head.dense.weight", "classifier.weight"}));
}

TEST(ParameterTableFreeze, TiedNameFreezesItsTarget) {
  const ParameterTable table = encoder_table();
  const std::vector<std::string> kept = names(table.segments({"decoder."}));
  EXPECT_EQ(kept.size(), 5u);
  for (const auto& name : kept) EXPECT_NE(name, "model.embeddings.tok_embeddings.weight");
}

TEST(ParameterTableFreeze, RefusesPrefixThatNamesNothing) {
  const ParameterTable table = encoder_table();
  try {
    table.segments({"model.embedings."});
    FAIL() << "a misspelt prefix was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'model.embedings.' begins no parameter's name"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'model.embeddings.tok_embeddings.weight'"), std::string::npos) << e.what();
  }
}

TEST(ParameterTableFreeze, RefusesFreezingEverything) {
  EXPECT_THROW(encoder_table().segments({"model.", "head.", "classifier."}), std::invalid_argument);
}

}  // namespace
}  // namespace loom::host
