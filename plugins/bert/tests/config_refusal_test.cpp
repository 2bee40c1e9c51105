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

// RoBERTa's blocks (the same plugin) take a config of their own family only, and one that states
// its model_type and pad_token_id (positions start after the padding id; Hugging Face defaults it
// to 1, the host to 0).
std::string roberta_refusal(const std::string& component, const std::string& json) {
  const loom::ModelConfig config = small_config();
  try {
    BlockHarness harness(component, config, loom::DType::f32, small_batch(config), false, true, false, nullptr,
                         BlockPlacement{1, json, "bert/config.json"});
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

const char* const kRobertaBlocks[] = {"roberta.embeddings", "roberta.encoder-layer", "roberta.pretraining-heads",
                                      "roberta.classifier-head", "roberta.span-head"};

TEST(RobertaConfigRefusal, AnotherFamilysModelTypeIsRefusedByEveryBlock) {
  for (const char* block : kRobertaBlocks) {
    const std::string message = roberta_refusal(block, R"({"model_type": "bert", "pad_token_id": 0})");
    EXPECT_NE(message.find("bert/config.json: model_type: expected \"roberta\", got \"bert\""), std::string::npos)
        << block << ": " << message;
  }
}

TEST(RobertaConfigRefusal, ModelTypeAndPadTokenIdMustBeStated) {
  for (const char* block : kRobertaBlocks) {
    const std::string no_type = roberta_refusal(block, R"({"pad_token_id": 0})");
    EXPECT_NE(no_type.find("model_type: missing"), std::string::npos) << block << ": " << no_type;
    const std::string no_pad = roberta_refusal(block, R"({"model_type": "roberta"})");
    EXPECT_NE(no_pad.find("pad_token_id: missing"), std::string::npos) << block << ": " << no_pad;
  }
}

TEST(RobertaConfigRefusal, RobertasOwnConfigIsAcceptedAndBertBlocksRefuseIt) {
  for (const char* block : kRobertaBlocks)
    EXPECT_EQ(roberta_refusal(block, R"({"model_type": "roberta", "pad_token_id": 0})"), "") << block;
  const std::string message = roberta_refusal("bert.encoder-layer", R"({"model_type": "roberta", "pad_token_id": 0})");
  EXPECT_NE(message.find("model_type: expected \"bert\", got \"roberta\""), std::string::npos) << message;
}

}  // namespace
}  // namespace loom_bert_test
