// `loom bench RECIPE --inference`: inference throughput and latency of the recipe's model (see
// inference_bench.cpp); verb_bench.cpp adds the flag and these options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_context.hpp"

namespace loom::cli {

struct InferenceBenchArguments {
  std::vector<int64_t> batch_sizes{1, 8};
  std::vector<int64_t> seq_lengths{128, 384};
  std::vector<std::string> precisions{"fp32", "bf16"};
};

/// Adds --batch-sizes, --seq-lengths and --precisions to `verb`, each requiring `inference_flag`.
void add_inference_bench_options(CLI::App& verb, CLI::Option* inference_flag, InferenceBenchArguments& args);

/// Measures every (precision, batch size, sequence length) with `warmup` untimed and `steps`
/// timed requests each; prints a table, or JSON with `json`.
void run_inference_bench(const GlobalOptions& options, const RecipeArguments& recipe_arguments,
                         const InferenceBenchArguments& args, int steps, int warmup, bool json);

}  // namespace loom::cli
