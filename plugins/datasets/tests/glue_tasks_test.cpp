// dataset/text-classification's `task` option on the GLUE-layout fixtures (tests/fixtures/glue/,
// written by its make_fixtures.py): every task's own files as they come, sentence pairs as
// [CLS] a [SEP] b [SEP] with token types 0/1, STS-B's scores as regression targets, the labels in the
// reference's order, and an error naming file and line for each malformed file.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "dataset_test_support.hpp"

using namespace datasets_test;

namespace {

std::string fixture(const std::string& name) {
  return std::string(GLUE_FIXTURES) + "/" + name;
}

const loom::Tokenizer* glue_tokenizer() {
  static auto tokenizer = make_tokenizer(fixture("vocab.txt"));
  return tokenizer.get();
}

struct Example {
  std::vector<int32_t> ids, types;
  int32_t label = 0;
  nlohmann::json description;
};

struct Read {
  loom::BatchLimits limits{};
  std::vector<Example> examples;
  std::vector<std::string> label_names;  // label_name(0..num_labels-1), "(null)" for nullptr
};

Read read_task(const std::string& task, const std::string& file, const std::string& extra = "") {
  auto dataset = make_dataset("text-classification", "file = \"" + fixture(file) + "\"\ntask = \"" + task +
                                                         "\"\nshuffle = false\nbatch_size = 7\n" + extra);
  Read out;
  dataset.call([&](loom::Dataset& d) {
    d.open(setup(1, 0, 1, glue_tokenizer()));
    out.limits = d.limits();
    for (int32_t i = 0; i < out.limits.num_labels; ++i) {
      const char* name = d.label_name(i);
      out.label_names.push_back(name != nullptr ? name : "(null)");
    }
    Batch batch(out.limits);
    do {
      batch.shape = d.next_batch(batch.buffers());
      for (int32_t r = 0; r < batch.shape.rows; ++r) {
        Example e;
        for (int32_t c = 0; c < batch.shape.seq && batch.at(batch.attention_mask, r, c) == 1; ++c) {
          e.ids.push_back(batch.at(batch.input_ids, r, c));
          e.types.push_back(batch.at(batch.token_type_ids, r, c));
        }
        e.label = batch.labels[static_cast<size_t>(r)];
        char json[512];
        d.describe_instance(batch.instance_ids[static_cast<size_t>(r)], json, sizeof json);
        e.description = nlohmann::json::parse(json);
        out.examples.push_back(std::move(e));
      }
    } while (batch.shape.last_in_epoch == 0);
  });
  return out;
}

std::string error_of(const std::string& task, const std::string& file, const std::string& extra = "") {
  try {
    read_task(task, file, extra);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// The file's data lines split on tabs (header dropped when `header`), to compare against.
std::vector<std::vector<std::string>> file_rows(const std::string& file, bool header) {
  std::ifstream in(fixture(file), std::ios::binary);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  for (bool first = true; std::getline(in, line); first = false) {
    if (first && header) continue;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
      fields.push_back(line.substr(start, tab - start));
    fields.push_back(line.substr(start));
    rows.push_back(fields);
  }
  return rows;
}

constexpr int32_t kUnk = 1, kCls = 2, kSep = 3;  // tests/fixtures/glue/vocab.txt

// [CLS] a [SEP] b [SEP]: types 0 through the first [SEP], 1 after; no [UNK] (the vocabulary has
// every fixture word, so an [UNK] means a column or a line end was read wrong).
void expect_pair(const Example& e) {
  ASSERT_GE(e.ids.size(), 5u);
  EXPECT_EQ(e.ids.front(), kCls);
  EXPECT_EQ(e.ids.back(), kSep);
  const auto first_sep = std::find(e.ids.begin(), e.ids.end(), kSep) - e.ids.begin();
  for (size_t i = 0; i < e.ids.size(); ++i)
    EXPECT_EQ(e.types[i], static_cast<int64_t>(i) <= first_sep ? 0 : 1) << i;
  EXPECT_EQ(std::count(e.ids.begin(), e.ids.end(), kSep), 2);
  EXPECT_EQ(std::count(e.ids.begin(), e.ids.end(), kUnk), 0);
}

void expect_single(const Example& e) {
  EXPECT_EQ(e.ids.front(), kCls);
  EXPECT_EQ(e.ids.back(), kSep);
  EXPECT_EQ(std::count(e.ids.begin(), e.ids.end(), kSep), 1);
  EXPECT_EQ(std::count(e.types.begin(), e.types.end(), 1), 0);
  EXPECT_EQ(std::count(e.ids.begin(), e.ids.end(), kUnk), 0);
}

}  // namespace

TEST(GlueTasks, MrpcGlueFilesArePairsLabelledByQuality) {
  const Read read = read_task("mrpc", "mrpc/train.tsv");
  const auto rows = file_rows("mrpc/train.tsv", true);
  ASSERT_EQ(read.examples.size(), rows.size());
  EXPECT_EQ(read.limits.num_labels, 2);
  EXPECT_EQ(read.label_names, (std::vector<std::string>{"0", "1"}));
  for (size_t i = 0; i < rows.size(); ++i) {
    expect_pair(read.examples[i]);
    EXPECT_EQ(read.examples[i].label, std::stoi(rows[i][0])) << i;
    EXPECT_EQ(read.examples[i].description["line"], i + 2);
  }
}

TEST(GlueTasks, MrpcMicrosoftFileWithByteOrderMarkAndCrlf) {
  const Read read = read_task("mrpc", "mrpc/msr_paraphrase_test.txt");
  const auto rows = file_rows("mrpc/msr_paraphrase_test.txt", true);
  ASSERT_EQ(read.examples.size(), 8u);
  for (size_t i = 0; i < rows.size(); ++i) {
    expect_pair(read.examples[i]);  // a CR left on the line would end the pair in [UNK]
    EXPECT_EQ(read.examples[i].label, std::stoi(rows[i][0]));
  }
}

TEST(GlueTasks, Sst2SingleSentencesWithHeader) {
  const Read read = read_task("sst-2", "sst-2/dev.tsv");
  const auto rows = file_rows("sst-2/dev.tsv", true);
  ASSERT_EQ(read.examples.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    expect_single(read.examples[i]);
    EXPECT_EQ(read.examples[i].label, std::stoi(rows[i][1]));
  }
}

TEST(GlueTasks, ColaHasNoHeaderAndItsLabelInTheSecondColumn) {
  const Read read = read_task("cola", "cola/dev.tsv");
  const auto rows = file_rows("cola/dev.tsv", false);
  ASSERT_EQ(read.examples.size(), rows.size());  // the first line is an example
  EXPECT_EQ(read.examples[0].description["line"], 1);
  size_t acceptable = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    expect_single(read.examples[i]);
    EXPECT_EQ(read.examples[i].label, std::stoi(rows[i][1])) << i;
    EXPECT_EQ(rows[i][2], read.examples[i].label == 1 ? "" : "*");
    acceptable += static_cast<size_t>(read.examples[i].label);
  }
  EXPECT_GT(acceptable, 0u);
  EXPECT_LT(acceptable, rows.size());
}

TEST(GlueTasks, StsbScoresAreRegressionTargets) {
  const Read read = read_task("sts-b", "sts-b/dev.tsv");
  const auto rows = file_rows("sts-b/dev.tsv", true);
  ASSERT_EQ(read.examples.size(), rows.size());
  EXPECT_EQ(read.limits.num_labels, 1);  // regression (dataset.hpp)
  EXPECT_EQ(read.label_names, (std::vector<std::string>{"(null)"}));
  bool fractional = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    expect_pair(read.examples[i]);
    const float score = std::stof(rows[i][9]);
    EXPECT_EQ(std::bit_cast<float>(read.examples[i].label), score) << i;
    EXPECT_FLOAT_EQ(read.examples[i].description["score"].get<float>(), score);
    fractional = fractional || score != std::floor(score);
  }
  EXPECT_TRUE(fractional);
}

TEST(GlueTasks, MnliLabelsInTheReferenceOrderOnTrainAndBothDevFiles) {
  for (const char* file : {"mnli/train.tsv", "mnli/dev_matched.tsv", "mnli/dev_mismatched.tsv"}) {
    const Read read = read_task("mnli", file);
    const auto rows = file_rows(file, true);
    ASSERT_EQ(read.examples.size(), rows.size()) << file;
    EXPECT_EQ(read.label_names, (std::vector<std::string>{"contradiction", "entailment", "neutral"}));
    for (size_t i = 0; i < rows.size(); ++i) {
      expect_pair(read.examples[i]);
      EXPECT_EQ(read.label_names[static_cast<size_t>(read.examples[i].label)], rows[i].back()) << file << i;
      EXPECT_EQ(read.examples[i].description["label"], rows[i].back());
    }
  }
}

TEST(GlueTasks, PairsAreTruncatedLongestFirst) {
  // Every MRPC fixture sentence has 7 to 10 word pieces. At 12 tokens 9 are left for the pair:
  // popping from the longer side, the second on ties (the reference's _truncate_seq_pair), ends
  // at 5 + 4: [CLS] + 5 + [SEP] of type 0, 4 + [SEP] of type 1.
  const Read read = read_task("mrpc", "mrpc/dev.tsv", "max_seq_length = 12\n");
  ASSERT_FALSE(read.examples.empty());
  for (const Example& e : read.examples) {
    ASSERT_EQ(e.ids.size(), 12u);
    EXPECT_EQ(std::count(e.types.begin(), e.types.end(), 0), 7);
    EXPECT_EQ(std::count(e.types.begin(), e.types.end(), 1), 5);
  }
}

TEST(GlueTasks, MalformedFilesNameFileAndLine) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"mrpc", "malformed/mrpc_short_line.tsv",
       "mrpc_short_line.tsv:3: has 3 tab-separated columns, task \"mrpc\" needs 5"},
      {"mrpc", "malformed/mrpc_bad_label.tsv",
       "mrpc_bad_label.tsv:3: label 'yes' is not one of task \"mrpc\"'s labels (0, 1)"},
      {"mrpc", "malformed/mrpc_glue_test.tsv", "mrpc_glue_test.tsv:1: the header has no 'Quality' column"},
      {"cola", "malformed/cola_glue_test.tsv",
       "cola_glue_test.tsv:1: has 2 tab-separated columns, task \"cola\" needs 4"},
      {"sts-b", "malformed/stsb_not_a_number.tsv", "stsb_not_a_number.tsv:3: score 'high' is not a number"},
      {"sts-b", "malformed/stsb_out_of_range.tsv", "stsb_out_of_range.tsv:2: score 5.500 is outside [0, 5]"},
      {"mnli", "malformed/mnli_unknown_label.tsv",
       "mnli_unknown_label.tsv:2: label '-' is not one of task \"mnli\"'s labels"},
      {"sst-2", "malformed/sst2_header_only.tsv", "sst2_header_only.tsv: no examples after the header"},
      {"sst-2", "cola/dev.tsv", "dev.tsv:1: the header has no 'sentence' column"},
      {"cola", "does-not-exist.tsv", "does-not-exist.tsv: cannot open"},
  };
  for (const auto& [task, file, expected] : cases) {
    const std::string message = error_of(task, file);
    EXPECT_NE(message.find(expected), std::string::npos) << file << ": " << message;
  }
  EXPECT_NE(error_of("mrpc", "malformed/mrpc_glue_test.tsv").find("test.tsv files carry no labels"),
            std::string::npos);
}

TEST(GlueTasks, OptionsThatContradictTheTaskAreRecipeErrors) {
  auto problem = [](const std::string& toml) {
    try {
      make_dataset("text-classification", "file = \"x.tsv\"\n" + toml);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(problem("task = \"mrcp\"").find("did you mean 'mrpc'"), std::string::npos)
      << problem("task = \"mrcp\"");
  EXPECT_NE(
      problem("task = \"cola\"\nlayout = \"cola\"").find("data.layout: task \"cola\" reads its own layout"),
      std::string::npos);
  EXPECT_NE(problem("task = \"mrpc\"\nlabels = [\"1\", \"0\"]").find("fixes its labels (0, 1)"),
            std::string::npos);
  EXPECT_NE(problem("task = \"sts-b\"\nformat = \"jsonl\"").find("data.format"), std::string::npos);
  EXPECT_EQ(problem("task = \"sts-b\""), "");  // the constructor opens no file (loom check)
}

TEST(GlueTasks, OneClassOnlyIsNotMistakenForRegression) {
  const std::string path = testing::TempDir() + "one_class.tsv";
  std::ofstream(path) << "sentence\tlabel\nthe film is dull\t0\nthe film is awful\t0\n";
  auto dataset = make_dataset("text-classification", "file = \"" + path + "\"\n");
  std::string message;
  try {
    dataset.call([&](loom::Dataset& d) { d.open(setup(1, 0, 1, glue_tokenizer())); });
  } catch (const std::exception& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("a classification needs at least two classes"), std::string::npos) << message;
  std::remove(path.c_str());
}
