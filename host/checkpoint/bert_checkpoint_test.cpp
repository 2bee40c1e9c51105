// BERT checkpoints: a PyTorch-written BertForPreTraining file (with the extras torch.save adds)
// loads with the same values; missing and unexpected names are reported, never ignored; saving
// writes Hugging Face's layout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "checkpoint/bert_checkpoint.hpp"

namespace loom::host {
namespace {

const std::filesystem::path kFixtures = LOOM_SOURCE_FIXTURE_DIR;
const std::filesystem::path kWithExtras = kFixtures / "parity" / "h36-heads3-erf-pad" / "model.safetensors";
const std::filesystem::path kPlain =
    kFixtures / "parity" / "h24-heads3-gelu_pytorch_tanh" / "model.safetensors";

// A model's parameter table built from the gradient file of the same case (same names/shapes).
struct Model {
  std::vector<std::vector<float>> storage;
  std::vector<CheckpointTensor> parameters;

  explicit Model(const std::filesystem::path& names_from) {
    const auto file = SafetensorsFile::open(names_from);
    storage.reserve(file.tensors().size());
    for (const auto& tensor : file.tensors()) {
      storage.emplace_back(static_cast<std::size_t>(tensor.element_count()), -7.0f);
      parameters.push_back({tensor.name, tensor.shape, storage.back().data()});
    }
  }
  std::vector<float>& values(const std::string& name) {
    for (std::size_t i = 0; i < parameters.size(); ++i)
      if (parameters[i].name == name) return storage[i];
    throw std::out_of_range(name);
  }
};

std::filesystem::path temporary(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("loom-ckpt-" + std::to_string(::getpid()) + "-" + name);
}

std::string load_error(const SafetensorsFile& file, Model& model, const CheckpointLoadOptions& options = {}) {
  try {
    load_bert_checkpoint(file, model.parameters, std::span(&kBertDecoderTie, 1), options);
  } catch (const CheckpointError& error) {
    return error.what();
  }
  return "";
}

TEST(BertCheckpoint, PyTorchFileWithExtrasLoadsWithTheSameValues) {
  Model model(kWithExtras.parent_path() / "expected_grads.safetensors");
  const auto file = SafetensorsFile::open(kWithExtras);
  const auto report = load_bert_checkpoint(file, model.parameters, std::span(&kBertDecoderTie, 1));
  EXPECT_EQ(report.loaded.size(), 46u);
  EXPECT_TRUE(report.missing.empty());
  EXPECT_TRUE(report.unexpected.empty());
  ASSERT_EQ(report.ignored.size(), 3u) << report.summary();
  EXPECT_NE(report.summary().find("bert.embeddings.position_ids (Hugging Face buffer"), std::string::npos);
  EXPECT_NE(report.summary().find("cls.predictions.decoder.weight (tied copy"), std::string::npos);
  EXPECT_NE(report.summary().find("cls.predictions.decoder.bias (tied copy"), std::string::npos);
  for (const auto& parameter : model.parameters)
    EXPECT_EQ(model.values(parameter.name), file.read_f32(parameter.name)) << parameter.name;
}

TEST(BertCheckpoint, SaveWritesHuggingFaceLayoutAndLoadsBack) {
  Model model(kPlain.parent_path() / "expected_grads.safetensors");
  const auto source = SafetensorsFile::open(kPlain);
  load_bert_checkpoint(source, model.parameters, std::span(&kBertDecoderTie, 1));
  // The decoder alias, if a table lists it, is not written: Hugging Face re-ties it on load.
  std::vector<CheckpointTensor> with_alias = model.parameters;
  with_alias.push_back(
      {kBertDecoderTie.name, {50, 24}, model.values("bert.embeddings.word_embeddings.weight").data()});
  const auto path = temporary("saved.safetensors");
  save_bert_checkpoint(path, with_alias, std::span(&kBertDecoderTie, 1), {{"step", "12"}});
  const auto saved = SafetensorsFile::open(path);
  std::filesystem::remove(path);
  EXPECT_EQ(saved.metadata().at("format"), "pt");
  EXPECT_EQ(saved.metadata().at("step"), "12");
  EXPECT_EQ(saved.tensors().size(), model.parameters.size());
  EXPECT_EQ(saved.find(kBertDecoderTie.name), nullptr);
  for (const auto& tensor : source.tensors()) {
    EXPECT_EQ(saved.tensor(tensor.name).shape, tensor.shape);
    EXPECT_EQ(saved.tensor(tensor.name).dtype, SafetensorsDtype::kF32);
    EXPECT_EQ(saved.read_f32(tensor.name), source.read_f32(tensor.name)) << tensor.name;
  }
}

TEST(BertCheckpoint, MissingAndUnexpectedNamesAreErrorsListedTogether) {
  Model model(kPlain.parent_path() / "expected_grads.safetensors");
  model.parameters.push_back({"classifier.weight", {2, 24}, model.storage[0].data()});
  SafetensorsWriter writer;
  const auto source = SafetensorsFile::open(kPlain);
  for (const auto& tensor : source.tensors()) {
    if (tensor.name == "bert.pooler.dense.bias") continue;
    writer.add(tensor.name, tensor.dtype, tensor.shape, std::span(tensor.data, tensor.byte_size));
  }
  writer.add_f32("cls.extra.weight", {2}, std::vector<float>{1, 2});
  const auto file = SafetensorsFile::from_bytes(writer.serialize(), "partial.safetensors");
  const std::vector<float> before = model.values("bert.embeddings.word_embeddings.weight");

  const std::string message = load_error(file, model);
  EXPECT_EQ(message.rfind("partial.safetensors: checkpoint does not fit the model (3 problems):", 0), 0u)
      << message;
  EXPECT_NE(message.find("missing parameter \"bert.pooler.dense.bias\" [24]"), std::string::npos) << message;
  EXPECT_NE(message.find("missing parameter \"classifier.weight\" [2, 24]"), std::string::npos) << message;
  EXPECT_NE(message.find("unexpected tensor \"cls.extra.weight\" [2]"), std::string::npos) << message;
  EXPECT_EQ(model.values("bert.embeddings.word_embeddings.weight"), before)
      << "a failed load modified parameters";

  // A fine-tuning model may start its head fresh and leave pre-training tensors unused, but the
  // report still lists them; a missing encoder parameter stays an error.
  CheckpointLoadOptions fine_tuning;
  fine_tuning.allow_unexpected = true;
  fine_tuning.may_be_missing_prefixes = {"classifier."};
  const std::string still = load_error(file, model, fine_tuning);
  EXPECT_NE(still.find("(1 problem):\n  missing parameter \"bert.pooler.dense.bias\""), std::string::npos)
      << still;
  fine_tuning.may_be_missing_prefixes.push_back("bert.pooler.");
  const auto report =
      load_bert_checkpoint(file, model.parameters, std::span(&kBertDecoderTie, 1), fine_tuning);
  EXPECT_EQ(report.missing, (std::vector<std::string>{"bert.pooler.dense.bias", "classifier.weight"}));
  EXPECT_EQ(report.unexpected, std::vector<std::string>{"cls.extra.weight"});
}

TEST(BertCheckpoint, ShapeDtypeAndUntiedDecoderAreRefused) {
  Model model(kPlain.parent_path() / "expected_grads.safetensors");
  const auto source = SafetensorsFile::open(kPlain);
  SafetensorsWriter writer;
  const std::vector<std::int32_t> labels{0, 1};
  for (const auto& tensor : source.tensors()) {
    if (tensor.name == "bert.pooler.dense.weight") {
      writer.add_f32(tensor.name, {24, 23}, std::vector<float>(24 * 23));
    } else if (tensor.name == "cls.seq_relationship.bias") {
      writer.add(tensor.name, SafetensorsDtype::kI32, {2},
                 std::as_bytes(std::span<const std::int32_t>(labels)));
    } else {
      writer.add(tensor.name, tensor.dtype, tensor.shape, std::span(tensor.data, tensor.byte_size));
    }
  }
  std::vector<float> untied = source.read_f32("bert.embeddings.word_embeddings.weight");
  untied[17] += 1.0f;
  writer.add_f32("cls.predictions.decoder.weight", {50, 24}, untied);
  const auto file = SafetensorsFile::from_bytes(writer.serialize(), "odd.safetensors");
  const std::string message = load_error(file, model);
  EXPECT_NE(
      message.find(
          "\"bert.pooler.dense.weight\" has shape [24, 23] but the model's \"bert.pooler.dense.weight\" "
          "is [24, 24]"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("\"cls.seq_relationship.bias\" has dtype I32"), std::string::npos) << message;
  EXPECT_NE(message.find(
                "\"cls.predictions.decoder.weight\" differs from \"bert.embeddings.word_embeddings.weight\""),
            std::string::npos)
      << message;
}

TEST(BertCheckpoint, LegacyNamesAndHalfPrecisionFilesLoad) {
  // A BertModel-style file (no "bert." prefix), TensorFlow-era LayerNorm.gamma/beta, values in
  // bf16, and only the tied aliases of the MLM bias: all load, every rename reported.
  Model model(kPlain.parent_path() / "expected_grads.safetensors");
  const auto source = SafetensorsFile::open(kPlain);
  SafetensorsWriter writer;
  for (const auto& tensor : source.tensors()) {
    std::string name = tensor.name;
    if (name == "cls.predictions.bias") name = "cls.predictions.decoder.bias";
    if (name.rfind("bert.", 0) == 0) name = name.substr(5);
    if (name.size() > 17 && name.substr(name.size() - 17) == ".LayerNorm.weight")
      name = name.substr(0, name.size() - 7) + ".gamma";
    const auto values = source.read_f32(tensor.name);
    std::vector<std::uint16_t> bf16(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, &values[i], 4);
      bf16[i] = static_cast<std::uint16_t>(bits >> 16);  // truncation: exact to compare below
    }
    writer.add(name, SafetensorsDtype::kBF16, tensor.shape, std::as_bytes(std::span(bf16)));
  }
  const auto file = SafetensorsFile::from_bytes(writer.serialize(), "legacy.safetensors");
  const auto report = load_bert_checkpoint(file, model.parameters, std::span(&kBertDecoderTie, 1));
  EXPECT_EQ(report.loaded.size(), model.parameters.size());
  const std::string summary = report.summary();
  EXPECT_NE(summary.find("embeddings.LayerNorm.gamma -> bert.embeddings.LayerNorm.weight"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("cls.predictions.decoder.bias -> cls.predictions.bias (tied"), std::string::npos)
      << summary;
  const auto reference = source.read_f32("bert.encoder.layer.0.output.LayerNorm.weight");
  const auto& loaded = model.values("bert.encoder.layer.0.output.LayerNorm.weight");
  for (std::size_t i = 0; i < loaded.size(); ++i)
    EXPECT_NEAR(loaded[i], reference[i], std::abs(reference[i]) / 128);
}

}  // namespace
}  // namespace loom::host
