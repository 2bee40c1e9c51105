// tokenizer/wordpiece; see wordpiece_tokenizer.hpp for the options and the contract.
#include "wordpiece_tokenizer.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "file_sha256.hpp"
#include "sequence_encoder.hpp"
#include "token_decoder.hpp"

namespace loom::wordpiece {
namespace {

// Collects WordPiece ids of every piece.
class IdCollector final : public PieceSink {
 public:
  IdCollector(const WordpieceMatcher& matcher, std::vector<int32_t>& ids) : matcher_(matcher), ids_(ids) {}
  void piece(std::string_view utf8, size_t code_points) override { matcher_.match(utf8, code_points, ids_); }
  void special(std::string_view, int32_t id) override { ids_.push_back(id); }

 private:
  const WordpieceMatcher& matcher_;
  std::vector<int32_t>& ids_;
};

// Joins pieces with single spaces.
class WordJoiner final : public PieceSink {
 public:
  explicit WordJoiner(std::string& text) : text_(text) {}
  void piece(std::string_view utf8, size_t) override { add(utf8); }
  void special(std::string_view token, int32_t) override { add(token); }

 private:
  void add(std::string_view word) {
    if (!text_.empty()) text_.push_back(' ');
    text_.append(word);
  }
  std::string& text_;
};

size_t copy_text(const std::string& text, char* out, size_t capacity) {
  if (out != nullptr && capacity > 0) {
    const size_t n = std::min(text.size(), capacity);
    std::memcpy(out, text.data(), n);
    if (n < capacity) out[n] = '\0';
  }
  return text.size();
}

}  // namespace

WordpieceTokenizer::WordpieceTokenizer(loom::ComponentContext& context) {
  Options& options = context.options();
  settings_.vocab_path = options.required<std::string>("vocab");
  const bool cased = options.get<bool>("cased", false);
  settings_.basic.lower_case = !cased;
  settings_.basic.strip_accents = options.get<bool>("strip_accents", !cased);
  settings_.basic.tokenize_chinese_chars = options.get<bool>("tokenize_chinese_chars", true);
  settings_.basic.split_special_tokens = options.get<bool>("split_special_tokens", false);
  settings_.max_input_chars_per_word =
      options.get<int64_t>("max_input_chars_per_word", 100, loom::Range{1, 1e6});
  if (!options.problems().empty()) return;
  std::error_code error;
  if (!std::filesystem::is_regular_file(settings_.vocab_path, error)) {
    options.fail("vocab", "no vocabulary file '" + settings_.vocab_path +
                              "' (relative paths resolve against the current directory, " +
                              std::filesystem::current_path(error).string() + ")");
    return;
  }
  if (context.dry_run()) return;
  vocabulary_ = Vocabulary::load(settings_.vocab_path);
  vocabulary_sha256_ = file_sha256_hex(settings_.vocab_path);
  if (vocabulary_.find("[UNK]") < 0) {
    options.fail("vocab",
                 "'" + settings_.vocab_path + "' has no [UNK] token; a WordPiece vocabulary needs one");
    return;
  }
  initialise();
}

WordpieceTokenizer::WordpieceTokenizer(const WordpieceSettings& settings, Vocabulary vocabulary)
    : settings_(settings), vocabulary_(std::move(vocabulary)) {
  if (vocabulary_.find("[UNK]") < 0) throw loom::ConfigError("the vocabulary has no [UNK] token");
  initialise();
}

void WordpieceTokenizer::initialise() {
  specials_ = SpecialTokenIds{vocabulary_.find("[PAD]"), vocabulary_.find("[UNK]"), vocabulary_.find("[CLS]"),
                              vocabulary_.find("[SEP]"), vocabulary_.find("[MASK]")};
  std::vector<SpecialToken> specials;
  for (const char* name : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    const int32_t id = vocabulary_.find(name);
    if (id >= 0) specials.push_back(SpecialToken{name, id});
  }
  basic_ = std::make_unique<BasicTokenizer>(settings_.basic, std::move(specials));
  matcher_ =
      std::make_unique<WordpieceMatcher>(vocabulary_, specials_.unk, settings_.max_input_chars_per_word);
}

int32_t WordpieceTokenizer::token_to_id(const char* token, size_t length) const {
  return vocabulary_.find(std::string_view(token, length));
}

std::vector<int32_t> WordpieceTokenizer::tokenize_to_vector(const char* text, size_t length) const {
  if (!basic_)
    throw loom::Error("tokenizer/wordpiece was created for a dry run and has no vocabulary loaded");
  std::vector<int32_t> ids;
  ids.reserve(length / 3 + 8);
  IdCollector collector(*matcher_, ids);
  uint64_t replacements = 0;
  basic_->run(text, length, collector, &replacements);
  if (replacements > 0) replacements_.fetch_add(replacements);
  return ids;
}

size_t WordpieceTokenizer::tokenize(const char* text, size_t length, int32_t* ids, size_t capacity) const {
  const std::vector<int32_t> all = tokenize_to_vector(text, length);
  if (ids != nullptr) std::copy_n(all.begin(), std::min(capacity, all.size()), ids);
  return all.size();
}

size_t WordpieceTokenizer::pre_tokenize(const char* text, size_t length, char* words, size_t capacity) const {
  if (!basic_)
    throw loom::Error("tokenizer/wordpiece was created for a dry run and has no vocabulary loaded");
  std::string joined;
  WordJoiner joiner(joined);
  uint64_t replacements = 0;
  basic_->run(text, length, joiner, &replacements);
  if (replacements > 0) replacements_.fetch_add(replacements);
  return copy_text(joined, words, capacity);
}

size_t WordpieceTokenizer::encode(const char* a, size_t a_length, const char* b, size_t b_length,
                                  const EncodeOptions& options, const EncodedBuffers& out) const {
  const std::vector<int32_t> first = tokenize_to_vector(a, a_length);
  if (b == nullptr) return encode_ids(first.data(), first.size(), nullptr, 0, options, out);
  const std::vector<int32_t> second = tokenize_to_vector(b, b_length);
  return encode_ids(first.data(), first.size(), second.data(), second.size(), options, out);
}

size_t WordpieceTokenizer::encode_ids(const int32_t* a, size_t a_count, const int32_t* b, size_t b_count,
                                      const EncodeOptions& options, const EncodedBuffers& out) const {
  static const int32_t kNone = 0;
  // The vocabulary is the user's file: name it and the token it lacks (exit 2 through the host).
  if (specials_.cls < 0 || specials_.sep < 0)
    throw loom::IoError(
        (settings_.vocab_path.empty() ? std::string("the vocabulary") : settings_.vocab_path) + ": has no " +
        (specials_.cls < 0 ? "[CLS]" : "[SEP]") +
        " token; encoding a text or a pair ([CLS] a [SEP] b [SEP]) needs [CLS] and [SEP]");
  // A pair whose second sequence is empty is still a pair: keep b non-null.
  const int32_t* second = b != nullptr && b_count == 0 ? &kNone : b;
  return encode_sequences(a, a_count, second, b_count, options,
                          LayoutIds{specials_.cls, specials_.sep, specials_.pad}, out);
}

size_t WordpieceTokenizer::decode(const int32_t* ids, size_t count, const DecodeOptions& options, char* text,
                                  size_t capacity) const {
  const int32_t specials[] = {specials_.pad, specials_.unk, specials_.cls, specials_.sep, specials_.mask};
  return copy_text(decode_ids(vocabulary_, ids, count, options, specials, 5), text, capacity);
}

}  // namespace loom::wordpiece
