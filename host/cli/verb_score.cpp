// `loom score squad DEV.json PREDICTIONS.json [--na-prob NA.json] [--na-prob-thresh T]`: the
// official SQuAD evaluation (v1.1 or v2.0, by the dev file's "version"; eval/squad_score.hpp).
// Prints the scores as one JSON object on the last line of standard output; notes the scripts
// print (unanswered v1.1 questions) go to standard error. A malformed or inconsistent file is an
// InputError naming it (exit 2).
#include <iostream>

#include "cli_context.hpp"
#include "eval/squad_score.hpp"

namespace loom::cli {
namespace {

struct ScoreSquadArguments {
  std::string dev, predictions, na_probs;
  double na_prob_thresh = 1.0;
};

void register_score_verb(CLI::App& app, GlobalOptions&) {
  auto* score = app.add_subcommand("score", "score predictions with a task's official evaluation");
  score->require_subcommand(1);
  auto args = std::make_shared<ScoreSquadArguments>();
  auto* squad = score->add_subcommand(
      "squad", "SQuAD v1.1/v2.0: exact match and F1 as the official evaluate-v1.1.py/evaluate-v2.0.py");
  squad->add_option("DEV", args->dev, "the SQuAD file the questions came from (train/dev JSON)")->required();
  squad->add_option("PREDICTIONS", args->predictions, "JSON object: question id -> answer text")->required();
  squad->add_option("--na-prob", args->na_probs,
                    "v2.0: JSON object question id -> no-answer probability (or score, e.g. null_odds.json); "
                    "adds best_exact/best_f1 and their thresholds");
  squad
      ->add_option("--na-prob-thresh", args->na_prob_thresh,
                   "v2.0: a prediction whose no-answer probability exceeds this counts as no answer")
      ->default_val(1.0);
  squad->callback([args] {
    std::vector<std::string> notes;
    const nlohmann::ordered_json scores =
        host::score_squad_files(args->dev, args->predictions, args->na_probs, args->na_prob_thresh, notes);
    for (const std::string& note : notes) std::cerr << note << "\n";
    std::cout << scores.dump() << std::endl;
  });
}

const VerbRegistration registration(&register_score_verb);

}  // namespace
}  // namespace loom::cli
