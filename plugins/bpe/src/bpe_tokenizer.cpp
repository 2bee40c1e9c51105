// tokenizer/bpe; see bpe_tokenizer.hpp for the options and the contract.
#include "bpe_tokenizer.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "byte_level_decoder.hpp"
#include "files_sha256.hpp"
#include "gpt2_files.hpp"
#include "token_offsets_conversion.hpp"
#include "tokenizer_json.hpp"
#include "utf8.hpp"

namespace loom::bpe {
namespace {

size_t copy_text(const std::string& text, char* out, size_t capacity) {
  if (out != nullptr && capacity > 0) {
    const size_t n = std::min(text.size(), capacity);
    std::memcpy(out, text.data(), n);
    if (n < capacity) out[n] = '\0';
  }
  return text.size();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

BpeTokenizer::BpeTokenizer(loom::ComponentContext& context) {
  Options& options = context.options();
  const std::string vocab = options.required<std::string>("vocab");
  const std::string merges = options.get<std::string>("merges", "");
  const std::optional<bool> add_prefix_space = options.optional<bool>("add_prefix_space");
  SpecialTokenNames names;
  names.pad = options.get<std::string>("pad_token", "");
  names.mask = options.get<std::string>("mask_token", "");
  names.unk = options.get<std::string>("unk_token", "");
  names.cls = options.get<std::string>("cls_token", "");
  names.sep = options.get<std::string>("sep_token", "");
  if (!options.problems().empty()) return;
  const bool pair_form = !merges.empty();
  std::error_code error;
  for (const std::string& file : pair_form ? std::vector<std::string>{vocab, merges} : std::vector<std::string>{vocab})
    if (!std::filesystem::is_regular_file(file, error)) {
      options.fail(file == vocab ? "vocab" : "merges",
                   "no such file '" + file + "' (relative paths resolve against the current directory, " +
                       std::filesystem::current_path(error).string() + ")");
      return;
    }
  if (!pair_form && ends_with(vocab, "vocab.json")) {
    options.fail("merges", "'" + vocab + "' is a vocab.json; name its merges.txt with `merges`, or give a tokenizer.json");
    return;
  }
  if (!pair_form && add_prefix_space) {
    options.fail("add_prefix_space", "applies to vocab.json + merges.txt only; a tokenizer.json sets it in its "
                                     "pre_tokenizer");
    return;
  }
  if (context.dry_run()) return;
  BpeConfig config = pair_form ? read_gpt2_files(vocab, merges) : read_tokenizer_json(vocab);
  if (pair_form && add_prefix_space) config.pre_tokenizer.add_prefix_space = *add_prefix_space;
  path_ = vocab;
  sha256_ = files_sha256_hex(pair_form ? std::vector<std::string>{vocab, merges} : std::vector<std::string>{vocab});
  initialise(std::move(config), names);
}

BpeTokenizer::BpeTokenizer(BpeConfig config, const SpecialTokenNames& names) { initialise(std::move(config), names); }

void BpeTokenizer::initialise(BpeConfig config, const SpecialTokenNames& names) {
  // Spellings by id: the model's vocabulary, then added tokens (which may take new ids).
  int32_t size = 0;
  for (const auto& [spelling, id] : config.vocabulary) size = std::max(size, id + 1);
  for (const AddedToken& t : config.added_tokens) size = std::max(size, t.id + 1);
  spellings_.assign(static_cast<size_t>(size), std::string());
  added_.assign(static_cast<size_t>(size), 0);
  for (const auto& [spelling, id] : config.vocabulary) spellings_[static_cast<size_t>(id)] = spelling;
  for (const AddedToken& t : config.added_tokens) {
    spellings_[static_cast<size_t>(t.id)] = t.content;
    added_[static_cast<size_t>(t.id)] = t.special ? 2 : 1;
  }
  lower_case_ = std::find(config.normalizer.begin(), config.normalizer.end(), NormalizerStep::lowercase) !=
                config.normalizer.end();

  const auto find = [&](const std::string& wanted, std::initializer_list<const char*> defaults,
                        const char* option) -> int32_t {
    if (!wanted.empty()) {
      const int32_t id = token_to_id(wanted.data(), wanted.size());
      if (id < 0)
        throw loom::ConfigError(config.source + ": tokenizer." + option + " '" + wanted + "' is not a token of it");
      return id;
    }
    for (const char* name : defaults)
      if (const int32_t id = token_to_id(name, std::strlen(name)); id >= 0) return id;
    return -1;
  };
  specials_.pad = find(names.pad, {"<pad>", "[PAD]", "<|padding|>"}, "pad_token");
  specials_.mask = find(names.mask, {"<mask>", "[MASK]"}, "mask_token");
  specials_.unk = config.model.unk_token ? find(*config.model.unk_token, {}, "unk_token")
                                         : find(names.unk, {"<unk>", "[UNK]"}, "unk_token");
  if (!names.unk.empty()) specials_.unk = find(names.unk, {}, "unk_token");
  // [CLS]/[SEP]: the single-sequence template's first and last special tokens.
  int32_t cls = -1, sep = -1;
  if (config.post_processor.has_template) {
    const auto& single = config.post_processor.single;
    if (!single.empty() && single.front().sequence < 0 && !single.front().ids.empty()) cls = single.front().ids.front();
    if (!single.empty() && single.back().sequence < 0 && !single.back().ids.empty()) sep = single.back().ids.back();
  }
  specials_.cls = names.cls.empty() ? cls : find(names.cls, {}, "cls_token");
  specials_.sep = names.sep.empty() ? sep : find(names.sep, {}, "sep_token");

  pipeline_ = std::make_unique<BpePipeline>(config);  // takes the vocabulary and merges
  config_ = std::move(config);
}

void BpeTokenizer::require_loaded() const {
  if (!pipeline_) throw loom::Error("tokenizer/bpe was created for a dry run and has no vocabulary loaded");
}

const char* BpeTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= spellings_.size()) return nullptr;
  return spellings_[static_cast<size_t>(id)].c_str();
}

int32_t BpeTokenizer::token_to_id(const char* token, size_t length) const {
  const std::string_view wanted(token, length);
  for (const AddedToken& t : config_.added_tokens)
    if (t.content == wanted) return t.id;
  if (pipeline_) {
    const TokenIds& vocabulary = pipeline_->model().vocabulary();
    if (auto it = vocabulary.find(wanted); it != vocabulary.end()) return it->second;
    return -1;
  }
  // During initialise, before the model holds the vocabulary.
  for (size_t id = 0; id < spellings_.size(); ++id)
    if (spellings_[id] == wanted && !spellings_[id].empty()) return static_cast<int32_t>(id);
  return -1;
}

bool BpeTokenizer::is_continuation(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= spellings_.size() || added_[static_cast<size_t>(id)] != 0) return false;
  const std::string& s = spellings_[static_cast<size_t>(id)];
  if (s.empty()) return false;
  return !(s.size() >= 2 && static_cast<unsigned char>(s[0]) == 0xC4 && static_cast<unsigned char>(s[1]) == 0xA0);
}

TokenizedSequence BpeTokenizer::tokenize_sequence(const char* text, size_t length, OffsetUnit unit) const {
  require_loaded();
  const RepairedUtf8 repaired = repair_utf8(text, length);
  if (repaired.replaced > 0) replacements_.fetch_add(repaired.replaced);
  const std::string_view clean = repaired.replaced > 0 ? std::string_view(repaired.text) : std::string_view(text, length);
  std::vector<SequenceToken> tokens;
  tokens.reserve(length / 3 + 4);
  pipeline_->run(clean, tokens);
  TokenizedSequence out;
  out.ids.reserve(tokens.size());
  for (const SequenceToken& t : tokens) out.ids.push_back(t.id);
  const TrimSettings trim{config_.post_processor.trim_offsets, config_.post_processor.trim_keeps_prefix_space};
  out.offsets = sequence_offsets(clean, tokens, trim, unit);
  if (unit == OffsetUnit::bytes && repaired.replaced > 0)
    for (TokenOffset& o : out.offsets)
      o = TokenOffset{static_cast<uint32_t>(repaired.input_offset(o.begin)),
                      static_cast<uint32_t>(repaired.input_offset(o.end))};
  return out;
}

std::vector<int32_t> BpeTokenizer::tokenize_to_vector(const char* text, size_t length) const {
  require_loaded();
  const RepairedUtf8 repaired = repair_utf8(text, length);
  if (repaired.replaced > 0) replacements_.fetch_add(repaired.replaced);
  const std::string_view clean = repaired.replaced > 0 ? std::string_view(repaired.text) : std::string_view(text, length);
  thread_local std::vector<SequenceToken> tokens;
  tokens.clear();
  pipeline_->run(clean, tokens);
  std::vector<int32_t> ids(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) ids[i] = tokens[i].id;
  return ids;
}

size_t BpeTokenizer::tokenize(const char* text, size_t length, int32_t* ids, size_t capacity) const {
  const std::vector<int32_t> all = tokenize_to_vector(text, length);
  if (ids != nullptr) std::copy_n(all.begin(), std::min(capacity, all.size()), ids);
  return all.size();
}

size_t BpeTokenizer::tokenize_with_offsets(const char* text, size_t length, OffsetUnit unit, int32_t* ids,
                                           TokenOffset* offsets, size_t capacity) const {
  const TokenizedSequence s = tokenize_sequence(text, length, unit);
  const size_t n = std::min(capacity, s.ids.size());
  if (ids != nullptr) std::copy_n(s.ids.begin(), n, ids);
  if (offsets != nullptr) std::copy_n(s.offsets.begin(), n, offsets);
  return s.ids.size();
}

size_t BpeTokenizer::pre_tokenize(const char* text, size_t length, char* words, size_t capacity) const {
  require_loaded();
  const RepairedUtf8 repaired = repair_utf8(text, length);
  if (repaired.replaced > 0) replacements_.fetch_add(repaired.replaced);
  const std::string_view clean = repaired.replaced > 0 ? std::string_view(repaired.text) : std::string_view(text, length);
  std::string joined;
  pipeline_->spelled_words(clean, joined);
  return copy_text(joined, words, capacity);
}

size_t BpeTokenizer::encode(const char* a, size_t a_length, const char* b, size_t b_length,
                            const EncodeOptions& options, const EncodedBuffers& out) const {
  return encode_with_offsets(a, a_length, b, b_length, options, OffsetUnit::bytes, out, nullptr);
}

size_t BpeTokenizer::encode_with_offsets(const char* a, size_t a_length, const char* b, size_t b_length,
                                         const EncodeOptions& options, OffsetUnit unit, const EncodedBuffers& out,
                                         TokenOffset* offsets) const {
  TokenizedSequence first = tokenize_sequence(a, a_length, unit);
  if (b == nullptr) return lay_out(std::move(first), nullptr, config_.post_processor, options, specials_.pad, out, offsets);
  const TokenizedSequence second = tokenize_sequence(b, b_length, unit);
  return lay_out(std::move(first), &second, config_.post_processor, options, specials_.pad, out, offsets);
}

size_t BpeTokenizer::encode_ids(const int32_t* a, size_t a_count, const int32_t* b, size_t b_count,
                                const EncodeOptions& options, const EncodedBuffers& out) const {
  TokenizedSequence first;
  first.ids.assign(a, a + a_count);
  if (b == nullptr) return lay_out(std::move(first), nullptr, config_.post_processor, options, specials_.pad, out, nullptr);
  TokenizedSequence second;
  second.ids.assign(b, b + b_count);
  return lay_out(std::move(first), &second, config_.post_processor, options, specials_.pad, out, nullptr);
}

size_t BpeTokenizer::decode(const int32_t* ids, size_t count, const DecodeOptions& options, char* text,
                            size_t capacity) const {
  std::vector<uint8_t> skipped(added_.size());
  for (size_t i = 0; i < added_.size(); ++i) skipped[i] = added_[i] == 2 ? 1 : 0;
  return copy_text(decode_byte_level(spellings_, skipped, ids, count, options), text, capacity);
}

}  // namespace loom::bpe
