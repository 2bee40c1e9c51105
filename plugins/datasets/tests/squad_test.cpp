// dataset/squad on committed SQuAD v1.1 / v2.0 files: answer spans, impossible questions,
// sliding windows.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dataset_test_support.hpp"

using namespace datasets_test;

namespace {

struct Feature {
  std::vector<int32_t> ids, types;
  int32_t start, end;
  nlohmann::json description;
};

loom::host::Component<loom::Tokenizer>& tokenizer() {
  static auto instance = make_tokenizer(data_file("vocab.txt"));
  return instance;
}

std::vector<Feature> read_features(const std::string& toml) {
  auto dataset = make_dataset("squad", toml + "\nshuffle = false\nbatch_size = 4\n");
  std::vector<Feature> out;
  dataset.call([&](loom::Dataset& d) {
    d.open(setup(1, 0, 1, tokenizer().get()));
    Batch batch(d.limits());
    do {
      batch.shape = d.next_batch(batch.buffers());
      for (int32_t r = 0; r < batch.shape.rows; ++r) {
        Feature f;
        for (int32_t c = 0; c < batch.shape.seq && batch.at(batch.attention_mask, r, c) == 1; ++c) {
          f.ids.push_back(batch.at(batch.input_ids, r, c));
          f.types.push_back(batch.at(batch.token_type_ids, r, c));
        }
        f.start = batch.start_positions[static_cast<size_t>(r)];
        f.end = batch.end_positions[static_cast<size_t>(r)];
        const uint64_t id = batch.instance_ids[static_cast<size_t>(r)];
        std::string json(d.describe_instance(id, nullptr, 0), '\0');
        d.describe_instance(id, json.data(), json.size() + 1);
        f.description = nlohmann::json::parse(json);
        out.push_back(std::move(f));
      }
    } while (batch.shape.last_in_epoch == 0);
  });
  return out;
}

std::vector<int32_t> tokenize(const std::string& text) {
  std::vector<int32_t> ids(text.size() + 1);
  ids.resize(tokenizer().get()->tokenize(text.data(), text.size(), ids.data(), ids.size()));
  return ids;
}

// The answer's token ids as the feature's start..end span.
std::vector<int32_t> span(const Feature& f) {
  return std::vector<int32_t>(f.ids.begin() + f.start, f.ids.begin() + f.end + 1);
}

}  // namespace

TEST(Squad, V11AnswersMapToTheirTokens) {
  const auto features = read_features("file = \"" + data_file("squad_v1.1.json") + "\"");
  ASSERT_EQ(features.size(), 4u);  // short contexts: one window per question
  const std::vector<std::string> answers = {"a golden statue of the Virgin Mary", "a copper statue of Christ",
                                            "Houston, Texas", "late 1990s"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(span(features[i]), tokenize(answers[i])) << answers[i];
    EXPECT_EQ(features[i].ids.front(), 3);
    // [CLS] query [SEP] are segment 0; the context and the last [SEP] segment 1.
    const auto first_sep =
        std::find(features[i].ids.begin(), features[i].ids.end(), 4) - features[i].ids.begin();
    for (size_t t = 0; t < features[i].types.size(); ++t)
      EXPECT_EQ(features[i].types[t], static_cast<int64_t>(t) <= first_sep ? 0 : 1);
    EXPECT_GT(features[i].start, first_sep);
  }
  // Beyoncé precedes the answers: offsets count code points, not bytes.
  EXPECT_EQ(features[2].description["qas_id"], "q3");
  const auto& words = features[2].description["doc_words"];
  const auto& token_to_word = features[2].description["token_to_word"];
  EXPECT_EQ(words[token_to_word[features[2].start].get<int>()], "Houston,");
  EXPECT_EQ(words[token_to_word[features[2].end].get<int>()], "Texas,");
}

TEST(Squad, V20ImpossibleQuestionsPointAtCls) {
  const auto features = read_features("file = \"" + data_file("squad_v2.0.json") + "\"");
  ASSERT_EQ(features.size(), 2u);
  EXPECT_EQ(span(features[0]), tokenize("Destiny's Child"));
  EXPECT_FALSE(features[0].description["is_impossible"].get<bool>());
  EXPECT_EQ(features[1].start, 0);
  EXPECT_EQ(features[1].end, 0);
  EXPECT_TRUE(features[1].description["is_impossible"].get<bool>());
}

TEST(Squad, DocStrideWindowsCoverTheContextAndOnlyOneHoldsTheAnswer) {
  const auto features = read_features("file = \"" + data_file("squad_v1.1.json") +
                                      "\"\nmax_seq_length = 32\ndoc_stride = 8\nmax_query_length = 8");
  std::map<std::string, std::vector<const Feature*>> by_question;
  for (const auto& f : features) {
    EXPECT_LE(f.ids.size(), 32u);
    by_question[f.description["qas_id"]].push_back(&f);
  }
  ASSERT_EQ(by_question.size(), 4u);
  for (const auto& [id, windows] : by_question) {
    EXPECT_GT(windows.size(), 3u) << id;
    size_t with_answer = 0;
    std::vector<int> max_context_tokens;
    for (const Feature* f : windows) {
      // Questions are cut to 8 tokens: [CLS] + 8 + [SEP] before the context.
      EXPECT_EQ(f->types[10], 1) << id;
      with_answer += f->start != 0 ? 1 : 0;
      if (f->start == 0) {
        EXPECT_EQ(f->end, 0);
      }
      const auto& max_context = f->description["token_is_max_context"];
      const auto& token_to_word = f->description["token_to_word"];
      for (size_t t = 0; t < max_context.size(); ++t)
        if (max_context[t].get<int>() == 1) max_context_tokens.push_back(token_to_word[t].get<int>());
    }
    EXPECT_GE(with_answer, 1u) << id;
    // Every context token is the max-context token of exactly one window.
    EXPECT_TRUE(std::is_sorted(max_context_tokens.begin(), max_context_tokens.end())) << id;
  }
}

TEST(Squad, EvalModeKeepsEveryWindowWithoutPositions) {
  const auto features = read_features("file = \"" + data_file("squad_v1.1.json") + "\"\nmode = \"eval\"");
  ASSERT_EQ(features.size(), 4u);
  for (const auto& f : features) EXPECT_EQ(f.start + f.end, 0);
}
