// BertConfig: Hugging Face config.json read with HF defaults, unknown keys round-tripped, every
// bad value refused naming the file and the key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "model/bert_config.hpp"

namespace loom::host {
namespace {

const std::filesystem::path kFixtures = LOOM_SOURCE_FIXTURE_DIR;

std::string refusal(const std::string& text) {
  try {
    bert_config_from_json(nlohmann::json::parse(text), "config.json");
  } catch (const BertConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(BertConfig, ReadsAHuggingFaceConfigWithEveryField) {
  const auto config = read_bert_config(kFixtures / "parity" / "h20-heads5-gelu_new-pad" / "config.json");
  EXPECT_EQ(config.hidden_size, 20);
  EXPECT_EQ(config.num_attention_heads, 5);
  EXPECT_EQ(config.head_dim(), 4);
  EXPECT_EQ(config.num_hidden_layers, 2);
  EXPECT_EQ(config.intermediate_size, 28);
  EXPECT_EQ(config.vocab_size, 61);
  EXPECT_EQ(config.max_position_embeddings, 16);
  EXPECT_EQ(config.type_vocab_size, 2);
  EXPECT_EQ(config.hidden_act, "gelu_new");
  EXPECT_EQ(config.gelu_variant(), GeluVariant::kTanh);
  EXPECT_DOUBLE_EQ(config.layer_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(config.hidden_dropout_prob, 0.1);
  EXPECT_DOUBLE_EQ(config.attention_probs_dropout_prob, 0.1);
  EXPECT_DOUBLE_EQ(config.initializer_range, 0.02);
  EXPECT_EQ(config.extra["model_type"], "bert");
  EXPECT_TRUE(config.extra["classifier_dropout"].is_null());
  EXPECT_FALSE(config.extra.contains("hidden_size"));
}

TEST(BertConfig, MissingKeysTakeHuggingFaceDefaults) {
  // Google's original bert_config.json has no layer_norm_eps.
  const auto config = bert_config_from_json(
      nlohmann::json::parse(R"({"hidden_size": 128, "num_attention_heads": 2})"), "google.json");
  EXPECT_EQ(config.vocab_size, 30522);
  EXPECT_EQ(config.num_hidden_layers, 12);
  EXPECT_EQ(config.intermediate_size, 3072);
  EXPECT_EQ(config.gelu_variant(), GeluVariant::kErf);
  EXPECT_DOUBLE_EQ(config.layer_norm_eps, 1e-12);
  EXPECT_EQ(config.max_position_embeddings, 512);
  EXPECT_TRUE(config.extra.empty());
}

TEST(BertConfig, WriteThenReadKeepsEveryKeyIncludingUnknownOnes) {
  const auto path =
      std::filesystem::temp_directory_path() / ("loom-config-" + std::to_string(::getpid()) + ".json");
  auto config = read_bert_config(kFixtures / "parity" / "h36-heads3-erf-pad" / "config.json");
  config.extra["id2label"] = {{"0", "NEG"}, {"1", "POS"}};
  config.hidden_act = "gelu_pytorch_tanh";
  write_bert_config(config, path);
  const auto again = read_bert_config(path);
  std::filesystem::remove(path);
  EXPECT_EQ(bert_config_to_json(again), bert_config_to_json(config));
  EXPECT_EQ(again.extra["architectures"][0], "BertForPreTraining");
  EXPECT_EQ(again.extra["id2label"]["1"], "POS");
  EXPECT_EQ(again.gelu_variant(), GeluVariant::kTanh);
  // The original file's keys all survive a read/write cycle unchanged.
  std::ifstream original(kFixtures / "parity" / "h36-heads3-erf-pad" / "config.json");
  const auto original_json = nlohmann::json::parse(original);
  const auto round_trip =
      bert_config_to_json(read_bert_config(kFixtures / "parity" / "h36-heads3-erf-pad" / "config.json"));
  EXPECT_EQ(round_trip, original_json);
}

TEST(BertConfig, BadValuesAreRefusedNamingTheKey) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"hidden_size": "768"})", "config.json: hidden_size: expected an integer, got \"768\""},
      {R"({"hidden_size": 768.5})", "config.json: hidden_size: expected an integer, got 768.5"},
      {R"({"hidden_size": 0})", "config.json: hidden_size: must be at least 1, got 0"},
      {R"({"num_hidden_layers": -1})", "config.json: num_hidden_layers: must be at least 0, got -1"},
      {R"({"hidden_size": 36, "num_attention_heads": 5})",
       "config.json: num_attention_heads: 5 heads do not divide hidden_size 36"},
      {R"({"hidden_act": "relu"})", "config.json: hidden_act: unsupported activation \"relu\""},
      {R"({"hidden_act": 3})", "config.json: hidden_act: expected a string, got 3"},
      {R"({"hidden_dropout_prob": 1.5})", "config.json: hidden_dropout_prob: must be in [0, 1), got 1.5"},
      {R"({"attention_probs_dropout_prob": "0.1"})",
       "config.json: attention_probs_dropout_prob: expected a number"},
      {R"({"layer_norm_eps": 0})", "config.json: layer_norm_eps: must be positive"},
      {R"({"vocab_size": null})", "config.json: vocab_size: expected an integer, got null"},
      {R"([1, 2])", "config.json: expected a JSON object"},
  };
  for (const auto& c : cases) {
    const std::string message = refusal(c.json);
    EXPECT_EQ(message.rfind(c.message, 0), 0u) << c.json << " gave: " << message;
  }
}

// The host reads the keys every family shares and keeps the rest: a family's own keys and its
// model_type are its blocks' to check (the bert plugin refuses model_type "roberta"), and a key the
// file lacks is not written back.
TEST(BertConfig, AnotherFamilysConfigRoundTripsWithItsOwnKeys) {
  const nlohmann::json file = nlohmann::json::parse(
      R"({"model_type": "other", "hidden_size": 24, "num_attention_heads": 3, "norm_eps": 1e-5,
          "local_attention": 8, "vocab_size": 50})");
  const BertConfig config = bert_config_from_json(file, "config.json");
  EXPECT_EQ(config.hidden_size, 24);
  EXPECT_EQ(config.extra["local_attention"], 8);
  EXPECT_EQ(bert_config_to_json(config), file);
}

TEST(BertConfig, UnreadableFilesAreNamed) {
  EXPECT_THROW(read_bert_config("/nonexistent/config.json"), BertConfigError);
  const auto path =
      std::filesystem::temp_directory_path() / ("loom-bad-config-" + std::to_string(::getpid()) + ".json");
  { std::ofstream(path) << "{\"hidden_size\": 12,"; }
  try {
    read_bert_config(path);
    FAIL();
  } catch (const BertConfigError& error) {
    EXPECT_EQ(std::string(error.what()).rfind(path.string() + ": not valid JSON", 0), 0u) << error.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::host
