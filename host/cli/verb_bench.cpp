// `loom bench RECIPE [--steps N] [--warmup W] [--json]`: steady-state training and inference
// throughput of the recipe's model, data and precision (no checkpoints, no metrics files):
// sequences/s, tokens/s, model TFLOP/s (training_flops.hpp), milliseconds per step split into
// data, forward, backward, optimizer and communication, the process's peak RSS, and on a
// backend that describes its device (DeviceDescription) the device (name, SMs or threads, share
// of its dense bf16 peak, peak device memory). Batches come from the recipe's [data], read once
// before timing starts, so the numbers measure compute, not the data pipeline. Under mpirun with
// communicator/mpi every rank trains on the same batch and gradients are averaged as `loom run`
// does (overlapped buckets, or once with train.allreduce_post_accumulation); "communication" is
// then the time a step waited for gradients that backward did not hide. The step ends as in `loom
// run` (backend_update.hpp): on the backend when it offers the optimizer passes ("optimizer" then
// includes the non-finite flag read), else, on a backend whose memory the host cannot address, on
// host copies (host_mirror.hpp), where "communication" includes the gradient download and
// "optimizer" the weight upload. Rank 0 prints. With --inference it measures inference requests
// instead: sequences/s and latency percentiles per batch size, sequence length and precision
// (inference_bench.cpp).
#include <sys/resource.h>

#include <chrono>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.hpp"
#include "inference_bench.hpp"
#include "loom/sdk/ops/device_description.hpp"
#include "model/host_mirror.hpp"
#include "model/model_setup.hpp"
#include "model/training_flops.hpp"
#include "recipe/run_settings.hpp"
#include "train/backend_update.hpp"
#include "train/gradient_sync.hpp"
#include "train/run_components.hpp"
#include "train/train_step.hpp"
#include "train/trainer.hpp"

namespace loom::cli {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct BenchArguments {
  RecipeArguments recipe;
  int steps = 20;
  int warmup = 3;
  bool json = false;
  bool inference = false;
  InferenceBenchArguments inference_args;
};

void bench(const GlobalOptions& options, const BenchArguments& a) {
  auto [recipe, registry] = load_and_check(options, a.recipe);
  const host::RunSettings settings = host::read_run_settings(recipe);
  host::RunComponents c = host::create_run_components(recipe, *registry);
  loom::Backend& backend = *c.backend.get();
  const loom::DatasetSetup setup{0, 1, settings.seed, c.tokenizer ? c.tokenizer.get() : nullptr};
  const host::DatasetModel run =
      host::build_model_for_dataset(recipe, *registry, c.backend, *c.precision.get(), c.data, setup);
  host::Model& model = run.model();
  host::BatchStaging& staging = *run.staging;
  const auto segments = model.parameters().segments();
  const size_t total = model.parameters().total_elements();
  c.optimizer.call([&](loom::Optimizer& o) { o.setup(segments.data(), segments.size(), total); });
  c.schedule.call([&](loom::Schedule& s) { s.setup(static_cast<uint64_t>(a.steps + a.warmup)); });
  model.initialize(settings.seed);
  loom::BatchShape batch_shape{};
  const host::HostBatch batch =
      c.data.call([&](loom::Dataset& d) { return run.buffers->next(d, batch_shape); });
  uint64_t tokens = 0, predictions = 0;
  for (int64_t i = 0; i < batch.batch * batch.seq; ++i) tokens += batch.attention_mask[i] != 0;
  if (batch.mlm_labels != nullptr)
    for (int64_t i = 0; i < batch.batch * batch.seq; ++i) predictions += batch.mlm_labels[i] >= 0;

  const int world = c.communicator.call([](loom::Communicator& m) { return m.size(); });
  const int rank = c.communicator.call([](loom::Communicator& m) { return m.rank(); });
  // As `loom run`: the step ends on the backend when everything offers it, else on host copies of
  // weights and gradients when the backend's memory is a device's.
  const std::unique_ptr<host::BackendUpdate> on_backend =
      host::BackendUpdate::attach_if_offered(c, model, world);
  host::HostMirror master(backend, model.master()), grads(backend, model.grads());
  master.pull();
  host::GradientSync sync(c.communicator, c.communicator2, grads.data(), total,
                          host::gradient_sync_options(settings.allreduce_post_accumulation,
                                                      settings.allreduce_bucket_mb, grads.copies()));
  const bool overlap = world > 1 && sync.overlapping();
  double t_forward = 0, t_backward = 0, t_optimizer = 0, t_comm = 0, t_upload = 0;
  const double base_lr = c.optimizer.call([](loom::Optimizer& o) { return o.base_lr(); });
  for (int step = 0; step < a.warmup + a.steps; ++step) {
    if (step == a.warmup) t_forward = t_backward = t_optimizer = t_comm = t_upload = 0;
    auto t = Clock::now();
    model.zero_grads();
    const loom::BatchView& view = staging.upload(batch);
    t_upload += since(t), t = Clock::now();
    model.forward(view, host::StepSettings{true, host::dropout_key(settings.seed, step, 0)});
    (void)model.loss();
    t_forward += since(t), t = Clock::now();
    if (overlap)
      model.backward(1.0f, [&](size_t first) { sync.grads_final_from(first); });
    else
      model.backward(1.0f);
    backend.synchronize();
    t_backward += since(t), t = Clock::now();
    if (!on_backend) grads.pull();
    if (world > 1) sync.finish();
    t_comm += since(t), t = Clock::now();
    if (on_backend) {  // the gradient pass, the flag read, the update and the cast
      if (on_backend->decide().apply) on_backend->update({base_lr, 1.0});
    } else {
      c.optimizer.call([&](loom::Optimizer& o) { o.step(master.data(), grads.data(), {base_lr, 1.0}); });
      master.push();
      model.refresh_compute_weights();
    }
    t_optimizer += since(t);
  }
  const double train_seconds = t_upload + t_forward + t_backward + t_comm + t_optimizer;
  double t_inference = 0;
  for (int step = 0; step < a.warmup + a.steps; ++step) {
    if (step == a.warmup) t_inference = 0;
    const auto t = Clock::now();
    model.forward(staging.upload(batch), host::StepSettings{false, 0});
    (void)model.loss();
    t_inference += since(t);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double n = a.steps;
  // Model FLOPs (training_flops.hpp) at the batch's mean number of masked positions per sequence.
  const double flops_per_step =
      static_cast<double>(batch.batch) *
      host::bert_training_flops(model.config(), batch.seq,
                                static_cast<int64_t>(predictions / static_cast<uint64_t>(batch.batch)));
  const double tflops = n * flops_per_step / train_seconds / 1e12;
  nlohmann::json result{
      {"recipe", a.recipe.recipe},
      {"batch", batch.batch},
      {"seq", batch.seq},
      {"steps", a.steps},
      {"parameters", model.parameters().parameter_count()},
      {"threads", backend.threads()},
      {"world_size", world},
      {"allreduce", world == 1 ? "none"
                    : overlap  ? "overlapped"
                               : "post_accumulation"},
      {"global_train_sequences_per_second", world * n * static_cast<double>(batch.batch) / train_seconds},
      {"train_sequences_per_second", n * static_cast<double>(batch.batch) / train_seconds},
      {"train_tokens_per_second", n * static_cast<double>(tokens) / train_seconds},
      {"inference_sequences_per_second", n * static_cast<double>(batch.batch) / t_inference},
      {"ms_per_step",
       {{"upload", 1e3 * t_upload / n},
        {"forward", 1e3 * t_forward / n},
        {"backward", 1e3 * t_backward / n},
        {"communication", 1e3 * t_comm / n},
        {"optimizer", 1e3 * t_optimizer / n},
        {"total", 1e3 * train_seconds / n}}},
      {"train_model_tflops_per_second", tflops},
      {"peak_rss_mib", static_cast<double>(usage.ru_maxrss) / 1024.0}};
  std::string device_line;
  if (const loom::DeviceDescription* device = c.backend.find<loom::DeviceDescription>()) {
    const loom::DeviceInfo info = device->device_info();
    result["device"] = info.name;
    result["device_multiprocessors"] = info.multiprocessors;
    device_line =
        fmt::format("  device     {} ({} {}), {:.3g} model TFLOP/s", info.name, info.multiprocessors,
                    backend.device().type == loom::DeviceType::cpu ? "threads" : "SMs", tflops);
    if (info.peak_dense_bf16_flops > 0) {
      result["peak_dense_bf16_tflops"] = info.peak_dense_bf16_flops / 1e12;
      result["share_of_bf16_peak"] = tflops * 1e12 / info.peak_dense_bf16_flops;
      device_line +=
          fmt::format(" = {:.1f}% of its {:.0f} TFLOP/s dense bf16 peak",
                      100 * tflops * 1e12 / info.peak_dense_bf16_flops, info.peak_dense_bf16_flops / 1e12);
    }
    if (info.peak_allocated_bytes > 0) {
      result["peak_device_memory_bytes"] = info.peak_allocated_bytes;
      device_line += fmt::format("; peak device memory {:.2f} GiB",
                                 static_cast<double>(info.peak_allocated_bytes) / (1 << 30));
    }
    device_line += "\n";
  }
  if (rank != 0) return;
  if (a.json) {
    std::cout << result.dump(2) << "\n";
    return;
  }
  const auto& ms = result["ms_per_step"];
  std::cout << fmt::format(
      "{}: batch {} × seq {}, {} parameters, {} threads\n"
      "  training   {:.1f} seq/s, {:.0f} tokens/s; ms/step: forward {:.1f}, backward {:.1f}, optimizer "
      "{:.1f}, "
      "communication {:.2f}, upload {:.2f}\n"
      "  inference  {:.1f} seq/s\n  peak RSS   {:.0f} MiB\n{}",
      a.recipe.recipe, batch.batch, batch.seq, result["parameters"].get<uint64_t>(), backend.threads(),
      result["train_sequences_per_second"].get<double>(), result["train_tokens_per_second"].get<double>(),
      ms["forward"].get<double>(), ms["backward"].get<double>(), ms["optimizer"].get<double>(),
      ms["communication"].get<double>(), ms["upload"].get<double>(),
      result["inference_sequences_per_second"].get<double>(), result["peak_rss_mib"].get<double>(),
      device_line);
}

void register_bench_verb(CLI::App& app, GlobalOptions& options) {
  auto args = std::make_shared<BenchArguments>();
  auto* verb = app.add_subcommand("bench", "measure training and inference throughput of a recipe");
  add_recipe_arguments(*verb, args->recipe);
  verb->add_option("--steps", args->steps, "timed steps (with --inference: timed requests per row)")
      ->check(CLI::Range(1, 100000));
  verb->add_option("--warmup", args->warmup, "untimed steps first")->check(CLI::Range(0, 1000));
  verb->add_flag("--json", args->json, "print JSON");
  CLI::Option* inference =
      verb->add_flag("--inference", args->inference, "measure inference throughput and latency instead");
  add_inference_bench_options(*verb, inference, args->inference_args);
  add_plugin_flags(*verb, options);
  verb->callback([&options, args] {
    if (args->inference)
      run_inference_bench(options, args->recipe, args->inference_args, args->steps, args->warmup, args->json);
    else
      bench(options, *args);
  });
}

const VerbRegistration registration(&register_bench_verb);

}  // namespace
}  // namespace loom::cli
