// Range checks of a shard's values; see shard_values.hpp.
#include "shard_values.hpp"

#include "loom/sdk/error.hpp"

namespace loom_datasets {
namespace {

[[noreturn]] void fail(const std::string& path, const char* key, size_t row, size_t column,
                       const std::string& what) {
  throw loom::IoError(path + ": key '" + key + "': row " + std::to_string(row) + ", column " +
                      std::to_string(column) + ": " + what);
}

std::string vocabulary_range(const ShardValueLimits& limits) {
  return "[0, " + std::to_string(limits.vocab_size) + ")" +
         (limits.vocabulary.empty() ? "" : " of " + limits.vocabulary);
}

void check_id(int32_t id, const std::string& path, const char* key, size_t row, size_t column,
              const ShardValueLimits& limits) {
  if (id >= 0 && (limits.vocab_size == 0 || id < limits.vocab_size)) return;
  if (id < 0) fail(path, key, row, column, "token id " + std::to_string(id) + " is negative");
  fail(path, key, row, column,
       "token id " + std::to_string(id) + " is outside the vocabulary " + vocabulary_range(limits) +
           ": the shard was prepared with a larger vocabulary than the run's [tokenizer]; use that "
           "vocabulary, or prepare the shards again with this one");
}

}  // namespace

void check_shard_values(const ShardData& data, const std::string& path, const ShardValueLimits& limits) {
  const auto L = static_cast<size_t>(data.shape.seq_length);
  const auto P = static_cast<size_t>(data.shape.predictions);
  for (size_t r = 0; r < data.shape.instances; ++r) {
    size_t length = 0;
    for (size_t c = 0; c < L; ++c) {
      const int8_t mask = data.input_mask[r * L + c];
      if (mask != 0 && mask != 1)
        fail(path, "input_mask", r, c, "value " + std::to_string(mask) + " is neither 0 nor 1");
      if (mask == 1 && length != c)
        fail(path, "input_mask", r, c,
             "1 after a 0: the real tokens must come first, then padding (the row's length is its "
             "count of 1s)");
      length += static_cast<size_t>(mask);
      check_id(data.input_ids[r * L + c], path, "input_ids", r, c, limits);
      const int8_t segment = data.segment_ids[r * L + c];
      if (segment != 0 && segment != 1)
        fail(path, "segment_ids", r, c,
             "value " + std::to_string(segment) + " is neither 0 nor 1 (sentence A or B)");
    }
    const int8_t next = data.next_sentence[r];
    if (next != 0 && next != 1)
      throw loom::IoError(path + ": key 'next_sentence_labels': row " + std::to_string(r) + ": value " +
                          std::to_string(next) + " is neither 0 (B follows A) nor 1 (B is random)");
    // Position 0 is [CLS], never masked: a 0 ends the list (NVIDIA's loader rule).
    for (size_t p = 0; p < P; ++p) {
      const int32_t position = data.masked_positions[r * P + p];
      if (position == 0) break;
      if (position < 0 || static_cast<size_t>(position) >= length)
        fail(path, "masked_lm_positions", r, p,
             "position " + std::to_string(position) + " is outside the row's " + std::to_string(length) +
                 " real tokens");
      check_id(data.masked_ids[r * P + p], path, "masked_lm_ids", r, p, limits);
    }
  }
}

}  // namespace loom_datasets
