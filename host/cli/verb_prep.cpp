// `loom prep pretraining`: raw text → HDF5 pretraining shards (host/prep/pretraining_prep.cpp).
// The tokenizer is `tokenizer/wordpiece` for a vocab.txt or `tokenizer/bpe` for a tokenizer.json,
// created through the plugin registry like any recipe component (vocab_tokenizer.hpp).
#include <iostream>

#include <fmt/format.h>

#include "cli_context.hpp"
#include "recipe/errors.hpp"
#include "prep/pretraining_prep.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "vocab_tokenizer.hpp"

namespace loom::cli {
namespace {

void register_prep_verbs(CLI::App& app, GlobalOptions& options) {
  auto* prep = app.add_subcommand("prep", "prepare training data");
  prep->require_subcommand(1);
  auto args = std::make_shared<host::PrepOptions>();
  auto* pretraining = prep->add_subcommand(
      "pretraining", "raw text → formatted corpus → HDF5 MLM+NSP shards with manifest.json (docs/data.md)");
  pretraining->add_option("--vocab", args->vocab, "WordPiece vocabulary (vocab.txt) or byte-level BPE tokenizer.json")
      ->required()
      ->check(CLI::ExistingFile);
  pretraining->add_option("--input", args->inputs, "text files or directories (recursive)")->required();
  pretraining->add_option("--output", args->output, "output directory")->required();
  pretraining
      ->add_option("--input-format", args->input_format,
                   "raw: a file is one document of prose; sentences: one sentence per line, blank line "
                   "between documents")
      ->capture_default_str()
      ->check(CLI::IsMember({"raw", "sentences"}));
  pretraining->add_option("--max-seq-length", args->max_seq_length, "tokens per instance incl. [CLS]/[SEP]")
      ->capture_default_str();
  pretraining->add_option("--max-predictions", args->max_predictions, "masked positions per instance at most")
      ->capture_default_str();
  pretraining->add_option("--masked-lm-prob", args->masked_lm_prob, "share of tokens masked")
      ->capture_default_str();
  pretraining->add_option("--short-seq-prob", args->short_seq_prob, "probability of a shorter target length")
      ->capture_default_str();
  pretraining->add_option("--dupe-factor", args->dupe_factor, "passes over the corpus with different masks")
      ->capture_default_str();
  pretraining->add_option("--seed", args->seed, "random seed")->capture_default_str();
  pretraining->add_option("--shards", args->shards, "training shards (0 = automatic)")->capture_default_str();
  pretraining->add_option("--heldout-fraction", args->heldout_fraction, "share of documents held out")
      ->capture_default_str();
  pretraining->add_flag("--whole-word-masking", args->whole_word_masking,
                        "mask whole words (## pieces together)");
  pretraining->add_option("--mask-ratio", args->mask_ratio, "chosen tokens replaced by [MASK]")
      ->capture_default_str();
  pretraining->add_option("--random-ratio", args->random_ratio, "chosen tokens replaced by a random token")
      ->capture_default_str();
  pretraining->add_flag("!--no-dedup", args->dedup, "keep repeated lines");
  pretraining->add_option("--threads", args->threads, "worker threads (0 = all cores)")
      ->capture_default_str();
  pretraining->add_flag("--cased", args->cased, "keep case and accents (cased vocabulary)");
  add_plugin_flags(*pretraining, options);
  pretraining->callback([&options, args] {
    host::Component<loom::Tokenizer> tokenizer =
        create_tokenizer_for_vocab(options, args->vocab, args->cased, "loom prep pretraining --vocab");
    args->tokenizer_component = "tokenizer/" + tokenizer_component_for_vocab(args->vocab);
    // Called directly (not through Component::call): option problems must stay usage errors.
    try {
      host::prep_pretraining(*args, *tokenizer.get(),
                             [](const std::string& line) { std::cerr << line << std::endl; });
    } catch (const std::invalid_argument& e) {
      throw host::RecipeError(std::string(e.what()));
    }
  });
}

const VerbRegistration registration(&register_prep_verbs);

}  // namespace
}  // namespace loom::cli
