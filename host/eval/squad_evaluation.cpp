// SquadEvaluation; see squad_evaluation.hpp.
#include "eval/squad_evaluation.hpp"

#include <stdexcept>

#include <spdlog/spdlog.h>

#include "eval/squad_score.hpp"
#include "files/atomic_file.hpp"

namespace loom::host {
namespace {

std::string described(const loom::Dataset& dataset, uint64_t id, std::string& buffer) {
  if (buffer.size() < 4096) buffer.resize(4096);
  size_t needed = dataset.describe_instance(id, buffer.data(), buffer.size());
  if (needed >= buffer.size()) {
    buffer.resize(needed + 1);
    needed = dataset.describe_instance(id, buffer.data(), buffer.size());
  }
  return std::string(buffer.data(), needed);
}

template <typename T>
T required(const nlohmann::json& description, const char* key, uint64_t id) {
  const auto it = description.find(key);
  if (it == description.end())
    throw std::runtime_error("instance " + std::to_string(id) + ": the dataset's description has no \"" +
                             key + "\" (SQuAD decoding needs dataset/squad's descriptions)");
  return it->get<T>();
}

}  // namespace

SquadDecodeOptions squad_decode_options(const RunSettings& settings) {
  return {settings.squad_n_best_size, settings.squad_max_answer_length,
          settings.squad_version_2_with_negative, settings.squad_null_score_diff_threshold};
}

BasicTokenize basic_tokenize_with(const loom::Tokenizer& tokenizer) {
  return [&tokenizer](const std::string& text) {
    std::string words(text.size() * 2 + 16, '\0');
    size_t needed = tokenizer.pre_tokenize(text.data(), text.size(), words.data(), words.size());
    if (needed >= words.size()) {
      words.resize(needed + 1);
      needed = tokenizer.pre_tokenize(text.data(), text.size(), words.data(), words.size());
    }
    words.resize(needed);
    return words;
  };
}

SquadEvaluation::SquadEvaluation(const loom::Tokenizer& tokenizer, SquadDecodeOptions options,
                                 std::filesystem::path output_dir)
    : tokenizer_(tokenizer), options_(options), output_dir_(std::move(output_dir)) {}

void SquadEvaluation::add_batch(const loom::Dataset& dataset, const std::vector<uint64_t>& instance_ids,
                                const int32_t* input_ids, int64_t rows, int64_t seq,
                                const std::vector<float>& start_logits,
                                const std::vector<float>& end_logits) {
  if (start_logits.size() < static_cast<size_t>(rows * seq) ||
      end_logits.size() < static_cast<size_t>(rows * seq))
    throw std::invalid_argument("SquadEvaluation: fewer logits than rows × seq");
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t id = instance_ids.at(static_cast<size_t>(r));
    const nlohmann::json d = nlohmann::json::parse(described(dataset, id, description_));
    const auto example = required<uint64_t>(d, "example_index", id);
    Question& question = questions_[example];
    if (question.id.empty()) {
      question.id = required<std::string>(d, "qas_id", id);
      question.doc_words = required<std::vector<std::string>>(d, "doc_words", id);
      question.answers = required<std::vector<std::string>>(d, "answers", id);
    }
    SquadWindow window;
    window.token_to_word = required<std::vector<int32_t>>(d, "token_to_word", id);
    window.max_context = required<std::vector<uint8_t>>(d, "token_is_max_context", id);
    const size_t length = window.token_to_word.size();
    if (length > static_cast<size_t>(seq))
      throw std::runtime_error("instance " + std::to_string(id) + " has " + std::to_string(length) +
                               " tokens, its batch only " + std::to_string(seq) + " columns");
    for (size_t i = 0; i < length; ++i) {
      const char* token = tokenizer_.id_to_token(input_ids[r * seq + static_cast<int64_t>(i)]);
      window.tokens.emplace_back(token != nullptr ? token : "[UNK]");
    }
    const auto row = static_cast<size_t>(r * seq);
    window.start_logits.assign(start_logits.begin() + static_cast<std::ptrdiff_t>(row),
                               start_logits.begin() + static_cast<std::ptrdiff_t>(row + length));
    window.end_logits.assign(end_logits.begin() + static_cast<std::ptrdiff_t>(row),
                             end_logits.begin() + static_cast<std::ptrdiff_t>(row + length));
    question.windows[required<uint32_t>(d, "doc_span_index", id)] = std::move(window);
  }
}

SquadEvaluation::Decoded SquadEvaluation::decode() const {
  Decoded out;
  const BasicTokenize basic = basic_tokenize_with(tokenizer_);
  for (const auto& [index, q] : questions_) {
    SquadQuestion question{q.id, q.doc_words, {}};
    for (const auto& [span, window] : q.windows) question.windows.push_back(window);
    const SquadAnswer answer = decode_squad_question(question, options_, basic);
    out.predictions[q.id] = answer.text;
    nlohmann::ordered_json entries = nlohmann::ordered_json::array();
    for (const SquadNbestEntry& e : answer.nbest)
      entries.push_back({{"text", e.text},
                         {"probability", e.probability},
                         {"start_logit", e.start_logit},
                         {"end_logit", e.end_logit}});
    out.nbest[q.id] = std::move(entries);
    if (answer.null_score_diff) out.null_odds[q.id] = *answer.null_score_diff;
  }
  return out;
}

nlohmann::json SquadEvaluation::finish() {
  const Decoded decoded = decode();
  SquadGold gold;
  gold.path = "the evaluation data";
  gold.version_2 = options_.version_2_with_negative;
  for (const auto& [index, q] : questions_) {
    if (!gold.version_2 && q.answers.empty()) {
      // v1.1 scoring cannot take it (the script fails); score as v2.0 and say how to decode it.
      spdlog::warn(
          "question '{}' has no answer (SQuAD v2.0 data) but [squad] version_2_with_negative is false: "
          "scored as SQuAD v2.0, and no answer is ever predicted",
          q.id);
      gold.version_2 = true;
    }
    gold.questions.push_back({q.id, q.answers});
  }
  const size_t questions = questions_.size();
  questions_.clear();
  nlohmann::json metrics{{"eval_questions", questions}};
  if (!output_dir_.empty()) {
    std::filesystem::create_directories(output_dir_);
    write_file_atomically(output_dir_ / "predictions.json", decoded.predictions.dump(4) + "\n");
    write_file_atomically(output_dir_ / "nbest_predictions.json", decoded.nbest.dump(4) + "\n");
    if (options_.version_2_with_negative)
      write_file_atomically(output_dir_ / "null_odds.json", decoded.null_odds.dump(4) + "\n");
    metrics["eval_predictions"] = (output_dir_ / "predictions.json").string();
  }
  if (gold.questions.empty()) return metrics;
  if (!options_.version_2_with_negative && !gold.version_2) {
    std::vector<std::string> notes;
    const nlohmann::ordered_json scores = score_squad_v1(gold, decoded.predictions, "predictions", notes);
    metrics["eval_exact_match"] = scores["exact_match"];
    metrics["eval_f1"] = scores["f1"];
    return metrics;
  }
  // The answers as predictions.json has them (no threshold), then the best thresholds over the
  // null score differences, as `loom score squad DEV predictions.json --na-prob null_odds.json`.
  const nlohmann::ordered_json scores = score_squad_v2(gold, decoded.predictions, "predictions", {}, "", 1.0);
  for (auto it = scores.begin(); it != scores.end(); ++it)
    metrics["eval_" + (it.key() == "exact" ? std::string("exact_match") : it.key())] = it.value();
  if (!options_.version_2_with_negative) return metrics;  // no null scores
  const nlohmann::ordered_json best =
      score_squad_v2(gold, decoded.predictions, "predictions", decoded.null_odds, "null_odds", 1.0);
  for (const char* key : {"best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"})
    metrics[std::string("eval_") + key] = best[key];
  return metrics;
}

}  // namespace loom::host
