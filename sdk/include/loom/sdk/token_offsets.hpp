// TokenOffsets: ids together with where each token came from in the input text — a named
// interface (interfaces.hpp) a tokenizer may offer beside loom::Tokenizer (tokenizer/bpe does).
//
// An offset pair [begin, end) locates a token in the text the caller passed (for a pair, in its own
// text: a in `a`, b in `b`), in one of two units:
//   bytes        UTF-8 bytes of the caller's text;
//   code_points  Unicode scalar values (what Hugging Face `tokenizers` reports through its Python
//                and Node.js bindings: `Encoding.offsets` / `getOffsets()` count characters, not
//                UTF-16 units and not bytes).
// A token made of part of a character (byte-level BPE splits "😀" into two tokens) spans the whole
// character, so two tokens may share an offset range. Tokens the template adds ([CLS], <s>, ...)
// and padding get [0, 0). An invalid UTF-8 sequence counts as the U+FFFD that replaces it: its bytes
// in byte offsets, one code point in code-point offsets.
//
// Buffers and return values follow tokenizer.hpp: the amount NEEDED is returned and at most
// `capacity` elements are written. Methods are const and safe to call from several threads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/tokenizer.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// The unit of an offset.
enum class OffsetUnit : int32_t {
  bytes = 0,        ///< UTF-8 bytes
  code_points = 1,  ///< Unicode scalar values (Hugging Face's unit)
};

/// Where a token came from: [begin, end) in the unit asked for.
struct TokenOffset {
  uint32_t begin;
  uint32_t end;
};

class TokenOffsets {
 public:
  static constexpr const char* kInterfaceName = "loom.tokenizer.token_offsets";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// As Tokenizer::tokenize (no template tokens), writing each token's offsets into `offsets`
  /// (`capacity` elements, like `ids`). Returns the number of tokens needed.
  virtual size_t tokenize_with_offsets(const char* text, size_t length, OffsetUnit unit, int32_t* ids,
                                       TokenOffset* offsets, size_t capacity) const = 0;

  /// As Tokenizer::encode (template, truncation, padding), with offsets into `offsets`
  /// (`out.capacity` elements; nullptr when not wanted). Returns the length needed.
  virtual size_t encode_with_offsets(const char* a, size_t a_length, const char* b, size_t b_length,
                                     const EncodeOptions& options, OffsetUnit unit, const EncodedBuffers& out,
                                     TokenOffset* offsets) const = 0;

 protected:
  ~TokenOffsets() = default;
};

LOOM_SDK_NAMESPACE_END
