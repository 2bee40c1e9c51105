// `loom predict` on a question-answering checkpoint; see squad_prediction.hpp.
#include "squad_prediction.hpp"

#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "eval/evaluator.hpp"
#include "eval/finite_outputs.hpp"
#include "eval/squad_evaluation.hpp"
#include "files/atomic_file.hpp"
#include "model/batch_staging.hpp"
#include "model/bert_config.hpp"
#include "model/host_batch_buffers.hpp"
#include "model/model.hpp"
#include "model/model_family.hpp"
#include "recipe/errors.hpp"
#include "train/run_checkpoint.hpp"

namespace loom::cli {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

nlohmann::json squad_question(const std::string& id, const std::string& question) {
  return {{"id", id}, {"question", question}, {"answers", nlohmann::json::array()}};
}

// JSONL questions ({"id", "question", "context"} per line) as a SQuAD file's "data".
nlohmann::json questions_from_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw host::InputError(path + ": cannot open the questions file");
  nlohmann::json paragraphs = nlohmann::json::array();
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto row = nlohmann::json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object() || !row.contains("question") || !row["question"].is_string() ||
        !row.contains("context") || !row["context"].is_string())
      throw host::InputError(fmt::format(
          "{}:{}: expected a JSON object with string \"question\" and \"context\"", path, number));
    const std::string id = row.contains("id")
                               ? (row["id"].is_string() ? row["id"].get<std::string>() : row["id"].dump())
                               : std::to_string(number);
    paragraphs.push_back({{"context", row["context"]}, {"qas", {squad_question(id, row["question"])}}});
  }
  // Else the SQuAD reader would name the temporary file these questions are handed over in.
  if (paragraphs.empty()) throw host::InputError(path + ": no questions (one JSON object a line)");
  return nlohmann::json::array({{{"title", path}, {"paragraphs", paragraphs}}});
}

}  // namespace

void add_squad_predict_options(CLI::App& verb, SquadPredictArguments& args) {
  verb.add_option("--question", args.question, "question answering: the question (with --context)");
  verb.add_option("--context", args.context, "question answering: the text the answer is taken from");
  verb.add_option("--doc-stride", args.doc_stride, "question answering: tokens between window starts")
      ->check(CLI::Range(1, 1 << 16));
  verb.add_option("--max-query-length", args.max_query_length, "question answering: question tokens kept")
      ->check(CLI::Range(1, 1 << 16));
  verb.add_option("--n-best-size", args.n_best_size, "question answering: candidates per window and answer")
      ->check(CLI::Range(1, 1000));
  verb.add_option("--max-answer-length", args.max_answer_length,
                  "question answering: most tokens in an answer")
      ->check(CLI::Range(1, 1 << 16));
  verb.add_flag("--version-2-with-negative", args.version_2_with_negative,
                "question answering: SQuAD v2.0, a question may have no answer");
  verb.add_option("--null-score-diff-threshold", args.null_score_diff_threshold,
                  "question answering (v2.0): answer \"\" when the null score beats the best by more");
}

bool wants_squad_prediction(const std::string& checkpoint, const SquadPredictArguments& args) {
  if (!args.question.empty() || !args.context.empty()) return true;
  const fs::path config = fs::path(checkpoint) / "config.json";
  if (!fs::exists(config)) return false;
  const host::BertConfig bert = host::read_bert_config(config);
  const auto& architectures = bert.extra.value("architectures", nlohmann::json::array());
  // Hugging Face names every family's span model <Family>ForQuestionAnswering.
  constexpr std::string_view kSuffix = "ForQuestionAnswering";
  return architectures.is_array() &&
         std::any_of(architectures.begin(), architectures.end(), [&](const nlohmann::json& name) {
           if (!name.is_string()) return false;
           const std::string& text = name.get_ref<const std::string&>();
           return text.size() >= kSuffix.size() && text.compare(text.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
         });
}

void predict_squad_answers(const GlobalOptions& options, const std::string& checkpoint,
                           const std::string& input, const std::string& output, int batch_size, int threads,
                           const SquadPredictArguments& args) {
  if (args.question.empty() != args.context.empty())
    throw host::InputError("--question and --context go together");
  if (args.question.empty() && input.empty())
    throw host::InputError(
        "a question-answering checkpoint needs --question and --context, or --input "
        "(SQuAD JSON or JSONL of {\"id\", \"question\", \"context\"})");
  // The questions as a SQuAD file dataset/squad reads (a temporary one unless --input is SQuAD JSON).
  std::string squad_file = input;
  fs::path temporary;
  if (input.empty() || ends_with(input, ".jsonl")) {
    const nlohmann::json data =
        input.empty()
            ? nlohmann::json::array(
                  {{{"title", "question"},
                    {"paragraphs",
                     {{{"context", args.context}, {"qas", {squad_question("question", args.question)}}}}}}})
            : questions_from_jsonl(input);
    temporary = fs::temp_directory_path() / fmt::format("loom-predict-{}.json", ::getpid());
    host::write_file_atomically(temporary, nlohmann::json{{"version", "1.1"}, {"data", data}}.dump());
    squad_file = temporary.string();
  }
  struct RemoveTemporary {
    fs::path path;
    ~RemoveTemporary() {
      std::error_code ignored;
      if (!path.empty()) fs::remove(path, ignored);
    }
  } remove_temporary{temporary};

  auto registry = make_registry(options, nullptr);
  auto entry_of = [&](uint32_t kind, const char* name, const char* table) {
    const host::ComponentEntry* entry = registry->find(kind, name);
    if (entry == nullptr)
      throw std::runtime_error(fmt::format("no component {}/{} is available", table, name));
    return entry;
  };
  auto backend = registry->create<loom::Backend>(
      *entry_of(LOOM_KIND_BACKEND, "cpu", "backend"),
      host::ComponentConfig{"backend", threads > 0 ? fmt::format("threads = {}\n", threads) : "", "",
                            "(loom predict)"},
      false);
  const std::string vocab = (fs::path(checkpoint) / "vocab.txt").string();
  auto tokenizer = registry->create<loom::Tokenizer>(
      *entry_of(LOOM_KIND_TOKENIZER, "wordpiece", "tokenizer"),
      host::ComponentConfig{"tokenizer", "vocab = " + nlohmann::json(vocab).dump() + "\n", "",
                            "(loom predict)"},
      false);
  const std::unique_ptr<host::Model> family =
      host::family_model(*registry, fs::path(checkpoint) / "config.json", host::kSpanHead, backend, loom::DType::f32);
  host::Model& model = *family;
  const loom::ModelConfig& config = model.config();
  const int64_t seq = checkpoint_sequence_length(args.max_seq_length, args.max_seq_length_given,
                                                 config.max_position_embeddings, checkpoint);
  const std::string data_toml = fmt::format(
      "file = {}\nmode = \"eval\"\nmax_seq_length = {}\ndoc_stride = {}\nmax_query_length = {}\nbatch_size = "
      "{}\n",
      nlohmann::json(squad_file).dump(), seq, args.doc_stride, args.max_query_length, batch_size);
  auto dataset =
      registry->create<loom::Dataset>(*entry_of(LOOM_KIND_DATASET, "squad", "data"),
                                      host::ComponentConfig{"data", data_toml, "", "(loom predict)"}, false);
  dataset.call([&](loom::Dataset& d) { d.open(loom::DatasetSetup{0, 1, 0, tokenizer.get()}); });
  const loom::BatchLimits limits = dataset.call([](loom::Dataset& d) { return d.limits(); });

  model.set_unpadded(!args.padded);
  model.reserve({limits.batch_size, limits.max_seq_length, 0});
  host::BatchStaging staging(*backend.get(), {limits.batch_size, limits.max_seq_length, 0});
  host::load_model_weights(model, checkpoint, {true, {}});

  host::SquadDecodeOptions decode{args.n_best_size, args.max_answer_length, args.version_2_with_negative,
                                  args.null_score_diff_threshold};
  host::SquadEvaluation squad(*tokenizer.get(), decode, "");
  host::HostBatchBuffers buffers(limits);
  size_t batch_number = 0;
  // Non-finite logits end the loop here and are refused below, outside the dataset's guard, which
  // would otherwise name the dataset as the error's source.
  std::optional<host::NonFiniteOutputError> refused;
  dataset.call([&](loom::Dataset& d) {
    for (;;) {
      loom::BatchShape shape{};
      const host::HostBatch batch = buffers.next(d, shape);
      if (shape.epoch != 0) break;
      const loom::BatchView& view = staging.upload(batch);
      model.forward(view, host::StepSettings{false, 0}, staging.packed());
      const std::vector<float> start_logits =
          host::rows_to_host(*backend.get(), model.output("start_logits"));
      const std::vector<float> end_logits = host::rows_to_host(*backend.get(), model.output("end_logits"));
      ++batch_number;
      const auto window = [&](size_t row) {
        return fmt::format("window {} of batch {}", row + 1, batch_number);
      };
      const auto seq = static_cast<size_t>(batch.seq);
      try {
        host::require_finite_outputs(start_logits, seq, "start logits", checkpoint, window);
        host::require_finite_outputs(end_logits, seq, "end logits", checkpoint, window);
      } catch (const host::NonFiniteOutputError& e) {
        refused = e;
        return;
      }
      squad.add_batch(d, buffers.instance_ids(), batch.input_ids, shape.rows, batch.seq, start_logits,
                      end_logits);
      if (shape.last_in_epoch) break;
    }
  });
  if (refused) throw *refused;
  const host::SquadEvaluation::Decoded decoded = squad.decode();
  if (!args.question.empty()) {
    nlohmann::ordered_json line{{"answer", decoded.predictions.value("question", "")}};
    const auto& nbest = decoded.nbest.value("question", nlohmann::ordered_json::array());
    if (!nbest.empty()) line["probability"] = nbest[0]["probability"];
    if (decoded.null_odds.contains("question")) line["null_score_diff"] = decoded.null_odds["question"];
    line["nbest"] = nbest;
    std::cout << line.dump() << std::endl;
    return;
  }
  const std::string text = decoded.predictions.dump(4) + "\n";
  if (output.empty()) {
    std::cout << text;
  } else {
    host::write_file_atomically(output, text);
  }
}

}  // namespace loom::cli
