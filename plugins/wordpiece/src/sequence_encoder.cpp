// [CLS]/[SEP] layout and truncation; see sequence_encoder.hpp for the contract.
#include "sequence_encoder.hpp"

#include <string>

#include "loom/sdk/error.hpp"

namespace loom::wordpiece {
namespace {

const char* strategy_name(Truncation t) {
  switch (t) {
    case Truncation::longest_first:
      return "longest_first";
    case Truncation::only_first:
      return "only_first";
    case Truncation::only_second:
      return "only_second";
    case Truncation::none:
      return "none";
  }
  return "?";
}

[[noreturn]] void cannot_fit(const EncodeOptions& options, size_t a_count, size_t b_count, bool pair,
                             const char* why) {
  throw loom::Error("cannot truncate to max_length " + std::to_string(options.max_length) + " with " +
                    strategy_name(options.truncation) + ": first sequence has " + std::to_string(a_count) +
                    " tokens" + (pair ? ", second " + std::to_string(b_count) : std::string()) + "; " + why);
}

// How many tokens to drop from each sequence.
void plan_truncation(size_t a_count, size_t b_count, bool pair, const EncodeOptions& options, size_t* a_drop,
                     size_t* b_drop) {
  *a_drop = *b_drop = 0;
  const size_t specials = pair ? 3 : 2;
  const size_t total = a_count + b_count + specials;
  if (options.max_length == 0 || options.truncation == Truncation::none || total <= options.max_length)
    return;
  const size_t excess = total - options.max_length;
  switch (options.truncation) {
    case Truncation::longest_first: {
      if (excess > a_count + b_count)
        cannot_fit(options, a_count, b_count, pair, "max_length leaves no room for the text");
      // One token at a time from the longer one, the second on ties (transformers' closed form).
      const size_t gap = a_count > b_count ? a_count - b_count : b_count - a_count;
      const size_t first = excess < gap ? excess : gap;
      const size_t rest = excess - first;
      if (!pair) {
        *a_drop = excess;
      } else if (a_count > b_count) {
        *a_drop = first + rest / 2, *b_drop = rest - rest / 2;
      } else {
        *a_drop = rest / 2, *b_drop = first + rest - rest / 2;
      }
      return;
    }
    case Truncation::only_first:
      if (a_count <= excess) cannot_fit(options, a_count, b_count, pair, "the first sequence is too short");
      *a_drop = excess;
      return;
    case Truncation::only_second:
      if (!pair) cannot_fit(options, a_count, b_count, pair, "only_second needs a pair of sequences");
      if (b_count <= excess) cannot_fit(options, a_count, b_count, pair, "the second sequence is too short");
      *b_drop = excess;
      return;
    case Truncation::none:
      return;
  }
}

class LayoutWriter {
 public:
  explicit LayoutWriter(const EncodedBuffers& out) : out_(out) {}
  void put(int32_t id, int32_t type, int32_t mask) {
    if (length_ < out_.capacity) {
      out_.input_ids[length_] = id;
      if (out_.token_type_ids != nullptr) out_.token_type_ids[length_] = type;
      if (out_.attention_mask != nullptr) out_.attention_mask[length_] = mask;
    }
    ++length_;
  }
  size_t length() const { return length_; }

 private:
  const EncodedBuffers& out_;
  size_t length_ = 0;
};

}  // namespace

size_t encode_sequences(const int32_t* a, size_t a_count, const int32_t* b, size_t b_count,
                        const EncodeOptions& options, const LayoutIds& layout, const EncodedBuffers& out) {
  const bool pair = b != nullptr;
  if (!pair) b_count = 0;
  if (layout.cls < 0 || layout.sep < 0)
    throw loom::Error("the vocabulary has no [CLS] or no [SEP]; encode needs both");
  if (out.input_ids == nullptr && out.capacity > 0) throw loom::Error("encode: input_ids buffer is null");
  size_t a_drop = 0, b_drop = 0;
  plan_truncation(a_count, b_count, pair, options, &a_drop, &b_drop);
  LayoutWriter writer(out);
  writer.put(layout.cls, 0, 1);
  for (size_t i = 0; i < a_count - a_drop; ++i) writer.put(a[i], 0, 1);
  writer.put(layout.sep, 0, 1);
  if (pair) {
    for (size_t i = 0; i < b_count - b_drop; ++i) writer.put(b[i], 1, 1);
    writer.put(layout.sep, 1, 1);
  }
  if (options.pad_to_max_length && options.max_length > writer.length()) {
    if (layout.pad < 0) throw loom::Error("the vocabulary has no [PAD]; padding needs it");
    while (writer.length() < options.max_length) writer.put(layout.pad, 0, 0);
  }
  return writer.length();
}

}  // namespace loom::wordpiece
