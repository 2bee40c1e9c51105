// Model assembly: the [model] recipe table, and the parameter list of a BERT-base pre-training
// model — names, order, shapes, ties and count — equal to Hugging Face BertForPreTraining's
// `named_parameters()` (110,106,428 parameters, the tied decoder counted once), except that each
// layer declares the query, key and value weights before their biases (one [3H, H] weight in the
// flat buffers: encoder_layer.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "block_harness.hpp"
#include "model/bert_config.hpp"
#include "model/model.hpp"
#include "model/model_config_from_bert.hpp"
#include "model/model_recipe.hpp"
#include "recipe/errors.hpp"

namespace loom_bert_test {
namespace {

namespace fs = std::filesystem;
using Shape = std::vector<int64_t>;

struct Expected {
  std::string name;
  Shape shape;
};

// BertForPreTraining.named_parameters() for a config, in Hugging Face's order but for the
// attention projections' weights, which come before their biases.
std::vector<Expected> hugging_face_parameters(int64_t V, int64_t H, int64_t I, int64_t L, int64_t P) {
  std::vector<Expected> out = {{"bert.embeddings.word_embeddings.weight", {V, H}},
                               {"bert.embeddings.position_embeddings.weight", {P, H}},
                               {"bert.embeddings.token_type_embeddings.weight", {2, H}},
                               {"bert.embeddings.LayerNorm.weight", {H}},
                               {"bert.embeddings.LayerNorm.bias", {H}}};
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
    for (const char* qkv : {"query", "key", "value"})
      out.push_back({p + "attention.self." + qkv + ".weight", {H, H}});
    for (const char* qkv : {"query", "key", "value"})
      out.push_back({p + "attention.self." + qkv + ".bias", {H}});
    out.push_back({p + "attention.output.dense.weight", {H, H}});
    out.push_back({p + "attention.output.dense.bias", {H}});
    out.push_back({p + "attention.output.LayerNorm.weight", {H}});
    out.push_back({p + "attention.output.LayerNorm.bias", {H}});
    out.push_back({p + "intermediate.dense.weight", {I, H}});
    out.push_back({p + "intermediate.dense.bias", {I}});
    out.push_back({p + "output.dense.weight", {H, I}});
    out.push_back({p + "output.dense.bias", {H}});
    out.push_back({p + "output.LayerNorm.weight", {H}});
    out.push_back({p + "output.LayerNorm.bias", {H}});
  }
  const std::vector<Expected> tail = {{"bert.pooler.dense.weight", {H, H}},
                                      {"bert.pooler.dense.bias", {H}},
                                      {"cls.predictions.bias", {V}},
                                      {"cls.predictions.transform.dense.weight", {H, H}},
                                      {"cls.predictions.transform.dense.bias", {H}},
                                      {"cls.predictions.transform.LayerNorm.weight", {H}},
                                      {"cls.predictions.transform.LayerNorm.bias", {H}},
                                      {"cls.seq_relationship.weight", {2, H}},
                                      {"cls.seq_relationship.bias", {2}}};
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

std::vector<std::string> pretraining_blocks(int layers) {
  std::vector<std::string> blocks = {"bert.embeddings"};
  for (int i = 0; i < layers; ++i) blocks.push_back("bert.encoder-layer");
  blocks.push_back("bert.pretraining-heads");
  return blocks;
}

TEST(ModelAssembly, BertBaseHasHuggingFaceParameterList) {
  const std::string path = std::string(LOOM_SOURCE_DIR) + "/configs/models/bert-base.json";
  const loom::ModelConfig config = loom::host::to_model_config(loom::host::read_bert_config(path), path);
  loom::host::Model model(registry(), pretraining_blocks(config.num_hidden_layers), config,
                          cpu_backend_component(), loom::DType::f32);
  const auto expected = hugging_face_parameters(30522, 768, 3072, 12, 512);
  const auto& entries = model.parameters().entries();
  ASSERT_EQ(entries.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(entries[i].name, expected[i].name) << "parameter " << i;
    EXPECT_EQ(entries[i].shape, expected[i].shape) << expected[i].name;
    EXPECT_EQ(entries[i].offset % loom::host::kParameterAlignment, 0u);
  }
  EXPECT_EQ(model.parameters().parameter_count(), 110106428u);
  ASSERT_EQ(model.parameters().aliases().size(), 1u);
  EXPECT_EQ(model.parameters().aliases()[0].name, "cls.predictions.decoder.weight");
  EXPECT_EQ(model.parameters().aliases()[0].target, "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(model.parameters().find("cls.predictions.decoder.weight"),
            model.parameters().find("bert.embeddings.word_embeddings.weight"));

  // Weight decay: matrices yes; biases and LayerNorm no (NVIDIA's no_decay list).
  for (const auto& segment : model.parameters().segments()) {
    const std::string name = segment.name;
    const bool no_decay =
        name.find("bias") != std::string::npos || name.find("LayerNorm") != std::string::npos;
    EXPECT_EQ(segment.decay, no_decay ? loom::DecayRule::no_decay : loom::DecayRule::decay) << name;
  }
}

TEST(ModelAssembly, InitialisationFollowsHuggingFace) {
  const loom::ModelConfig config = small_config();
  loom::host::Model model(registry(), pretraining_blocks(2), config, cpu_backend_component(),
                          loom::DType::f32);
  model.initialize(42);
  for (const auto& entry : model.parameters().entries()) {
    const float* v = model.master(entry).data_as<float>();
    double sum = 0, squares = 0;
    for (size_t e = 0; e < entry.count; ++e) sum += v[e], squares += static_cast<double>(v[e]) * v[e];
    const double mean = sum / static_cast<double>(entry.count);
    const double std = std::sqrt(squares / static_cast<double>(entry.count) - mean * mean);
    if (entry.init == loom::ParameterInit::normal) {
      EXPECT_NEAR(std, 0.02, 0.006) << entry.name;
      EXPECT_NEAR(mean, 0.0, 0.01) << entry.name;
    } else {
      EXPECT_EQ(squares, entry.init == loom::ParameterInit::ones ? static_cast<double>(entry.count) : 0.0)
          << entry.name;
    }
  }
}

TEST(ModelAssembly, RejectsBlocksInTheWrongOrder) {
  const loom::ModelConfig config = small_config();
  // Without the embeddings block the decoder's tie has no target: refused, naming the tie.
  try {
    loom::host::Model(registry(), {"bert.encoder-layer", "bert.pretraining-heads"}, config,
                      cpu_backend_component(), loom::DType::f32);
    FAIL() << "a model without embeddings must be refused";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no earlier block declares"), std::string::npos) << e.what();
  }
  try {
    loom::host::Model(registry(), {"bert.embeddings", "bert.pretraining-heads", "bert.encoder-layer"}, config,
                      cpu_backend_component(), loom::DType::f32);
    FAIL() << "a head in the middle must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("block 1 (block/bert.pretraining-heads) is a head"),
              std::string::npos)
        << e.what();
  }
}

fs::path write_recipe(const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("loom-model-recipe-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(std::string(LOOM_SOURCE_DIR) + "/configs/models/bert-tiny.json", dir / "bert-tiny.json",
                fs::copy_options::overwrite_existing);
  std::ofstream(dir / "recipe.toml") << text;
  return dir / "recipe.toml";
}

TEST(ModelRecipe, ExpandsRepeatFromTheConfig) {
  const fs::path path = write_recipe(
      "[model]\nconfig = \"bert-tiny.json\"\n"
      "blocks = [\"bert.embeddings\", { block = \"bert.encoder-layer\", repeat = \"num_hidden_layers\" }, "
      "\"bert.pretraining-heads\"]\n");
  const auto model = loom::host::read_model_recipe(loom::host::load_recipe(path.string()));
  EXPECT_EQ(model.expanded_blocks(), pretraining_blocks(2));
  EXPECT_TRUE(loom::host::check_model_recipe(loom::host::load_recipe(path.string()), registry()).empty());
}

TEST(ModelRecipe, ReportsEveryProblemWithItsPosition) {
  const fs::path path = write_recipe(
      "[model]\nconfig = \"bert-tiny.json\"\n"
      "blocks = [\"bert.embedings\", { block = \"bert.encoder-layer\", repeat = \"num_hiden_layers\", x = 1 "
      "}]\n");
  const auto problems = loom::host::check_model_recipe(loom::host::load_recipe(path.string()), registry());
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_EQ(problems.size(), 3u) << all;
  EXPECT_NE(all.find("recipe.toml:3:"), std::string::npos) << all;
  EXPECT_NE(all.find("did you mean 'num_hidden_layers'"), std::string::npos) << all;
  EXPECT_NE(all.find("unknown key 'x'"), std::string::npos) << all;
  EXPECT_NE(all.find("no component block/bert.embedings is available; did you mean 'bert.embeddings'"),
            std::string::npos)
      << all;
}

}  // namespace
}  // namespace loom_bert_test
