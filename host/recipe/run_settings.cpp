// The recipe's host tables; see run_settings.hpp.
#include "recipe/run_settings.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "recipe/errors.hpp"
#include "recipe/stream_address.hpp"

namespace loom::host {
namespace {

uint64_t count(loom::Options& o, const char* key, uint64_t fallback, double min) {
  return static_cast<uint64_t>(o.get<int64_t>(key, static_cast<int64_t>(fallback), loom::Range{min, 1e15}));
}

}  // namespace

std::string run_name_problem(const std::string& name) {
  // The run directory is output_dir/name: anything but one ordinary path component would put it
  // (and its checkpoints, and the pruning of old ones) somewhere else — ".." is output_dir's parent.
  const char* const rule = "a run name is one directory name under run.output_dir";
  if (name.empty()) return fmt::format("must not be empty ({})", rule);
  if (name == "." || name == "..")
    return fmt::format("'{}' is not allowed: the run directory would be {} ({})", name,
                       name == "." ? "run.output_dir itself" : "the parent of run.output_dir", rule);
  if (name.find('/') != std::string::npos)
    return fmt::format("'{}' contains '/' ({}; choose another run.output_dir for a deeper place)", name,
                       rule);
  for (const char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return fmt::format("{} contains a control character ({}; no NUL, newline or other control characters)",
                         nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                         rule);
  if (name.size() > kMaxRunNameBytes)
    return fmt::format("is {} bytes long ({}, at most {} bytes)", name.size(), rule, kMaxRunNameBytes);
  return "";
}

std::string metrics_listen_problem(const std::string& listen, const std::string& token) {
  if (listen.empty()) return "";
  try {
    const StreamAddress address = parse_stream_address(listen);
    // Anyone who reaches the port can stop the run: beyond loopback a token is required.
    if (!is_loopback_host(address.host) && token.empty())
      return "'" + address.host +
             "' is reachable from other machines: set [metrics] token (clients must send it), or listen on "
             "127.0.0.1 and use an SSH tunnel";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

const std::vector<std::pair<std::string, HostTableReader>>& host_table_readers() {
  static const std::vector<std::pair<std::string, HostTableReader>> readers = {
      {"run",
       [](loom::Options& o, RunSettings& s) {
         s.name = o.get<std::string>("name", s.name);
         s.seed = static_cast<uint64_t>(o.get<int64_t>("seed", 42, loom::Range{0, 4294967295.0}));
         s.output_dir = o.get<std::string>("output_dir", s.output_dir);
         const std::string problem = run_name_problem(s.name);
         if (!problem.empty()) o.fail("name", problem);
       }},
      {"train",
       [](loom::Options& o, RunSettings& s) {
         s.steps = count(o, "steps", s.steps, 1);
         s.grad_accumulation = count(o, "grad_accumulation", s.grad_accumulation, 1);
         s.log_every = count(o, "log_every", s.log_every, 1);
         s.eval_every = count(o, "eval_every", s.eval_every, 0);
         s.eval_batches = count(o, "eval_batches", s.eval_batches, 0);
         s.allreduce_post_accumulation = o.get<bool>("allreduce_post_accumulation", false);
         s.allreduce_bucket_mb = o.get<double>("allreduce_bucket_mb", 25.0, loom::Range{0.001, 1e6});
         s.freeze = o.get<std::vector<std::string>>("freeze", {});
         for (const std::string& prefix : s.freeze)
           if (prefix.empty()) o.fail("freeze", "an empty prefix would freeze every parameter");
       }},
      {"checkpoint",
       [](loom::Options& o, RunSettings& s) {
         s.checkpoint_every = count(o, "every", s.checkpoint_every, 0);
         s.checkpoint_keep = static_cast<int>(o.get<int64_t>("keep", s.checkpoint_keep, loom::Range{1, 1e6}));
       }},
      {"plugins",
       [](loom::Options& o, RunSettings&) {
         o.get<std::vector<std::string>>("paths", {});
         o.get<std::vector<std::string>>("require", {});
       }},
      {"model",
       [](loom::Options& o, RunSettings& s) {
         o.has("config");  // read and checked by model_recipe.cpp
         o.has("blocks");
         s.init_from = o.get<std::string>("init_from", "");
         s.unpadded = o.get<bool>("unpadded", true);
       }},
      {"metrics",
       [](loom::Options& o, RunSettings& s) {
         s.metrics_listen = o.get<std::string>("listen", "");
         s.metrics_token = o.get<std::string>("token", "");
         s.metrics_client_queue = count(o, "client_queue", s.metrics_client_queue, 1);
         s.metrics_max_clients = static_cast<uint64_t>(
             o.get<int64_t>("max_clients", static_cast<int64_t>(s.metrics_max_clients), loom::Range{1, 10000}));
         s.metrics_auth_timeout_s = o.get<double>("auth_timeout_s", s.metrics_auth_timeout_s, loom::Range{0.01, 3600});
         s.metrics_max_requests_per_s =
             o.get<double>("max_requests_per_s", s.metrics_max_requests_per_s, loom::Range{0.01, 1e6});
         const std::string problem = metrics_listen_problem(s.metrics_listen, s.metrics_token);
         if (!problem.empty()) o.fail("listen", problem);
       }},
      {"squad",
       [](loom::Options& o, RunSettings& s) {
         s.squad_n_best_size = o.get<int32_t>("n_best_size", s.squad_n_best_size, loom::Range{1, 1000});
         s.squad_max_answer_length =
             o.get<int32_t>("max_answer_length", s.squad_max_answer_length, loom::Range{1, 1 << 16});
         s.squad_version_2_with_negative = o.get<bool>("version_2_with_negative", false);
         s.squad_null_score_diff_threshold =
             o.get<double>("null_score_diff_threshold", s.squad_null_score_diff_threshold, loom::Range{-1e6, 1e6});
       }},
  };
  return readers;
}

RunSettings read_run_settings(const Recipe& recipe) {
  RunSettings settings;
  std::vector<std::string> problems;
  for (const auto& [table, reader] : host_table_readers()) {
    const ComponentConfig config = recipe.component_config(table);
    loom::Options options(config.toml, config.origins, config.table_origin, table);
    reader(options, settings);
    try {
      options.finish();
    } catch (const loom::ConfigError& e) {
      problems.insert(problems.end(), options.problems().begin(), options.problems().end());
    }
  }
  if (!problems.empty()) throw RecipeError(problems);
  return settings;
}

}  // namespace loom::host
