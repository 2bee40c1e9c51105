// See bpe_tokenizer_json.hpp.
#include "prep/bpe_tokenizer_json.hpp"

#include <nlohmann/json.hpp>

namespace loom::host {
namespace {

using Json = nlohmann::ordered_json;

Json byte_level(bool add_prefix_space) {
  return Json{{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", true}, {"use_regex", true}};
}

Json tokenizer_json(const Json& vocab, const Json& merges, const Json& added_tokens, const Json& post_processor,
                    bool add_prefix_space) {
  Json model{{"type", "BPE"},         {"dropout", nullptr},   {"unk_token", nullptr},
             {"continuing_subword_prefix", nullptr},         {"end_of_word_suffix", nullptr},
             {"fuse_unk", false},     {"byte_fallback", false}, {"ignore_merges", false},
             {"vocab", vocab},        {"merges", merges}};
  return Json{{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added_tokens},
              {"normalizer", nullptr},
              {"pre_tokenizer", byte_level(add_prefix_space)},
              {"post_processor", post_processor},
              {"decoder", byte_level(true)},
              {"model", model}};
}

}  // namespace

std::vector<std::string> roberta_special_tokens() { return {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}; }

std::string trained_bpe_tokenizer_json(const BpeTrainingResult& trained, bool add_prefix_space) {
  Json vocab = Json::object();
  for (size_t id = 0; id < trained.vocabulary.size(); ++id) vocab[trained.vocabulary[id]] = id;
  Json merges = Json::array();
  for (const auto& [left, right] : trained.merges) merges.push_back(Json::array({left, right}));
  Json added = Json::array();
  const std::vector<std::string> specials = roberta_special_tokens();
  for (size_t id = 0; id < specials.size(); ++id)
    added.push_back(Json{{"id", id},
                         {"content", specials[id]},
                         {"single_word", false},
                         {"lstrip", specials[id] == "<mask>"},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", true}});
  const Json post{{"type", "RobertaProcessing"}, {"sep", Json::array({"</s>", 2})}, {"cls", Json::array({"<s>", 0})},
                  {"trim_offsets", true}, {"add_prefix_space", add_prefix_space}};
  return tokenizer_json(vocab, merges, added, post, add_prefix_space).dump(2) + "\n";
}

std::string splitter_bpe_tokenizer_json(bool add_prefix_space) {
  return tokenizer_json(Json::object(), Json::array(), Json::array(), nullptr, add_prefix_space).dump() + "\n";
}

}  // namespace loom::host
