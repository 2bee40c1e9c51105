// BERT's blocks refuse a config.json of another family or with positions they do not implement,
// naming the key and the file: since SDK 0.4 the host reads only the keys every family shares, and
// each family checks the rest of the file (BlockSetup::config_json).
#include <gtest/gtest.h>

#include <string>

#include "block_harness.hpp"
#include "loom/sdk/error.hpp"

namespace loom_bert_test {
namespace {

std::string refusal(const std::string& component, const std::string& json) {
  const loom::ModelConfig config = small_config();
  try {
    BlockHarness harness(component, config, loom::DType::f32, small_batch(config), false, true, false, nullptr,
                         BlockPlacement{1, json, "roberta/config.json"});
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

TEST(BertConfigRefusal, AnotherFamilysModelTypeIsRefusedByEveryBlock) {
  for (const char* block : {"bert.embeddings", "bert.encoder-layer", "bert.pretraining-heads"}) {
    const std::string message = refusal(block, R"({"model_type": "roberta", "hidden_size": 24})");
    EXPECT_NE(message.find("roberta/config.json: model_type: expected \"bert\", got \"roberta\""), std::string::npos)
        << block << ": " << message;
  }
}

TEST(BertConfigRefusal, RelativePositionsAreRefused) {
  const std::string message = refusal("bert.embeddings", R"({"position_embedding_type": "relative_key"})");
  EXPECT_NE(message.find("position_embedding_type: only \"absolute\" is supported"), std::string::npos) << message;
}

TEST(BertConfigRefusal, BertsOwnConfigAndNoFileAreAccepted) {
  EXPECT_EQ(refusal("bert.embeddings", R"({"model_type": "bert", "position_embedding_type": "absolute"})"), "");
  EXPECT_EQ(refusal("bert.embeddings", ""), "");  // a host before SDK 0.4 hands no file
}

}  // namespace
}  // namespace loom_bert_test
