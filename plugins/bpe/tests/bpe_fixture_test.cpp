// Ids, token types and offsets of tokenizer/bpe against what Hugging Face `tokenizers` produced for
// the same texts (tools/make_bpe_fixtures.mjs): GPT-2's published vocab.json + merges.txt on 2,000
// corpus sentences and the hard cases, and three tokenizer.json layouts (RoBERTa's template with a
// prefix space, ModernBERT's TemplateProcessing, NFC + Lowercase) on single texts and pairs.
#include <gtest/gtest.h>

#include <sstream>

#include "bpe_tokenizer.hpp"
#include "fixture_reader.hpp"
#include "gpt2_files.hpp"
#include "tokenizer_json.hpp"

namespace loom::bpe::testing {
namespace {

struct Actual {
  std::vector<int32_t> ids, type_ids;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
};

Actual encode(const BpeTokenizer& t, const ExpectedEncoding& e) {
  Actual r;
  if (!e.special && !e.b) {
    const TokenizedSequence s = t.tokenize_sequence(e.a.data(), e.a.size(), OffsetUnit::code_points);
    r.ids = s.ids;
    r.type_ids.assign(s.ids.size(), 0);
    for (const TokenOffset& o : s.offsets) r.offsets.emplace_back(o.begin, o.end);
    return r;
  }
  EncodeOptions options;
  options.max_length = 0;
  options.truncation = Truncation::none;
  const char* b = e.b ? e.b->data() : nullptr;
  const size_t b_length = e.b ? e.b->size() : 0;
  const size_t n = t.encode_with_offsets(e.a.data(), e.a.size(), b, b_length, options, OffsetUnit::code_points,
                                         EncodedBuffers{nullptr, nullptr, nullptr, 0}, nullptr);
  r.ids.resize(n);
  r.type_ids.resize(n);
  std::vector<TokenOffset> offsets(n);
  t.encode_with_offsets(e.a.data(), e.a.size(), b, b_length, options, OffsetUnit::code_points,
                        EncodedBuffers{r.ids.data(), r.type_ids.data(), nullptr, n}, offsets.data());
  for (const TokenOffset& o : offsets) r.offsets.emplace_back(o.begin, o.end);
  return r;
}

std::string show(const std::vector<std::pair<uint32_t, uint32_t>>& offsets) {
  std::ostringstream s;
  for (const auto& [b, e] : offsets) s << "[" << b << "," << e << "]";
  return s.str();
}

std::string show(const std::vector<int32_t>& ids) {
  std::ostringstream s;
  for (int32_t id : ids) s << id << " ";
  return s.str();
}

// Compares every line of `fixture`; reports the first mismatches in full.
void expect_all_match(const BpeTokenizer& t, const std::string& fixture) {
  const std::vector<ExpectedEncoding> expected = read_expected(fixture);
  ASSERT_GT(expected.size(), 100u);
  size_t id_mismatches = 0, offset_mismatches = 0;
  for (const ExpectedEncoding& e : expected) {
    const Actual a = encode(t, e);
    const bool ids_match = a.ids == e.ids && a.type_ids == e.type_ids;
    const bool offsets_match = a.offsets == e.offsets;
    if (!ids_match && ++id_mismatches <= 5)
      ADD_FAILURE() << fixture << ": ids differ for a=\"" << e.a.substr(0, 200) << "\" b=" << (e.b ? *e.b : "(none)")
                    << "\n  expected " << show(e.ids) << "\n  actual   " << show(a.ids);
    if (ids_match && !offsets_match && ++offset_mismatches <= 5)
      ADD_FAILURE() << fixture << ": offsets differ for a=\"" << e.a.substr(0, 200) << "\"\n  expected "
                    << show(e.offsets) << "\n  actual   " << show(a.offsets);
  }
  EXPECT_EQ(id_mismatches, 0u) << "of " << expected.size() << " encodings in " << fixture;
  EXPECT_EQ(offset_mismatches, 0u) << "of " << expected.size() << " encodings in " << fixture;
  std::cout << fixture << ": " << expected.size() - id_mismatches << " of " << expected.size()
            << " id sequences and " << expected.size() - id_mismatches - offset_mismatches << " offset sequences match\n";
}

TEST(BpeFixtures, Gpt2VocabJsonAndMergesTxt) {
  const BpeTokenizer t(read_gpt2_files(fixture_path("gpt2/vocab.json"), fixture_path("gpt2/merges.txt")));
  expect_all_match(t, "expected-gpt2.jsonl.gz");
}

TEST(BpeFixtures, RobertaStyleTokenizerJson) {
  const BpeTokenizer t(read_tokenizer_json(fixture_path("roberta-tokenizer.json")));
  expect_all_match(t, "expected-roberta.jsonl.gz");
}

TEST(BpeFixtures, ModernbertStyleTokenizerJson) {
  const BpeTokenizer t(read_tokenizer_json(fixture_path("modernbert-tokenizer.json")));
  expect_all_match(t, "expected-modernbert.jsonl.gz");
}

TEST(BpeFixtures, NfcLowercaseTokenizerJson) {
  const BpeTokenizer t(read_tokenizer_json(fixture_path("lowercase-tokenizer.json")));
  expect_all_match(t, "expected-lowercase.jsonl.gz");
}

}  // namespace
}  // namespace loom::bpe::testing
