// `loom predict --checkpoint DIR --input FILE [--output FILE]`: class predictions with
// probabilities from a sequence-classification checkpoint (config.json with id2label,
// model.safetensors, vocab.txt — what `loom run` writes for a fine-tuning recipe); answers to
// questions from a question-answering checkpoint (squad_prediction.hpp).
//
// Input: JSONL ({"text": ..., "text_pair": ...}) when the name ends in .jsonl, else TSV: with a
// header naming `text` (and optionally `text_pair`) columns, or without one, text [TAB pair].
// Output (stdout or --output): TSV `prediction<TAB>p(label0)<TAB>...` with a header, or JSONL
// {"prediction", "probabilities": {label: p}} when --output ends in .jsonl. A regression
// checkpoint (num_labels = 1, e.g. STS-B) writes its output as `score` / {"score": value}.
// Texts run in batches of similar length (longest first), unpadded unless --padded
// (docs/unpadded.md); the output keeps the input's order.
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.hpp"
#include "files/file_writer.hpp"
#include "recipe/errors.hpp"
#include "squad_prediction.hpp"
#include "eval/evaluator.hpp"
#include "eval/finite_outputs.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "model/batch_staging.hpp"
#include "model/bert_config.hpp"
#include "model/model.hpp"
#include "model/model_family.hpp"
#include "train/run_checkpoint.hpp"

namespace loom::cli {
namespace {

struct Example {
  std::string text, pair;
};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) out.push_back(field);
  return out;
}

// The texts to predict: the user's file, so every problem is an InputError naming it (exit 2).
std::vector<Example> read_examples(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw host::InputError(path + ": is a folder, not a file of texts (--input)");
  std::ifstream in(path);
  if (!in) throw host::InputError(path + ": cannot be read (--input)");
  std::vector<Example> examples;
  std::string line;
  const bool jsonl = path.size() > 6 && path.substr(path.size() - 6) == ".jsonl";
  int text_column = 0, pair_column = 1;
  bool first = true;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (jsonl) {
      const auto json = nlohmann::json::parse(line, nullptr, false);
      if (json.is_discarded() || !json.contains("text") || !json["text"].is_string())
        throw host::InputError(
            fmt::format("{}:{}: expected a JSON object with a string \"text\"", path, number));
      if (json.contains("text_pair") && !json["text_pair"].is_string() && !json["text_pair"].is_null())
        throw host::InputError(fmt::format("{}:{}: \"text_pair\" must be a string", path, number));
      const bool pair = json.contains("text_pair") && json["text_pair"].is_string();
      examples.push_back({json["text"], pair ? json["text_pair"].get<std::string>() : ""});
      continue;
    }
    const auto fields = split_tabs(line);
    if (first) {
      first = false;
      const auto text = std::find(fields.begin(), fields.end(), "text");
      if (text != fields.end()) {
        text_column = static_cast<int>(text - fields.begin());
        const auto pair = std::find(fields.begin(), fields.end(), "text_pair");
        pair_column = pair == fields.end() ? -1 : static_cast<int>(pair - fields.begin());
        continue;
      }
    }
    Example e;
    if (static_cast<int>(fields.size()) <= text_column)
      throw host::InputError(fmt::format("{}:{}: no column {}", path, number, text_column + 1));
    e.text = fields[text_column];
    if (pair_column >= 0 && static_cast<int>(fields.size()) > pair_column) e.pair = fields[pair_column];
    examples.push_back(std::move(e));
  }
  return examples;
}

struct PredictArguments {
  std::string checkpoint, input, output;
  int batch_size = 32;
  int max_seq_length = 128;
  bool max_seq_length_given = false;
  int threads = 0;
  bool padded = false;
};

void predict(const GlobalOptions& options, const PredictArguments& a) {
  auto registry = make_registry(options, nullptr);
  auto create = [&](uint32_t kind, const char* name, const char* table, const std::string& toml) {
    const host::ComponentEntry* entry = registry->find(kind, name);
    if (entry == nullptr)
      throw std::runtime_error(fmt::format("no component {}/{} is available", table, name));
    return std::make_pair(entry, host::ComponentConfig{table, toml, "", "(loom predict)"});
  };
  const auto [backend_entry, backend_config] = create(
      LOOM_KIND_BACKEND, "cpu", "backend", a.threads > 0 ? fmt::format("threads = {}\n", a.threads) : "");
  auto backend = registry->create<loom::Backend>(*backend_entry, backend_config, false);
  const std::string vocab = (std::filesystem::path(a.checkpoint) / "vocab.txt").string();
  const auto [tok_entry, tok_config] =
      create(LOOM_KIND_TOKENIZER, "wordpiece", "tokenizer", "vocab = " + nlohmann::json(vocab).dump() + "\n");
  auto tokenizer = registry->create<loom::Tokenizer>(*tok_entry, tok_config, false);

  const std::unique_ptr<host::Model> family = host::family_model(
      *registry, std::filesystem::path(a.checkpoint) / "config.json", host::kClassifierHead, backend, loom::DType::f32);
  host::Model& model = *family;
  const loom::ModelConfig& config = model.config();
  const int64_t seq = checkpoint_sequence_length(a.max_seq_length, a.max_seq_length_given,
                                                 config.max_position_embeddings, a.checkpoint);
  model.set_unpadded(!a.padded);
  model.reserve({a.batch_size, seq, 0});
  host::BatchStaging staging(*backend.get(), {a.batch_size, seq, 0});
  host::load_model_weights(model, a.checkpoint, {true, {}});

  std::vector<std::string> labels;
  const host::BertConfig saved = host::read_bert_config(std::filesystem::path(a.checkpoint) / "config.json");
  const auto& id2label = saved.extra.value("id2label", nlohmann::json::object());
  for (int i = 0; i < config.num_labels; ++i) {
    labels.push_back(id2label.contains(std::to_string(i)) ? id2label[std::to_string(i)].get<std::string>()
                                                          : "LABEL_" + std::to_string(i));
  }
  const std::vector<Example> examples = read_examples(a.input);
  // Each batch's lines are formatted here, then written out: to --output through FileWriter
  // (every write and the close checked; the file appears whole or not at all), else to stdout.
  std::optional<host::FileWriter> file;
  if (!a.output.empty()) file.emplace(a.output);
  std::ostringstream out;
  auto emit = [&] {
    if (file)
      file->write(out.view());
    else
      std::cout << out.view();
    out.str("");
  };
  const bool jsonl = a.output.size() > 6 && a.output.substr(a.output.size() - 6) == ".jsonl";
  const bool regression = config.num_labels == 1;
  if (!jsonl && regression) {
    out << "score\n";
  } else if (!jsonl) {
    out << "prediction";
    for (const auto& l : labels) out << "\tp(" << l << ")";
    out << "\n";
  }
  // Every text encoded first, then batched in order of length (the longest first), so a batch's
  // rows have similar lengths and little padding; each line is kept at its text's place and
  // everything is written in input order at the end.
  struct Encoded {
    std::vector<int32_t> ids, types;
  };
  std::vector<Encoded> encoded(examples.size());
  const loom::EncodeOptions encode{static_cast<size_t>(seq), loom::Truncation::longest_first, false};
  for (size_t i = 0; i < examples.size(); ++i) {
    const Example& e = examples[i];
    Encoded& row = encoded[i];
    row.ids.resize(static_cast<size_t>(seq));
    row.types.resize(static_cast<size_t>(seq));
    const loom::EncodedBuffers buffers{row.ids.data(), row.types.data(), nullptr, static_cast<size_t>(seq)};
    const size_t length = tokenizer.call([&](loom::Tokenizer& t) {
      return t.encode(e.text.data(), e.text.size(), e.pair.empty() ? nullptr : e.pair.data(), e.pair.size(),
                      encode, buffers);
    });
    row.ids.resize(std::min(length, static_cast<size_t>(seq)));
    row.types.resize(row.ids.size());
  }
  std::vector<size_t> by_length(examples.size());
  for (size_t i = 0; i < by_length.size(); ++i) by_length[i] = i;
  std::stable_sort(by_length.begin(), by_length.end(),
                   [&](size_t x, size_t y) { return encoded[x].ids.size() > encoded[y].ids.size(); });
  std::vector<std::string> lines(examples.size());
  std::vector<int32_t> ids(static_cast<size_t>(a.batch_size * seq)), types(ids.size()), mask(ids.size());
  for (size_t start = 0; start < examples.size(); start += static_cast<size_t>(a.batch_size)) {
    const size_t rows = std::min(examples.size() - start, static_cast<size_t>(a.batch_size));
    const int64_t width = static_cast<int64_t>(encoded[by_length[start]].ids.size());  // the batch's longest
    for (size_t r = 0; r < rows; ++r) {
      const Encoded& row = encoded[by_length[start + r]];
      for (int64_t c = 0; c < width; ++c) {
        const bool real = static_cast<size_t>(c) < row.ids.size();
        ids[r * width + c] = real ? row.ids[c] : 0;
        types[r * width + c] = real ? row.types[c] : 0;
        mask[r * width + c] = real ? 1 : 0;
      }
    }
    host::HostBatch batch;
    batch.batch = static_cast<int64_t>(rows);
    batch.seq = width;
    batch.input_ids = ids.data();
    batch.token_type_ids = types.data();
    batch.attention_mask = mask.data();
    const loom::BatchView& view = staging.upload(batch);
    model.forward(view, host::StepSettings{false, 0}, staging.packed());
    const loom::Tensor logits = model.output("logits");
    const std::vector<float> host_logits = host::rows_to_host(*backend.get(), logits);
    const size_t classes = regression ? 1 : labels.size();
    host::require_finite_outputs(
        std::span<const float>(host_logits.data(), rows * classes), classes, "logits", a.checkpoint,
        [&](size_t r) { return fmt::format("text {} of {}", by_length[start + r] + 1, a.input); });
    for (size_t r = 0; r < rows; ++r) {
      std::ostringstream line;
      if (regression) {
        if (jsonl)
          line << nlohmann::json{{"score", host_logits[r]}}.dump() << "\n";
        else
          line << fmt::format("{:.6f}\n", host_logits[r]);
        lines[by_length[start + r]] = line.str();
        continue;
      }
      const float* row = host_logits.data() + r * labels.size();
      const float top = *std::max_element(row, row + labels.size());
      std::vector<double> p(labels.size());
      double sum = 0;
      for (size_t c = 0; c < labels.size(); ++c) sum += p[c] = std::exp(static_cast<double>(row[c] - top));
      size_t best = 0;
      for (size_t c = 0; c < labels.size(); ++c) {
        p[c] /= sum;
        if (p[c] > p[best]) best = c;
      }
      if (jsonl) {
        nlohmann::json probabilities = nlohmann::json::object();
        for (size_t c = 0; c < labels.size(); ++c) probabilities[labels[c]] = p[c];
        line << nlohmann::json{{"prediction", labels[best]}, {"probabilities", probabilities}}.dump() << "\n";
      } else {
        line << labels[best];
        for (double v : p) line << fmt::format("\t{:.6f}", v);
        line << "\n";
      }
      lines[by_length[start + r]] = line.str();
    }
  }
  for (const std::string& line : lines) out << line;
  emit();  // the header of an empty input
  if (file) file->commit();
}

void register_predict_verb(CLI::App& app, GlobalOptions& options) {
  auto args = std::make_shared<PredictArguments>();
  auto* verb = app.add_subcommand("predict", "classify (or score) texts with a fine-tuned checkpoint");
  verb->add_option("--checkpoint", args->checkpoint,
                   "checkpoint directory (config.json, model.safetensors, vocab.txt)")
      ->required();
  verb->add_option("--input", args->input,
                   "TSV or JSONL file of texts (question answering: SQuAD JSON, or JSONL of question/context)");
  verb->add_option("--output", args->output, "write here instead of stdout (.jsonl for JSON lines)");
  verb->add_option("--batch-size", args->batch_size, "rows per forward pass")->check(CLI::Range(1, 4096));
  auto* max_seq_length = verb->add_option("--max-seq-length", args->max_seq_length,
                                          "tokens per text (pair); question answering: per window (384)")
      ->check(CLI::Range(8, 4096));
  verb->add_option("--threads", args->threads, "CPU threads (0: the backend's default)");
  verb->add_flag("--padded", args->padded,
                 "run every layer over the padded rows (default: the layers that accept packed tokens "
                 "skip padding)");
  add_plugin_flags(*verb, options);
  auto squad = std::make_shared<SquadPredictArguments>();
  add_squad_predict_options(*verb, *squad);
  verb->callback([&options, args, squad, max_seq_length] {
    std::error_code error;  // before any file in it is named as missing
    if (!std::filesystem::is_directory(args->checkpoint, error))
      throw host::InputError(args->checkpoint + ": no such checkpoint directory (--checkpoint)");
    args->max_seq_length_given = max_seq_length->count() > 0;
    if (wants_squad_prediction(args->checkpoint, *squad)) {
      if (args->max_seq_length_given) {
        squad->max_seq_length = args->max_seq_length;
        squad->max_seq_length_given = true;
      }
      squad->padded = args->padded;
      predict_squad_answers(options, args->checkpoint, args->input, args->output, args->batch_size, args->threads,
                            *squad);
      return;
    }
    if (args->input.empty()) throw host::InputError("--input is required (a TSV or JSONL file of texts)");
    predict(options, *args);
  });
}

const VerbRegistration registration(&register_predict_verb);

}  // namespace
}  // namespace loom::cli
