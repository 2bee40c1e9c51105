// dataset/text-classification on committed GLUE-layout TSV and JSONL files.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "dataset_test_support.hpp"

using namespace datasets_test;

namespace {

struct Example {
  std::vector<int32_t> ids, types;
  int32_t label;
  std::string label_name;
  uint64_t line;
};

std::vector<Example> read_all(const std::string& toml) {
  static auto tokenizer = make_tokenizer(data_file("vocab.txt"));
  auto dataset = make_dataset("text-classification", toml + "\nshuffle = false\nbatch_size = 3\n");
  std::vector<Example> out;
  dataset.call([&](loom::Dataset& d) {
    d.open(setup(1, 0, 1, tokenizer.get()));
    Batch batch(d.limits());
    do {
      batch.shape = d.next_batch(batch.buffers());
      EXPECT_EQ(batch.shape.seq % 8 == 0 || batch.shape.seq == d.limits().max_seq_length, true);
      for (int32_t r = 0; r < batch.shape.rows; ++r) {
        Example e;
        for (int32_t c = 0; c < batch.shape.seq && batch.at(batch.attention_mask, r, c) == 1; ++c) {
          e.ids.push_back(batch.at(batch.input_ids, r, c));
          e.types.push_back(batch.at(batch.token_type_ids, r, c));
        }
        e.label = batch.labels[static_cast<size_t>(r)];
        e.label_name = d.label_name(e.label);
        char json[512];
        d.describe_instance(batch.instance_ids[static_cast<size_t>(r)], json, sizeof json);
        e.line = nlohmann::json::parse(json)["line"].get<uint64_t>();
        out.push_back(e);
      }
    } while (batch.shape.last_in_epoch == 0);
  });
  return out;
}

std::string error_of(const std::string& toml) {
  try {
    read_all(toml);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

int32_t segments(const Example& e) {
  return e.types.empty() ? 0 : 1 + *std::max_element(e.types.begin(), e.types.end());
}

}  // namespace

TEST(TextClassification, Sst2SingleSentencesWithHeader) {
  const auto examples = read_all("file = \"" + data_file("sst2.tsv") + "\"\nlayout = \"sst-2\"");
  ASSERT_EQ(examples.size(), 6u);
  const std::vector<std::string> labels = {"0", "0", "1", "0", "0", "1"};
  for (size_t i = 0; i < examples.size(); ++i) {
    EXPECT_EQ(examples[i].label_name, labels[i]);
    EXPECT_EQ(examples[i].label, std::stoi(labels[i]));
    EXPECT_EQ(examples[i].line, i + 2);
    EXPECT_EQ(examples[i].ids.front(), 3);  // [CLS]
    EXPECT_EQ(examples[i].ids.back(), 4);   // [SEP]
    EXPECT_EQ(segments(examples[i]), 1);
  }
  // "hide new secretions from the parental units": 7 words, all in the vocabulary.
  EXPECT_EQ(examples[0].ids.size(), 9u);
  EXPECT_EQ(std::count(examples[0].ids.begin(), examples[0].ids.end(), 2), 0);  // no [UNK]
}

TEST(TextClassification, ColaHasNoHeader) {
  const auto examples = read_all("file = \"" + data_file("cola.tsv") + "\"\nlayout = \"cola\"");
  ASSERT_EQ(examples.size(), 5u);
  const std::vector<int32_t> labels = {1, 1, 0, 1, 0};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(examples[i].label, labels[i]) << i;
  EXPECT_EQ(examples[2].line, 3u);
}

TEST(TextClassification, MrpcAndMnliPairsUseTwoSegments) {
  const auto mrpc = read_all("file = \"" + data_file("mrpc.tsv") + "\"\nlayout = \"mrpc\"");
  ASSERT_EQ(mrpc.size(), 4u);
  for (const auto& e : mrpc) {
    EXPECT_EQ(segments(e), 2);
    EXPECT_EQ(std::count(e.ids.begin(), e.ids.end(), 4), 2);  // two [SEP]
  }
  EXPECT_EQ(mrpc[0].label_name, "1");
  EXPECT_EQ(mrpc[1].label_name, "0");
  const auto mnli = read_all("file = \"" + data_file("mnli.tsv") + "\"\nlayout = \"mnli\"");
  ASSERT_EQ(mnli.size(), 4u);
  // Labels from the data, sorted: contradiction 0, entailment 1, neutral 2.
  EXPECT_EQ(mnli[0].label, 2);
  EXPECT_EQ(mnli[1].label, 1);
  EXPECT_EQ(mnli[3].label, 0);
  EXPECT_EQ(mnli[3].label_name, "contradiction");
}

TEST(TextClassification, PairsAreTruncatedLongestFirstToMaxSeqLength) {
  const auto mrpc = read_all("file = \"" + data_file("mrpc.tsv") + "\"\nmax_seq_length = 12");
  for (const auto& e : mrpc) {
    EXPECT_EQ(e.ids.size(), 12u);
    // Equal-length sides after trimming the longer one: 4 + 5 tokens (ties trim the second).
    EXPECT_EQ(std::count(e.types.begin(), e.types.end(), 1), 5);
  }
}

TEST(TextClassification, JsonlWithOptionalPairsAndRecipeLabels) {
  const auto examples =
      read_all("file = \"" + data_file("examples.jsonl") + "\"\nlabels = [\"spam\", \"ham\"]");
  ASSERT_EQ(examples.size(), 4u);
  EXPECT_EQ(examples[0].label, 0);  // spam, per the recipe's order
  EXPECT_EQ(examples[1].label, 1);
  EXPECT_EQ(segments(examples[0]), 1);
  EXPECT_EQ(segments(examples[1]), 2);
  EXPECT_EQ(examples[2].line, 4u);  // the blank line 3 is skipped
  const auto numeric = read_all("file = \"" + data_file("numeric_labels.jsonl") + "\"");
  ASSERT_EQ(numeric.size(), 4u);
  EXPECT_EQ(numeric[0].label_name, "1");
  EXPECT_EQ(numeric[0].label, 1);
  EXPECT_EQ(numeric[3].label_name, "10");
  EXPECT_EQ(numeric[3].label, 3);  // 0, 1, 2, 10 sorted as numbers
}

TEST(TextClassification, IntegerLabelsOfAnyLengthSortAsNumbers) {
  // One label past a 64-bit integer's range: sorted by value like the others (it threw std::out_of_range).
  const std::string path = ::testing::TempDir() + "loom-integer-labels.tsv";
  std::ofstream(path) << "sentence\tlabel\na\t99999999999999999999\nb\t-5\nc\t3\nd\t-99999999999999999999\n"
                         "e\t007\nf\t3\n";
  const auto examples = read_all("file = \"" + path + "\"");
  std::remove(path.c_str());
  ASSERT_EQ(examples.size(), 6u);
  const std::vector<std::pair<std::string, int32_t>> expected = {
      {"99999999999999999999", 4}, {"-5", 1}, {"3", 2}, {"-99999999999999999999", 0}, {"007", 3}, {"3", 2}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(examples[i].label_name, expected[i].first);
    EXPECT_EQ(examples[i].label, expected[i].second) << examples[i].label_name;
  }
}

TEST(TextClassification, JsonlIntegerLabelsKeepTheirDigits) {
  const std::string path = ::testing::TempDir() + "loom-unsigned-labels.jsonl";
  std::ofstream(path) << R"({"text": "a", "label": 18446744073709551615})" "\n"
                      << R"({"text": "b", "label": -1})" "\n";
  const auto examples = read_all("file = \"" + path + "\"");
  std::remove(path.c_str());
  ASSERT_EQ(examples.size(), 2u);
  EXPECT_EQ(examples[0].label_name, "18446744073709551615");  // was read as "-1", the other label
  EXPECT_EQ(examples[1].label_name, "-1");
  EXPECT_NE(examples[0].label, examples[1].label);
}

TEST(TextClassification, BadInputNamesFileAndLine) {
  std::string message = error_of("file = \"" + data_file("malformed.tsv") + "\"");
  EXPECT_NE(message.find("malformed.tsv:3"), std::string::npos) << message;
  message = error_of("file = \"" + data_file("examples.jsonl") + "\"\nlabels = [\"spam\"]");
  EXPECT_NE(message.find("examples.jsonl:2: label 'ham' is not in data.labels"), std::string::npos)
      << message;
  message = error_of("file = \"" + data_file("cola.tsv") + "\"");
  EXPECT_NE(message.find("layout = \"cola\""), std::string::npos) << message;
}
