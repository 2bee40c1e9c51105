// NSP pairs and static masks; see pretraining_instances.hpp. Comments quote the reference's
// behaviour where a faithful copy matters more than tidiness.
#include "prep/pretraining_instances.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace loom::host {
namespace {

// truncate_seq_pair: trims the longer sequence (B on ties) one token at a time, from the front
// or the back with probability 1/2 each, until the pair fits.
void truncate_seq_pair(std::vector<int32_t>& a, std::vector<int32_t>& b, size_t max_num_tokens,
                       PythonRandom& rng) {
  while (a.size() + b.size() > max_num_tokens) {
    std::vector<int32_t>& longer = a.size() > b.size() ? a : b;
    if (longer.empty()) throw std::logic_error("truncate_seq_pair: nothing left to trim");
    if (rng.random() < 0.5)
      longer.erase(longer.begin());
    else
      longer.pop_back();
  }
}

}  // namespace

void mask_tokens(PretrainingInstance& instance, const MaskingOptions& options, const MaskingVocabulary& vocab,
                 PythonRandom& rng) {
  std::vector<int32_t>& tokens = instance.tokens;
  // Candidates: every position but [CLS]/[SEP]; with whole-word masking a "##" piece joins the
  // group of the position before it.
  std::vector<std::vector<int32_t>> candidates;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t id = tokens[i];
    if (id == vocab.cls || id == vocab.sep) continue;
    const bool continues = options.whole_word_masking && !candidates.empty() && id >= 0 &&
                           static_cast<size_t>(id) < vocab.is_continuation.size() &&
                           vocab.is_continuation[static_cast<size_t>(id)] != 0;
    if (continues)
      candidates.back().push_back(static_cast<int32_t>(i));
    else
      candidates.push_back({static_cast<int32_t>(i)});
  }
  rng.shuffle(candidates);

  // Python 3 round() is round-half-to-even, as nearbyint is in the default rounding mode.
  const double expected = std::nearbyint(static_cast<double>(tokens.size()) * options.masked_lm_prob);
  const size_t num_to_predict = std::min(static_cast<size_t>(options.max_predictions),
                                         std::max<size_t>(1, static_cast<size_t>(expected)));
  // The reference draws "keep" with p = 0.5 after missing the 0.8 [MASK] draw; in general the
  // keep share of what is not [MASK] is (1 - mask - random) / (1 - mask).
  const double not_mask = 1.0 - options.mask_ratio;
  const double keep_given_not_mask = not_mask > 0 ? (not_mask - options.random_ratio) / not_mask : 0.0;
  const std::vector<int32_t> original = tokens;
  std::vector<uint8_t> covered(tokens.size(), 0);
  std::vector<int32_t> chosen;
  for (const auto& group : candidates) {
    if (chosen.size() >= num_to_predict) break;
    // Whole words that would overshoot are skipped (the reference's `continue`).
    if (chosen.size() + group.size() > num_to_predict) continue;
    bool any_covered = false;
    for (int32_t index : group) any_covered = any_covered || covered[static_cast<size_t>(index)] != 0;
    if (any_covered) continue;
    for (int32_t index : group) {
      covered[static_cast<size_t>(index)] = 1;
      int32_t replacement;
      if (rng.random() < options.mask_ratio) {
        replacement = vocab.mask;
      } else if (rng.random() < keep_given_not_mask) {
        replacement = original[static_cast<size_t>(index)];
      } else {
        replacement = static_cast<int32_t>(rng.randint(0, vocab.vocab_size - 1));
      }
      tokens[static_cast<size_t>(index)] = replacement;
      chosen.push_back(index);
    }
  }
  std::sort(chosen.begin(), chosen.end());
  instance.masked_positions = chosen;
  instance.masked_ids.clear();
  for (int32_t index : chosen) instance.masked_ids.push_back(original[static_cast<size_t>(index)]);
}

void create_instances_from_document(const std::vector<TokenizedDocument>& documents, size_t document_index,
                                    const MaskingOptions& options, const MaskingVocabulary& vocab,
                                    PythonRandom& rng, std::vector<PretrainingInstance>& out) {
  const TokenizedDocument& document = documents[document_index];
  const int64_t max_num_tokens = options.max_seq_length - 3;
  // Usually fill the whole sequence; sometimes (short_seq_prob) aim shorter so the model also
  // sees short sequences as in fine-tuning.
  int64_t target_seq_length = max_num_tokens;
  if (rng.random() < options.short_seq_prob) target_seq_length = rng.randint(2, max_num_tokens);

  std::vector<const std::vector<int32_t>*> chunk;
  int64_t chunk_length = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(document.size()); ++i) {
    const std::vector<int32_t>& segment = document[static_cast<size_t>(i)];
    chunk.push_back(&segment);
    chunk_length += static_cast<int64_t>(segment.size());
    if (i == static_cast<int64_t>(document.size()) - 1 || chunk_length >= target_seq_length) {
      if (!chunk.empty()) {
        // A = the first a_end sentences of the chunk.
        int64_t a_end = 1;
        if (chunk.size() >= 2) a_end = rng.randint(1, static_cast<int64_t>(chunk.size()) - 1);
        std::vector<int32_t> a;
        for (int64_t j = 0; j < a_end; ++j) a.insert(a.end(), chunk[j]->begin(), chunk[j]->end());
        std::vector<int32_t> b;
        bool is_random_next = false;
        if (chunk.size() == 1 || rng.random() < 0.5) {
          is_random_next = true;
          const int64_t target_b_length = target_seq_length - static_cast<int64_t>(a.size());
          int64_t random_index = 0;
          for (int attempt = 0; attempt < 10; ++attempt) {
            random_index = rng.randint(0, static_cast<int64_t>(documents.size()) - 1);
            if (random_index != static_cast<int64_t>(document_index)) break;
          }
          // Ten draws of the same document: B is then this document's text after all.
          if (random_index == static_cast<int64_t>(document_index)) is_random_next = false;
          const TokenizedDocument& random_document = documents[static_cast<size_t>(random_index)];
          const int64_t random_start = rng.randint(0, static_cast<int64_t>(random_document.size()) - 1);
          for (size_t j = static_cast<size_t>(random_start); j < random_document.size(); ++j) {
            b.insert(b.end(), random_document[j].begin(), random_document[j].end());
            if (static_cast<int64_t>(b.size()) >= target_b_length) break;
          }
          // The unused sentences of the chunk go back to be used by the next instance.
          i -= static_cast<int64_t>(chunk.size()) - a_end;
        } else {
          for (size_t j = static_cast<size_t>(a_end); j < chunk.size(); ++j)
            b.insert(b.end(), chunk[j]->begin(), chunk[j]->end());
        }
        truncate_seq_pair(a, b, static_cast<size_t>(max_num_tokens), rng);
        if (a.empty() || b.empty())
          throw std::logic_error(
              "create_instances_from_document: an empty sentence reached the pair builder");

        PretrainingInstance instance;
        instance.is_random_next = is_random_next;
        instance.tokens.reserve(a.size() + b.size() + 3);
        instance.tokens.push_back(vocab.cls);
        instance.tokens.insert(instance.tokens.end(), a.begin(), a.end());
        instance.tokens.push_back(vocab.sep);
        instance.segment_ids.assign(instance.tokens.size(), 0);
        instance.tokens.insert(instance.tokens.end(), b.begin(), b.end());
        instance.tokens.push_back(vocab.sep);
        instance.segment_ids.resize(instance.tokens.size(), 1);
        mask_tokens(instance, options, vocab, rng);
        out.push_back(std::move(instance));
      }
      chunk.clear();
      chunk_length = 0;
    }
  }
}

std::vector<PretrainingInstance> create_training_instances(std::vector<TokenizedDocument> documents,
                                                           int32_t dupe_factor, const MaskingOptions& options,
                                                           const MaskingVocabulary& vocab,
                                                           PythonRandom& rng) {
  documents.erase(std::remove_if(documents.begin(), documents.end(),
                                 [](const TokenizedDocument& d) { return d.empty(); }),
                  documents.end());
  rng.shuffle(documents);
  std::vector<PretrainingInstance> instances;
  for (int32_t pass = 0; pass < dupe_factor; ++pass)
    for (size_t index = 0; index < documents.size(); ++index)
      create_instances_from_document(documents, index, options, vocab, rng, instances);
  rng.shuffle(instances);
  return instances;
}

}  // namespace loom::host
