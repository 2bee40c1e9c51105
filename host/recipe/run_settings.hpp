// RunSettings: the host tables of a recipe ([run], [train], [checkpoint], [model] init_from,
// [metrics], [squad]) as
// the trainer uses them. `read_run_settings` and `loom check` read the same keys with the same
// typed reader, so a recipe that checks is a recipe that runs (docs/recipes.md lists them).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "recipe/recipe.hpp"
#include "loom/sdk/options.hpp"

namespace loom::host {

struct RunSettings {
  std::string name = "run";
  uint64_t seed = 42;
  std::string output_dir = "runs";

  uint64_t steps = 1;              ///< optimizer steps of the run
  uint64_t grad_accumulation = 1;  ///< micro-batches per optimizer step
  uint64_t log_every = 10;         ///< steps between progress lines / metrics records
  uint64_t eval_every = 0;         ///< steps between evaluations on [eval_data] (0: only at the end)
  uint64_t eval_batches = 0;       ///< batches per evaluation (0: the whole evaluation set)
  bool allreduce_post_accumulation = false;  ///< all-reduce once after backward, not in buckets
  double allreduce_bucket_mb = 25;           ///< MiB of gradients per overlapped all-reduce
  std::vector<std::string> freeze;  ///< parameter-name prefixes the optimizer leaves as they are

  uint64_t checkpoint_every = 0;  ///< steps between checkpoints (0: only at the end)
  int checkpoint_keep = 3;        ///< checkpoints kept

  std::string init_from;  ///< [model] init_from: a checkpoint (or model) directory, "" for none
  bool unpadded = true;   ///< [model] unpadded: layers that accept packed tokens skip padding (model.hpp)

  std::string metrics_listen;            ///< [metrics] listen: "host:port" of the metrics stream, "" for off
  std::string metrics_token;             ///< [metrics] token clients must send ("": a random one per run)
  uint64_t metrics_client_queue = 4096;  ///< [metrics] client_queue: live records buffered per client
  uint64_t metrics_max_clients = 8;      ///< [metrics] max_clients: admitted clients at once
  double metrics_auth_timeout_s = 5;     ///< [metrics] auth_timeout_s: seconds a client has to send the token
  double metrics_max_requests_per_s = 20;  ///< [metrics] max_requests_per_s: per client, or it is disconnected

  // [squad]: how span logits become SQuAD answers (eval/squad_decode.hpp; the reference's defaults).
  int32_t squad_n_best_size = 20;
  int32_t squad_max_answer_length = 30;
  bool squad_version_2_with_negative = false;    ///< SQuAD v2.0: questions may have no answer
  double squad_null_score_diff_threshold = 0.0;  ///< v2.0: predict "" when null − best score exceeds it

  /// runs/<name> (output_dir/name), relative paths as given.
  std::filesystem::path run_directory() const { return std::filesystem::path(output_dir) / name; }
};

/// A host table's reader: reads every key it knows from `options` into `settings`.
using HostTableReader = std::function<void(loom::Options& options, RunSettings& settings)>;

/// The host tables and their readers ([run], [train], [checkpoint], [plugins], [model], [metrics],
/// [squad]).
const std::vector<std::pair<std::string, HostTableReader>>& host_table_readers();

/// The longest run name: a directory name's limit on Linux file systems (NAME_MAX).
inline constexpr size_t kMaxRunNameBytes = 255;

/// Why `name` cannot be a run name ("" when it can): the run directory is output_dir/name, so a
/// name is one ordinary path component — not empty, not "." or "..", no '/', no control
/// characters, at most kMaxRunNameBytes bytes.
std::string run_name_problem(const std::string& name);

/// Why the metrics stream cannot listen on `listen` with `token` ("" when it can): a malformed
/// address, or one reachable from other machines without a token.
std::string metrics_listen_problem(const std::string& listen, const std::string& token);

/// Reads every host table of `recipe`; throws RecipeError listing every problem.
RunSettings read_run_settings(const Recipe& recipe);

}  // namespace loom::host
