// See encoding_layout.hpp.
#include "encoding_layout.hpp"

#include <algorithm>
#include <string>

#include "loom/sdk/error.hpp"

namespace loom::bpe {
namespace {

void keep(TokenizedSequence& s, size_t n) {
  if (s.ids.size() > n) s.ids.resize(n);
  if (s.offsets.size() > n) s.offsets.resize(n);
}

// `tokenizers`' truncate_encodings, right side, no stride.
void truncate(TokenizedSequence& a, TokenizedSequence* b, size_t max_length, loom::Truncation strategy) {
  const size_t total = a.ids.size() + (b != nullptr ? b->ids.size() : 0);
  if (strategy == loom::Truncation::none || total <= max_length) return;
  const size_t to_remove = total - max_length;
  if (strategy == loom::Truncation::longest_first) {
    if (b == nullptr) {
      keep(a, max_length);
      return;
    }
    size_t n1 = a.ids.size(), n2 = b->ids.size();
    const bool swapped = n1 > n2;
    if (swapped) std::swap(n1, n2);  // n1: the shorter
    n2 = n1 > max_length ? n1 : std::max(n1, max_length - n1);
    if (n1 + n2 > max_length) {
      n1 = max_length / 2;
      n2 = n1 + max_length % 2;
    }
    if (swapped) std::swap(n1, n2);
    keep(a, n1);
    keep(*b, n2);
    return;
  }
  TokenizedSequence* target = strategy == loom::Truncation::only_first ? &a : b;
  if (target == nullptr)
    throw loom::Error("truncation only_second needs a pair of texts; a single text was given");
  if (target->ids.size() <= to_remove)
    throw loom::Error("truncation " + std::string(strategy == loom::Truncation::only_first ? "only_first" : "only_second") +
                      ": the sequence it may shorten has " + std::to_string(target->ids.size()) +
                      " tokens, too few to remove the " + std::to_string(to_remove) + " over max_length");
  keep(*target, target->ids.size() - to_remove);
}

}  // namespace

size_t lay_out(TokenizedSequence a, const TokenizedSequence* b_in, const PostProcessorSettings& post,
               const loom::EncodeOptions& options, int32_t pad_id, const loom::EncodedBuffers& out,
               loom::TokenOffset* offsets) {
  TokenizedSequence b_copy;
  TokenizedSequence* b = nullptr;
  if (b_in != nullptr) {
    b_copy = *b_in;
    b = &b_copy;
  }
  static const std::vector<TemplatePiece> kSingle{{0, {}, 0}}, kPair{{0, {}, 0}, {1, {}, 1}};
  const std::vector<TemplatePiece>& layout =
      post.has_template ? (b != nullptr ? post.pair : post.single) : (b != nullptr ? kPair : kSingle);
  size_t specials = 0;
  for (const TemplatePiece& p : layout) specials += p.ids.size();
  if (options.max_length > 0) {
    if (options.max_length < specials)
      throw loom::Error("max_length " + std::to_string(options.max_length) + " is shorter than the " +
                        std::to_string(specials) + " special tokens of the template");
    truncate(a, b, options.max_length - specials, options.truncation);
  }
  // Writes element `i` of the result when it fits.
  size_t length = 0;
  const auto put = [&](int32_t id, int32_t type_id, int32_t mask, loom::TokenOffset offset) {
    if (length < out.capacity) {
      if (out.input_ids != nullptr) out.input_ids[length] = id;
      if (out.token_type_ids != nullptr) out.token_type_ids[length] = type_id;
      if (out.attention_mask != nullptr) out.attention_mask[length] = mask;
      if (offsets != nullptr) offsets[length] = offset;
    }
    ++length;
  };
  for (const TemplatePiece& p : layout) {
    if (p.sequence < 0) {
      for (int32_t id : p.ids) put(id, p.type_id, 1, loom::TokenOffset{0, 0});
      continue;
    }
    const TokenizedSequence* s = p.sequence == 0 ? &a : b;
    if (s == nullptr) continue;  // a pair template's B for a single text: not reached
    for (size_t i = 0; i < s->ids.size(); ++i)
      put(s->ids[i], p.type_id, 1, i < s->offsets.size() ? s->offsets[i] : loom::TokenOffset{0, 0});
  }
  if (options.pad_to_max_length && options.max_length > length) {
    if (pad_id < 0)
      throw loom::Error("padding needs a pad token; the tokenizer has none (name one with the pad_token option)");
    while (length < options.max_length) put(pad_id, 0, 0, loom::TokenOffset{0, 0});
  }
  return length;
}

}  // namespace loom::bpe
