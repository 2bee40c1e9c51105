// `loom bench RECIPE --inference [--batch-sizes 1,8] [--seq-lengths 128,384] [--precisions
// fp32,bf16] [--steps N] [--warmup W] [--json]`: sequences per second and p50/p90/p99 latency of
// inference requests through the recipe's model, for every batch size × sequence length ×
// precision. The model is the recipe's [model] (config and blocks, head included) on its
// [backend] with its thread count, built as `loom eval` builds it (model_setup.hpp) with random
// initial weights, once per precision: "fp32", "bf16" (the bf16-mixed policy: bf16 GEMM operands
// and working weights, f32 everywhere else, docs/decisions/bf16-compute.md), "fp16", or any
// precision component's name; the recipe's own [precision] is not used. The recipe's [data], when
// present, is opened only to size the head as training would (a classification task's label
// count). A request is upload + forward without dropout + download of the head's outputs on
// synthetic full-length batches (eval/inference_timing.hpp); latency percentiles interpolate
// linearly (eval/latency_summary.hpp). Sequences per second = batch size / mean latency.
#include "inference_bench.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "eval/inference_timing.hpp"
#include "eval/latency_summary.hpp"
#include "loom/sdk/component_kind.hpp"
#include "loom/sdk/ops/device_description.hpp"
#include "model/model_recipe.hpp"
#include "model/model_setup.hpp"
#include "model/training_flops.hpp"
#include "recipe/errors.hpp"
#include "recipe/run_settings.hpp"
#include "train/run_components.hpp"

namespace loom::cli {
namespace {

/// The precision component a --precisions entry names ("bf16" → "bf16-mixed").
std::string precision_component(const std::string& name) {
  if (name == "bf16") return "bf16-mixed";
  if (name == "fp16") return "fp16-mixed";
  return name;
}

host::Component<loom::Precision> create_precision(const host::PluginRegistry& registry,
                                                  const std::string& name) {
  const std::string component = precision_component(name);
  const host::ComponentEntry* entry = registry.find(LOOM_KIND_PRECISION, component);
  if (entry == nullptr)
    throw host::RecipeError(fmt::format(
        "--precisions: no precision component {} is available (fp32, bf16, fp16 or a precision/<name>)",
        component));
  return registry.create<loom::Precision>(
      *entry, host::ComponentConfig{"precision", "", "", "(loom bench --inference --precisions)"}, false);
}

nlohmann::json measure_point(host::Model& model, host::BatchStaging& staging, int64_t batch, int64_t seq,
                             const std::string& precision, uint64_t seed, int steps, int warmup) {
  const host::SyntheticBatch input(batch, seq, model.config().vocab_size, seed);
  const host::InferenceTiming timing = host::time_inference(model, staging, input.view(), warmup, steps);
  const host::LatencySummary s = host::summarize_latencies(timing.seconds);
  const double flops = static_cast<double>(batch) * host::bert_forward_flops(model.config(), seq, 0);
  return {{"batch", batch},
          {"seq", seq},
          {"precision", precision},
          {"sequences_per_second", static_cast<double>(batch) / s.mean},
          {"tokens_per_second", static_cast<double>(batch * seq) / s.mean},
          {"model_tflops_per_second", flops / s.mean / 1e12},
          {"latency_ms",
           {{"mean", 1e3 * s.mean},
            {"min", 1e3 * s.min},
            {"p50", 1e3 * s.p50},
            {"p90", 1e3 * s.p90},
            {"p99", 1e3 * s.p99},
            {"max", 1e3 * s.max}}},
          {"outputs", timing.outputs},
          {"output_bytes", timing.output_bytes}};
}

}  // namespace

void add_inference_bench_options(CLI::App& verb, CLI::Option* inference_flag, InferenceBenchArguments& args) {
  verb.add_option("--batch-sizes", args.batch_sizes, "with --inference: batch sizes to time (default 1,8)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{65536}))
      ->needs(inference_flag);
  verb.add_option("--seq-lengths", args.seq_lengths, "with --inference: sequence lengths (default 128,384)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{65536}))
      ->needs(inference_flag);
  verb.add_option("--precisions", args.precisions,
                  "with --inference: fp32, bf16, fp16 or precision components (default fp32,bf16)")
      ->delimiter(',')
      ->needs(inference_flag);
}

void run_inference_bench(const GlobalOptions& options, const RecipeArguments& recipe_arguments,
                         const InferenceBenchArguments& args, int steps, int warmup, bool json) {
  auto [recipe, registry] = load_and_check(options, recipe_arguments);
  const host::RunSettings settings = host::read_run_settings(recipe);
  const bool has_data = recipe.table().contains("data");
  host::RunComponents c = host::create_run_components(recipe, *registry, {has_data, false});
  loom::Backend& backend = *c.backend.get();
  const loom::Tokenizer* tokenizer = c.tokenizer ? c.tokenizer.get() : nullptr;
  // The data decides what training would: the classifier's label count.
  std::optional<loom::BatchLimits> data_limits;
  if (has_data) {
    const loom::DatasetSetup setup{0, 1, settings.seed, tokenizer};
    c.data.call([&](loom::Dataset& d) { d.open(setup); });
    data_limits = c.data.call([](loom::Dataset& d) { return d.limits(); });
  }
  const int64_t max_batch = *std::max_element(args.batch_sizes.begin(), args.batch_sizes.end());
  const int64_t max_seq = *std::max_element(args.seq_lengths.begin(), args.seq_lengths.end());
  const std::string head = host::read_model_recipe(recipe).expanded_blocks().back();
  const int rank = c.communicator.call([](loom::Communicator& m) { return m.rank(); });

  nlohmann::json results = nlohmann::json::array();
  uint64_t parameters = 0;
  std::vector<std::string> outputs;
  for (const std::string& precision_name : args.precisions) {
    host::Component<loom::Precision> precision = create_precision(*registry, precision_name);
    loom::BatchLimits limits{};
    if (data_limits) limits = *data_limits;
    limits.batch_size = static_cast<int32_t>(max_batch);
    limits.max_seq_length = static_cast<int32_t>(max_seq);
    limits.max_predictions = 0;
    host::ModelSetup setup = host::build_model(recipe, *registry, c.backend, *precision.get(),
                                               data_limits ? &limits : nullptr, tokenizer);
    host::Model& model = *setup.model;
    if (max_seq > model.config().max_position_embeddings)
      throw host::RecipeError(
          fmt::format("--seq-lengths {}: longer than the model's max_position_embeddings ({}) in {}", max_seq,
                      model.config().max_position_embeddings, host::read_model_recipe(recipe).config_path));
    const loom::ActivationShape shape{max_batch, max_seq, 0};
    model.reserve(shape);
    host::BatchStaging staging(backend, shape);
    model.initialize(settings.seed);
    parameters = model.parameters().parameter_count();
    for (const int64_t batch : args.batch_sizes)
      for (const int64_t seq : args.seq_lengths) {
        nlohmann::json point =
            measure_point(model, staging, batch, seq, precision_name, settings.seed, steps, warmup);
        outputs = point["outputs"].get<std::vector<std::string>>();
        point.erase("outputs");
        results.push_back(std::move(point));
      }
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  nlohmann::json report{{"recipe", recipe_arguments.recipe},
                        {"mode", "inference"},
                        {"head", head},
                        {"outputs", outputs},
                        {"parameters", parameters},
                        {"threads", backend.threads()},
                        {"warmup", warmup},
                        {"steps", steps},
                        {"results", results},
                        {"peak_rss_mib", static_cast<double>(usage.ru_maxrss) / 1024.0}};
  std::string device = backend.device().type == loom::DeviceType::cpu ? "CPU" : "device";
  if (const loom::DeviceDescription* description = c.backend.find<loom::DeviceDescription>()) {
    device = description->device_info().name;
    report["device"] = device;
  }
  if (rank != 0) return;
  if (json) {
    std::cout << report.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format(
      "{}: inference through {} (reading back {}), {} parameters, {} threads on {}\n"
      "  {} timed requests per row after {} untimed; a request = upload + forward (no dropout) + read-back\n"
      "  {:>5} {:>5}  {:<10} {:>9} {:>9} {:>9} {:>9} {:>8}\n",
      recipe_arguments.recipe, head, fmt::join(outputs, ", "), parameters, backend.threads(), device, steps,
      warmup, "batch", "seq", "precision", "seq/s", "p50 ms", "p90 ms", "p99 ms", "TFLOP/s");
  for (const auto& r : results) {
    const auto& ms = r["latency_ms"];
    std::cout << fmt::format("  {:>5} {:>5}  {:<10} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>8.3f}\n",
                             r["batch"].get<int64_t>(), r["seq"].get<int64_t>(),
                             r["precision"].get<std::string>(), r["sequences_per_second"].get<double>(),
                             ms["p50"].get<double>(), ms["p90"].get<double>(), ms["p99"].get<double>(),
                             r["model_tflops_per_second"].get<double>());
  }
}

}  // namespace loom::cli
