// BERT's input layout from token ids, with transformers' truncation strategies (right side):
//   single: [CLS] a [SEP]            token types 0...
//   pair:   [CLS] a [SEP] b [SEP]    token types 0 up to the first [SEP], 1 after
// longest_first removes one token at a time from the longer sequence (the second on ties), which
// is what transformers' closed form computes; only_first/only_second remove from one sequence
// and fail when it is too short; none keeps everything. Padding appends [PAD] with type 0, mask 0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/tokenizer.hpp"

namespace loom::wordpiece {

struct LayoutIds {
  int32_t cls;
  int32_t sep;
  int32_t pad;
};

/// Writes the layout into `out` (at most out.capacity elements per buffer) and returns the full
/// length. `b == nullptr` means a single sequence. Throws loom::Error when truncation cannot fit.
size_t encode_sequences(const int32_t* a, size_t a_count, const int32_t* b, size_t b_count,
                        const EncodeOptions& options, const LayoutIds& layout, const EncodedBuffers& out);

}  // namespace loom::wordpiece
