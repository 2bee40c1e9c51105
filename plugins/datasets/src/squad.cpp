// dataset/squad; see squad.hpp.
#include "squad.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace loom_datasets {

Squad::Squad(loom::ComponentContext& context) {
  loom::Options& o = context.options();
  file_ = o.required<std::string>("file");
  options_.training = o.choice("mode", "train", {"train", "eval"}) == "train";
  options_.max_seq_length = o.get<int32_t>("max_seq_length", 384, loom::Range{16, 1 << 16});
  options_.doc_stride = o.get<int32_t>("doc_stride", 128, loom::Range{1, 1 << 16});
  options_.max_query_length = o.get<int32_t>("max_query_length", 64, loom::Range{1, 1 << 16});
  batch_size_ = o.get<int32_t>("batch_size", 32, loom::Range{1, 1 << 20});
  shuffle_ = o.get<bool>("shuffle", options_.training);
  drop_last_ = o.get<bool>("drop_last", false);
  budget_ = read_token_budget(o, batch_size_, drop_last_);
  max_dropped_fraction_ = o.get<double>("max_dropped_fraction", 0.01, loom::Range{0, 1});
  logger_ = context.logger();
  if (options_.max_query_length + 3 >= options_.max_seq_length)
    o.fail("max_query_length", "must leave room for the context: max_query_length + 3 < max_seq_length");
}

void Squad::open(const loom::DatasetSetup& setup) {
  if (setup.tokenizer == nullptr)
    throw loom::ConfigError("dataset/squad needs a [tokenizer] table to tokenize " + file_);
  SquadReadReport report;
  examples_ = read_squad_examples(file_, options_.training, report);
  if (report.dropped > 0) {
    const double share = static_cast<double>(report.dropped) / static_cast<double>(report.questions);
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.1f%%", 100.0 * share);
    const std::string summary =
        file_ + ": dropped " + std::to_string(report.dropped) + " of " + std::to_string(report.questions) +
        " training questions (" + percent +
        ") whose answer text is not where answer_start points; the first: " + report.first_dropped;
    if (share > max_dropped_fraction_) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", max_dropped_fraction_);
      throw loom::IoError(summary + ". That is more than max_dropped_fraction = " + limit +
                          " allows: answer_start must count Unicode code points into the context (not "
                          "bytes); correct the offsets, or raise max_dropped_fraction to train on the rest");
    }
    logger_.log(loom::LogLevel::warn, summary);
  }
  features_ = squad_features(examples_, options_, *setup.tokenizer);
  if (features_.empty()) throw loom::IoError(file_ + ": no SQuAD questions with a context");
  loom::BatchLimits limits{};
  limits.task = loom::BatchTask::span_extraction;
  limits.batch_size = batch_size_;
  limits.max_seq_length = options_.max_seq_length;
  start(setup, {features_.size()}, shuffle_, drop_last_, limits, budget_);
  skipped_ = report.dropped;
}

void Squad::load_row(uint64_t instance, uint64_t, Row& row) {
  const SquadFeature& feature = features_[instance];
  row.ids = feature.ids;
  row.types = feature.types;
  row.start = feature.start;
  row.end = feature.end;
}

size_t Squad::describe_instance(uint64_t id, char* json, size_t capacity) const {
  if (id >= features_.size()) return copy_text("null", json, capacity);
  const SquadFeature& feature = features_[id];
  const SquadExample& example = examples_[feature.example];
  const nlohmann::json description = {{"qas_id", example.qas_id},
                                      {"example_index", feature.example},
                                      {"doc_span_index", feature.span_index},
                                      {"question", example.question},
                                      {"is_impossible", example.is_impossible},
                                      {"answers", example.answers},
                                      {"doc_words", example.doc_words},
                                      {"token_to_word", feature.token_to_word},
                                      {"token_is_max_context", feature.max_context},
                                      {"questions_skipped_in_file", skipped_}};
  return copy_text(description.dump(), json, capacity);
}

}  // namespace loom_datasets
