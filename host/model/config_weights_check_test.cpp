// config.json against the weights' shapes, both ways: a config with fewer or more encoder layers
// than the weights, and every size the shapes fix, is refused naming the key.
#include "model/config_weights_check.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace loom::host {
namespace {

// A micro-BERT's weights (hidden 8, intermediate 16, vocab 30, 12 positions, 2 types) with
// `layers` encoder layers, under `prefix` ("bert." or "" for a BertModel file).
SafetensorsFile weights(int layers, const std::string& prefix = "bert.", int classes = 0) {
  SafetensorsWriter writer;
  const auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    const std::vector<float> zeros(static_cast<size_t>(count), 0.0f);
    writer.add_f32(name, shape, zeros);
  };
  add(prefix + "embeddings.word_embeddings.weight", {30, 8});
  add(prefix + "embeddings.position_embeddings.weight", {12, 8});
  add(prefix + "embeddings.token_type_embeddings.weight", {2, 8});
  for (int l = 0; l < layers; ++l) {
    const std::string layer = prefix + "encoder.layer." + std::to_string(l) + ".";
    add(layer + "attention.self.query.weight", {8, 8});
    add(layer + "intermediate.dense.weight", {16, 8});
    add(layer + "output.dense.weight", {8, 16});
  }
  if (classes > 0) add("classifier.weight", {classes, 8});
  const std::vector<std::byte> image = writer.serialize();
  return SafetensorsFile::from_bytes(image, "ckpt/model.safetensors");
}

BertConfig config(int layers) {
  BertConfig c;
  c.vocab_size = 30;
  c.hidden_size = 8;
  c.num_attention_heads = 2;
  c.intermediate_size = 16;
  c.max_position_embeddings = 12;
  c.type_vocab_size = 2;
  c.num_hidden_layers = layers;
  return c;
}

std::string error_of(const BertConfig& c, const SafetensorsFile& w) {
  try {
    check_config_matches_weights(c, "ckpt/config.json", w);
  } catch (const BertConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigWeightsCheck, AMatchingConfigPasses) {
  EXPECT_EQ(error_of(config(3), weights(3)), "");
  EXPECT_EQ(error_of(config(3), weights(3, "")), "");  // a BertModel file, names without bert.
  BertConfig classifier = config(2);
  classifier.extra["id2label"] = {{"0", "neg"}, {"1", "neutral"}, {"2", "pos"}};
  EXPECT_EQ(error_of(classifier, weights(2, "bert.", 3)), "");
}

TEST(ConfigWeightsCheck, FewerLayersInTheConfigThanInTheWeightsIsRefused) {
  const std::string message = error_of(config(2), weights(3));
  EXPECT_NE(
      message.find("ckpt/config.json does not describe the weights in ckpt/model.safetensors (1 problem):"),
      std::string::npos)
      << message;
  EXPECT_NE(
      message.find("num_hidden_layers = 2, but the weights hold encoder layers 0–2 (3 layers): a model built "
                   "from this config would leave the extra layers out"),
      std::string::npos)
      << message;
}

TEST(ConfigWeightsCheck, MoreLayersInTheConfigThanInTheWeightsIsRefused) {
  const std::string message = error_of(config(4), weights(3, ""));
  EXPECT_NE(
      message.find("num_hidden_layers = 4, but the weights hold encoder layers 0–2 (3 layers): the config "
                   "asks for layers the weights do not have"),
      std::string::npos)
      << message;
}

TEST(ConfigWeightsCheck, EverySizeTheShapesFixIsCompared) {
  BertConfig c = config(2);
  c.vocab_size = 31;
  c.hidden_size = 12;
  c.num_attention_heads = 3;
  c.intermediate_size = 32;
  c.max_position_embeddings = 512;
  c.type_vocab_size = 3;
  c.extra["num_labels"] = 5;
  const std::string message = error_of(c, weights(2, "bert.", 2));
  for (const char* expected :
       {"(7 problems)",
        "vocab_size = 31, but bert.embeddings.word_embeddings.weight has 30 there (shape [30, 8])",
        "hidden_size = 12", "max_position_embeddings = 512", "type_vocab_size = 3",
        "intermediate_size = 32, but bert.encoder.layer.0.intermediate.dense.weight has 16",
        "intermediate_size = 32, but bert.encoder.layer.1.intermediate.dense.weight has 16",
        "num_labels = 5, but classifier.weight has 2 there"})
    EXPECT_NE(message.find(expected), std::string::npos) << expected << "\n" << message;
}

}  // namespace
}  // namespace loom::host
