// What tokenizer/bpe does not implement is refused, naming the file and the key — never approximated.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bpe_tokenizer.hpp"
#include "fixture_reader.hpp"
#include "loom/sdk/error.hpp"
#include "tokenizer_json.hpp"

namespace loom::bpe::testing {
namespace {

nlohmann::json base() {
  std::ifstream in(fixture_path("modernbert-tokenizer.json"));
  return nlohmann::json::parse(in);
}

// The message of the ConfigError loading `j` throws ("" when it loads).
std::string refusal(const nlohmann::json& j) {
  try {
    BpeConfig config = parse_tokenizer_json(j.dump(), "my/tokenizer.json");
    BpeTokenizer t(std::move(config));
  } catch (const loom::ConfigError& e) {
    return e.what();
  }
  return "";
}

void expect_refused(const nlohmann::json& j, const std::string& key) {
  const std::string message = refusal(j);
  EXPECT_NE(message.find("my/tokenizer.json"), std::string::npos) << message;
  EXPECT_NE(message.find(key), std::string::npos) << message;
}

TEST(BpeRefusals, TheBaseLoads) { EXPECT_EQ(refusal(base()), ""); }

TEST(BpeRefusals, Dropout) {
  auto j = base();
  j["model"]["dropout"] = 0.1;
  expect_refused(j, "model.dropout");
}

TEST(BpeRefusals, OtherModels) {
  auto j = base();
  j["model"]["type"] = "WordPiece";
  expect_refused(j, "model.type");
}

TEST(BpeRefusals, OtherPreTokenizers) {
  auto j = base();
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}};
  expect_refused(j, "pre_tokenizer.type");
  j["pre_tokenizer"] = nullptr;
  expect_refused(j, "pre_tokenizer");
}

TEST(BpeRefusals, UnknownKeys) {
  auto j = base();
  j["pre_tokenizer"]["split_digits"] = true;
  expect_refused(j, "pre_tokenizer.split_digits");
  j = base();
  j["surprise"] = 1;
  expect_refused(j, "(top level).surprise");
}

TEST(BpeRefusals, OtherNormalizers) {
  auto j = base();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "StripAccents"}}}}};
  expect_refused(j, "normalizer.normalizers[1].type");
}

TEST(BpeRefusals, OtherPostProcessors) {
  auto j = base();
  j["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 1}}, {"cls", {"[CLS]", 2}}};
  expect_refused(j, "post_processor.type");
}

TEST(BpeRefusals, TruncationAndPaddingInTheFile) {
  auto j = base();
  j["truncation"] = {{"max_length", 512}};
  expect_refused(j, "truncation");
  j = base();
  j["padding"] = {{"strategy", "BatchLongest"}};
  expect_refused(j, "padding");
}

TEST(BpeRefusals, MergeOutsideTheVocabulary) {
  auto j = base();
  j["model"]["merges"].push_back(nlohmann::json::array({"zz", "qq"}));
  expect_refused(j, "merge 5001 (\"zz\" \"qq\"): \"qq\" is not in the vocabulary");
}

TEST(BpeRefusals, OtherDecoders) {
  auto j = base();
  j["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
  expect_refused(j, "decoder.type");
}

}  // namespace
}  // namespace loom::bpe::testing
