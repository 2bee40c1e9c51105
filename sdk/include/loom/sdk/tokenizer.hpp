// Tokenizer: UTF-8 text → vocabulary ids and back, with BERT's [CLS]/[SEP] layout.
//
// Implementations: `wordpiece` (plugins/wordpiece; Hugging Face BertTokenizer semantics).
// Contract:
// - Ids are int32 in [0, vocab_size()). Text is UTF-8 given as pointer + length (no NUL needed).
// - Invalid UTF-8 never throws: each maximal invalid subsequence becomes U+FFFD (which the BERT
//   clean-text step then drops) and is counted in `invalid_utf8_replacements()`.
// - Output goes into caller buffers. Functions that produce a variable amount return the amount
//   NEEDED; they write at most `capacity` elements, so a caller whose buffer was too small calls
//   again with a bigger one (the result is the same; the replacement counter counts both calls).
// - Every method is const and safe to call from several threads at once on one object.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// Ids of the special tokens; -1 for one the vocabulary lacks.
struct SpecialTokenIds {
  int32_t pad;   ///< [PAD] (0 in the BERT layout)
  int32_t unk;   ///< [UNK] (100)
  int32_t cls;   ///< [CLS] (101)
  int32_t sep;   ///< [SEP] (102)
  int32_t mask;  ///< [MASK] (103)
};

/// How `encode` shortens a single text or a pair that does not fit `max_length` (Hugging Face names).
enum class Truncation : int32_t {
  longest_first = 0,  ///< remove one token at a time from the end of the longer sequence (ties: second)
  only_first = 1,     ///< remove from the end of the first sequence only
  only_second = 2,    ///< remove from the end of the second sequence only (pairs)
  none = 3,           ///< never truncate; the result may be longer than max_length
};

/// Options of `encode`.
struct EncodeOptions {
  size_t max_length = 512;  ///< total length with [CLS]/[SEP]; 0 = no limit
  Truncation truncation = Truncation::longest_first;
  bool pad_to_max_length = false;  ///< fill up to max_length with [PAD], type 0, mask 0
};

/// Caller buffers `encode` writes into, each holding `capacity` elements. `token_type_ids` and
/// `attention_mask` may be nullptr when not wanted.
struct EncodedBuffers {
  int32_t* input_ids;
  int32_t* token_type_ids;
  int32_t* attention_mask;
  size_t capacity;
};

/// Options of `decode` (Hugging Face defaults for BERT).
struct DecodeOptions {
  bool skip_special_tokens = false;          ///< drop [PAD] [UNK] [CLS] [SEP] [MASK]
  bool clean_up_tokenization_spaces = true;  ///< " ." → ".", " n't" → "n't", ... as Hugging Face does
};

class Tokenizer {
 public:
  static constexpr loom_component_kind kKind = LOOM_KIND_TOKENIZER;
  static constexpr unsigned kInterfaceVersion = 1;
  static constexpr const char* kRecipeTable = "tokenizer";

  virtual ~Tokenizer() = default;

  /// Number of vocabulary entries; every id is < vocab_size().
  virtual int32_t vocab_size() const = 0;
  /// The token spelled by `id` (NUL-terminated, valid while the tokenizer lives); nullptr when
  /// `id` is out of range.
  virtual const char* id_to_token(int32_t id) const = 0;
  /// The id of the token spelled `token[0, length)` exactly; -1 when it is not in the vocabulary.
  virtual int32_t token_to_id(const char* token, size_t length) const = 0;
  /// Ids of [PAD] [UNK] [CLS] [SEP] [MASK].
  virtual SpecialTokenIds special_token_ids() const = 0;
  /// True when `id`'s token continues the previous word (WordPiece "##x"): whole-word masking
  /// treats a token and the continuations after it as one word.
  virtual bool is_continuation(int32_t id) const = 0;
  /// True when the tokenizer lower-cases and strips accents (an uncased vocabulary).
  virtual bool lower_case() const = 0;

  /// Tokenizes `text[0, length)` into ids without [CLS]/[SEP]. Writes min(needed, capacity) ids
  /// into `ids` and returns the number needed.
  virtual size_t tokenize(const char* text, size_t length, int32_t* ids, size_t capacity) const = 0;

  /// The words WordPiece sees, joined by single spaces: `text` after clean-up, CJK splitting,
  /// lower-casing and accent stripping (uncased), punctuation and special-token splitting (a special
  /// token appears as itself). Writes min(needed, capacity) bytes and, when it fits, a NUL;
  /// returns the byte count needed without the NUL. Vocabulary trainers count these words.
  virtual size_t pre_tokenize(const char* text, size_t length, char* words, size_t capacity) const = 0;

  /// [CLS] a [SEP] (b == nullptr) or [CLS] a [SEP] b [SEP], truncated per `options`; token type 0
  /// up to the first [SEP], 1 after it; mask 1 for real tokens. Returns the length needed (padded
  /// length when padding); writes at most `out.capacity` elements of each buffer. Throws
  /// loom::Error when the strategy cannot fit max_length (e.g. only_second with a long first text).
  virtual size_t encode(const char* a, size_t a_length, const char* b, size_t b_length,
                        const EncodeOptions& options, const EncodedBuffers& out) const = 0;
  /// As `encode`, from ids that `tokenize` produced (b == nullptr for a single sequence).
  virtual size_t encode_ids(const int32_t* a, size_t a_count, const int32_t* b, size_t b_count,
                            const EncodeOptions& options, const EncodedBuffers& out) const = 0;

  /// Ids back to text: tokens joined by spaces, "##" continuations glued to the previous token,
  /// then the options' clean-ups. Writes min(needed, capacity) bytes and, when it fits, a NUL;
  /// returns the byte count needed without the NUL. Out-of-range ids throw loom::Error.
  virtual size_t decode(const int32_t* ids, size_t count, const DecodeOptions& options, char* text,
                        size_t capacity) const = 0;

  /// Invalid UTF-8 sequences replaced (by every call so far on this object).
  virtual uint64_t invalid_utf8_replacements() const = 0;
};

LOOM_SDK_NAMESPACE_END
