// Offsets of one sequence's tokens: input bytes → code points, the ByteLevel post-processor's
// trimming (done in code points, as `tokenizers` does it for its Python and Node.js bindings),
// and back to bytes when the caller asked for bytes.
#pragma once

#include <string_view>
#include <vector>

#include "bpe_pipeline.hpp"
#include "loom/sdk/token_offsets.hpp"

namespace loom::bpe {

struct TrimSettings {
  bool trim = false;                   ///< ByteLevel/RobertaProcessing trim_offsets
  bool keeps_prefix_space = false;     ///< the processor's add_prefix_space
};

/// Offsets of `tokens` (bytes of valid UTF-8 `text`) in `unit`, trimmed per `trim`: a token's
/// leading spaces move its begin forward and its trailing spaces move its end back (never past
/// each other), except one leading space of the first token (index 0 or offset 0) when the
/// processor adds a prefix space — the space it added stands for no character.
std::vector<loom::TokenOffset> sequence_offsets(std::string_view text, const std::vector<SequenceToken>& tokens,
                                                const TrimSettings& trim, loom::OffsetUnit unit);

}  // namespace loom::bpe
