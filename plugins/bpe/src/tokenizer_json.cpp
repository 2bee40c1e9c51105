// See tokenizer_json.hpp. Each section is read by one function that first checks its keys: a key
// it does not know, or a value it does not implement, ends the load with the file and the key's
// JSON path in the message.
#include "tokenizer_json.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/sdk/error.hpp"

namespace loom::bpe {
namespace {

using nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void refuse(const std::string& key, const std::string& why) const {
    throw loom::ConfigError(path_ + ": " + key + ": " + why);
  }

  // Refuses keys of `object` outside `known`.
  void only_keys(const json& object, const std::string& where, std::initializer_list<const char*> known) const {
    if (!object.is_object()) refuse(where, "expected an object");
    const std::set<std::string> allowed(known.begin(), known.end());
    for (const auto& [key, value] : object.items())
      if (allowed.count(key) == 0)
        refuse(where + "." + key, "is not a setting tokenizer/bpe implements; remove it or use a tokenizer "
                                  "that supports it");
  }

  bool boolean(const json& object, const std::string& where, const char* key, bool fallback) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) refuse(where + "." + key, "expected true or false");
    return it->get<bool>();
  }

  std::string text(const json& object, const std::string& where, const char* key) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return {};
    if (!it->is_string()) refuse(where + "." + key, "expected a string or null");
    return it->get<std::string>();
  }

  std::string type_of(const json& object, const std::string& where) const {
    if (!object.is_object() || !object.contains("type") || !object["type"].is_string())
      refuse(where + ".type", "expected an object with a \"type\" string");
    return object["type"].get<std::string>();
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void read_model(const Reader& r, const json& model, BpeConfig& config) {
  const std::string where = "model";
  if (model.is_null()) r.refuse(where, "is null; a BPE model is required");
  const std::string type = r.type_of(model, where);
  if (type != "BPE") r.refuse(where + ".type", "is \"" + type + "\"; tokenizer/bpe reads BPE models only");
  r.only_keys(model, where,
              {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
               "byte_fallback", "ignore_merges", "vocab", "merges"});
  if (model.contains("dropout") && !model["dropout"].is_null())
    r.refuse(where + ".dropout", "is set; BPE dropout samples merges at random and is for training only — "
                                 "set it to null for a deterministic tokenizer");
  if (const std::string unk = r.text(model, where, "unk_token"); !unk.empty()) config.model.unk_token = unk;
  config.model.continuing_subword_prefix = r.text(model, where, "continuing_subword_prefix");
  config.model.end_of_word_suffix = r.text(model, where, "end_of_word_suffix");
  config.model.fuse_unk = r.boolean(model, where, "fuse_unk", false);
  config.model.byte_fallback = r.boolean(model, where, "byte_fallback", false);
  config.model.ignore_merges = r.boolean(model, where, "ignore_merges", false);

  if (!model.contains("vocab") || !model["vocab"].is_object()) r.refuse(where + ".vocab", "expected an object token → id");
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      r.refuse(where + ".vocab[\"" + token + "\"]", "expected an id between 0 and 2^31-1");
    config.vocabulary[token] = static_cast<int32_t>(id.get<int64_t>());
  }
  if (!model.contains("merges") || !model["merges"].is_array()) r.refuse(where + ".merges", "expected an array");
  size_t index = 0;
  for (const auto& merge : model["merges"]) {
    const std::string at = where + ".merges[" + std::to_string(index++) + "]";
    if (merge.is_string()) {  // "left right", the layout before tokenizers 0.20
      const std::string line = merge.get<std::string>();
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
        r.refuse(at, "expected \"left right\" (two tokens and one space)");
      config.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      config.merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      r.refuse(at, "expected \"left right\" or [\"left\", \"right\"]");
    }
  }
}

void read_added_tokens(const Reader& r, const json& list, BpeConfig& config) {
  if (list.is_null()) return;
  if (!list.is_array()) r.refuse("added_tokens", "expected an array");
  size_t index = 0;
  for (const auto& entry : list) {
    const std::string where = "added_tokens[" + std::to_string(index++) + "]";
    r.only_keys(entry, where, {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
    AddedToken token;
    if (!entry.contains("id") || !entry["id"].is_number_integer() || entry["id"].get<int64_t>() < 0)
      r.refuse(where + ".id", "expected a non-negative integer");
    token.id = static_cast<int32_t>(entry["id"].get<int64_t>());
    token.content = r.text(entry, where, "content");
    if (token.content.empty()) r.refuse(where + ".content", "expected a non-empty string");
    token.special = r.boolean(entry, where, "special", false);
    token.single_word = r.boolean(entry, where, "single_word", false);
    token.lstrip = r.boolean(entry, where, "lstrip", false);
    token.rstrip = r.boolean(entry, where, "rstrip", false);
    token.normalized = r.boolean(entry, where, "normalized", !token.special);
    config.added_tokens.push_back(std::move(token));
  }
}

void read_normalizer(const Reader& r, const json& normalizer, const std::string& where, BpeConfig& config) {
  if (normalizer.is_null()) return;
  const std::string type = r.type_of(normalizer, where);
  if (type == "Sequence") {
    r.only_keys(normalizer, where, {"type", "normalizers"});
    if (!normalizer.contains("normalizers") || !normalizer["normalizers"].is_array())
      r.refuse(where + ".normalizers", "expected an array");
    size_t index = 0;
    for (const auto& step : normalizer["normalizers"])
      read_normalizer(r, step, where + ".normalizers[" + std::to_string(index++) + "]", config);
    return;
  }
  r.only_keys(normalizer, where, {"type"});
  if (type == "NFC") config.normalizer.push_back(NormalizerStep::nfc);
  else if (type == "NFD") config.normalizer.push_back(NormalizerStep::nfd);
  else if (type == "NFKC") config.normalizer.push_back(NormalizerStep::nfkc);
  else if (type == "NFKD") config.normalizer.push_back(NormalizerStep::nfkd);
  else if (type == "Lowercase") config.normalizer.push_back(NormalizerStep::lowercase);
  else
    r.refuse(where + ".type", "is \"" + type +
                                  "\"; tokenizer/bpe implements the normalizers NFC, NFD, NFKC, NFKD, "
                                  "Lowercase and Sequence of them");
}

void read_pre_tokenizer(const Reader& r, const json& pre, BpeConfig& config) {
  const std::string where = "pre_tokenizer";
  if (pre.is_null())
    r.refuse(where, "is null; tokenizer/bpe is byte-level BPE and needs the ByteLevel pre-tokenizer");
  const std::string type = r.type_of(pre, where);
  if (type != "ByteLevel")
    r.refuse(where + ".type", "is \"" + type + "\"; tokenizer/bpe implements the ByteLevel pre-tokenizer only");
  r.only_keys(pre, where, {"type", "add_prefix_space", "trim_offsets", "use_regex"});
  config.pre_tokenizer.add_prefix_space = r.boolean(pre, where, "add_prefix_space", true);
  config.pre_tokenizer.use_regex = r.boolean(pre, where, "use_regex", true);
  // trim_offsets of the pre-tokenizer changes nothing in `tokenizers` (only the processor's does).
}

// [token, id] as RobertaProcessing writes cls and sep.
int32_t roberta_token(const Reader& r, const json& processor, const std::string& where, const char* key) {
  auto it = processor.find(key);
  if (it == processor.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer())
    r.refuse(where + "." + key, "expected [\"token\", id]");
  return static_cast<int32_t>((*it)[1].get<int64_t>());
}

std::vector<TemplatePiece> read_template(const Reader& r, const json& pieces, const std::string& where,
                                         const json& special_tokens) {
  if (!pieces.is_array()) r.refuse(where, "expected an array");
  std::vector<TemplatePiece> out;
  size_t index = 0;
  for (const auto& piece : pieces) {
    const std::string at = where + "[" + std::to_string(index++) + "]";
    TemplatePiece p;
    if (piece.contains("Sequence")) {
      r.only_keys(piece, at, {"Sequence"});
      const json& s = piece["Sequence"];
      r.only_keys(s, at + ".Sequence", {"id", "type_id"});
      const std::string id = r.text(s, at + ".Sequence", "id");
      if (id != "A" && id != "B") r.refuse(at + ".Sequence.id", "expected \"A\" or \"B\"");
      p.sequence = id == "A" ? 0 : 1;
      p.type_id = s.value("type_id", 0);
    } else if (piece.contains("SpecialToken")) {
      r.only_keys(piece, at, {"SpecialToken"});
      const json& s = piece["SpecialToken"];
      r.only_keys(s, at + ".SpecialToken", {"id", "type_id"});
      const std::string name = r.text(s, at + ".SpecialToken", "id");
      if (!special_tokens.is_object() || !special_tokens.contains(name))
        r.refuse(at + ".SpecialToken.id", "\"" + name + "\" is not in post_processor.special_tokens");
      const json& entry = special_tokens[name];
      if (!entry.contains("ids") || !entry["ids"].is_array())
        r.refuse("post_processor.special_tokens." + name + ".ids", "expected an array of ids");
      for (const auto& id : entry["ids"]) p.ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
      p.type_id = s.value("type_id", 0);
    } else {
      r.refuse(at, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
    out.push_back(std::move(p));
  }
  return out;
}

void read_post_processor(const Reader& r, const json& processor, const std::string& where, BpeConfig& config) {
  if (processor.is_null()) return;
  PostProcessorSettings& post = config.post_processor;
  const std::string type = r.type_of(processor, where);
  if (type == "Sequence") {
    r.only_keys(processor, where, {"type", "processors"});
    size_t index = 0;
    for (const auto& step : processor.value("processors", json::array()))
      read_post_processor(r, step, where + ".processors[" + std::to_string(index++) + "]", config);
    return;
  }
  const auto set_template = [&](std::vector<TemplatePiece> single, std::vector<TemplatePiece> pair) {
    if (post.has_template) r.refuse(where, "a second template; tokenizer/bpe applies one");
    post.has_template = true;
    post.single = std::move(single);
    post.pair = std::move(pair);
  };
  if (type == "ByteLevel") {
    r.only_keys(processor, where, {"type", "add_prefix_space", "trim_offsets", "use_regex"});
    post.trim_offsets = r.boolean(processor, where, "trim_offsets", true);
    post.trim_keeps_prefix_space = r.boolean(processor, where, "add_prefix_space", true);
  } else if (type == "RobertaProcessing") {
    r.only_keys(processor, where, {"type", "sep", "cls", "trim_offsets", "add_prefix_space"});
    const int32_t cls = roberta_token(r, processor, where, "cls"), sep = roberta_token(r, processor, where, "sep");
    post.trim_offsets = r.boolean(processor, where, "trim_offsets", true);
    post.trim_keeps_prefix_space = r.boolean(processor, where, "add_prefix_space", true);
    // <s> A </s> and <s> A </s></s> B </s>, every token type 0 (RoBERTa has one token type).
    set_template({{-1, {cls}, 0}, {0, {}, 0}, {-1, {sep}, 0}},
                 {{-1, {cls}, 0}, {0, {}, 0}, {-1, {sep, sep}, 0}, {1, {}, 0}, {-1, {sep}, 0}});
  } else if (type == "TemplateProcessing") {
    r.only_keys(processor, where, {"type", "single", "pair", "special_tokens"});
    const json specials = processor.value("special_tokens", json::object());
    set_template(read_template(r, processor.value("single", json::array()), where + ".single", specials),
                 read_template(r, processor.value("pair", json::array()), where + ".pair", specials));
  } else {
    r.refuse(where + ".type", "is \"" + type +
                                  "\"; tokenizer/bpe implements the post-processors ByteLevel, "
                                  "RobertaProcessing, TemplateProcessing and Sequence of them");
  }
}

void read_decoder(const Reader& r, const json& decoder) {
  if (decoder.is_null()) return;
  const std::string type = r.type_of(decoder, "decoder");
  if (type != "ByteLevel")
    r.refuse("decoder.type", "is \"" + type + "\"; tokenizer/bpe decodes byte-level BPE (decoder ByteLevel or null)");
  r.only_keys(decoder, "decoder", {"type", "add_prefix_space", "trim_offsets", "use_regex"});
}

}  // namespace

BpeConfig parse_tokenizer_json(const std::string& text, const std::string& path) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    throw loom::IoError(path + ": not valid JSON (" + e.what() + ")");
  }
  const Reader r(path);
  r.only_keys(root, "(top level)",
              {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor",
               "decoder", "model"});
  for (const char* key : {"truncation", "padding"})
    if (root.contains(key) && !root[key].is_null())
      r.refuse(key, "is set; Loom truncates and pads per call (EncodeOptions: the recipe's sequence length) — "
                    "set it to null");
  BpeConfig config;
  config.source = path;
  read_model(r, root.value("model", json()), config);
  read_added_tokens(r, root.value("added_tokens", json()), config);
  read_normalizer(r, root.value("normalizer", json()), "normalizer", config);
  read_pre_tokenizer(r, root.value("pre_tokenizer", json()), config);
  read_post_processor(r, root.value("post_processor", json()), "post_processor", config);
  read_decoder(r, root.value("decoder", json()));
  return config;
}

BpeConfig read_tokenizer_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw loom::IoError(path + ": cannot read the tokenizer file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_tokenizer_json(text.str(), path);
}

}  // namespace loom::bpe
