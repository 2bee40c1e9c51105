// `loom predict` for a question-answering checkpoint (config.json architectures
// BertForQuestionAnswering, model.safetensors with qa_outputs.*, vocab.txt — what `loom run`
// writes for a SQuAD recipe): answers questions about contexts.
//
//   loom predict --checkpoint DIR --question Q --context C     one JSON line: answer, probability,
//                                                              n-best (and v2.0's null_score_diff)
//   loom predict --checkpoint DIR --input FILE [--output F]     FILE: SQuAD JSON (data/paragraphs/
//                                                              qas) or JSONL {"id", "question",
//                                                              "context"}; writes predictions.json's
//                                                              layout (id → answer)
// The questions go through dataset/squad in evaluation mode (the windows, max-context flags and
// token maps of training) and the reference's decoding (eval/squad_decode.hpp).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "cli_context.hpp"

namespace loom::cli {

struct SquadPredictArguments {
  std::string question, context;
  int max_seq_length = 384;
  bool max_seq_length_given = false;  // a --max-seq-length above the model's positions is refused
  int doc_stride = 128;
  int max_query_length = 64;
  int n_best_size = 20;
  int max_answer_length = 30;
  bool version_2_with_negative = false;
  double null_score_diff_threshold = 0.0;
  bool padded = false;  // --padded: every layer over the padded windows
};

/// Adds --question, --context and the SQuAD options to `verb`.
void add_squad_predict_options(CLI::App& verb, SquadPredictArguments& args);

/// True when `checkpoint`'s config.json says BertForQuestionAnswering or a question was given.
bool wants_squad_prediction(const std::string& checkpoint, const SquadPredictArguments& args);

/// Runs the prediction; `input`/`output` as `loom predict --input/--output` ("" for none).
void predict_squad_answers(const GlobalOptions& options, const std::string& checkpoint,
                           const std::string& input, const std::string& output, int batch_size, int threads,
                           const SquadPredictArguments& args);

}  // namespace loom::cli
