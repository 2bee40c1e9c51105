// `loom bench RECIPE [--steps N] [--warmup W] [--profile] [--json]`: steady-state training and inference
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
//
// Two training loops run. The first times each phase and so waits for the backend at the end of
// every phase (each phase's time includes the device work it queued): it gives `ms_per_step`.
// With --profile the backend times each of its ops in that loop (OpProfiler,
// loom/sdk/ops/op_profiler.hpp: CUDA events on backend/cuda, wall time on the CPU backends), read
// once at the end of each step, and bench reports time, calls and share of the step per op family
// (`profile`; eval/op_profile_summary.hpp). The second calls train_step() exactly as `loom run`
// does, with no wait but the step's own and no per-op timing, and gives the throughput
// (`train_sequences_per_second`, tokens/s, TFLOP/s) and, on a backend that counts them
// (TransferCounter), `syncs_per_step`: the most times one of its steps made the host wait for the
// backend. Its batches come through the dataset, as in a run.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.hpp"
#include "eval/op_profile_summary.hpp"
#include "inference_bench.hpp"
#include "loom/sdk/ops/device_description.hpp"
#include "loom/sdk/ops/op_profiler.hpp"
#include "model/host_mirror.hpp"
#include "model/model_setup.hpp"
#include "model/training_flops.hpp"
#include "recipe/run_settings.hpp"
#include "train/backend_update.hpp"
#include "train/gradient_sync.hpp"
#include "train/run_components.hpp"
#include "train/instance_trace.hpp"
#include "train/loss_sums.hpp"
#include "train/train_step.hpp"
#include "train/trainer.hpp"

namespace loom::cli {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// What the loop of whole steps measured.
struct StepLoopResult {
  double seconds = 0;       ///< wall time of the timed steps, ending with the backend idle
  uint64_t sequences = 0;   ///< rows trained on in the timed steps
  uint64_t tokens = 0;      ///< non-padding tokens among them
  int64_t max_host_waits = -1;  ///< the most host waits of one timed step; -1 when not counted
};

/// `warmup` then `steps` calls of train_step() (numbered from `first_step`), as `loom run` makes
/// them; the backend is synchronised once, after the last.
StepLoopResult time_train_steps(const host::StepParts& parts, loom::Backend& backend, uint64_t first_step,
                                int warmup, int steps) {
  StepLoopResult r;
  Clock::time_point start = Clock::now();
  for (int i = 0; i < warmup + steps; ++i) {
    if (i == warmup) {
      backend.synchronize();
      r = StepLoopResult{};
      start = Clock::now();
    }
    const host::StepOutcome outcome = host::train_step(parts, first_step + static_cast<uint64_t>(i), false);
    r.sequences += outcome.losses.rows;
    r.tokens += outcome.losses.tokens;
    r.max_host_waits = std::max(r.max_host_waits, outcome.host_waits);
  }
  backend.synchronize();
  r.seconds = since(start);
  return r;
}

struct BenchArguments {
  RecipeArguments recipe;
  int steps = 20;
  int warmup = 3;
  bool json = false;
  bool profile = false;
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
  // Both training loops' steps (the second continues the first's count).
  c.schedule.call([&](loom::Schedule& s) { s.setup(2 * static_cast<uint64_t>(a.steps + a.warmup)); });
  model.initialize(settings.seed);
  loom::BatchShape batch_shape{};
  const host::HostBatch batch =
      c.data.call([&](loom::Dataset& d) { return run.buffers->next(d, batch_shape); });
  uint64_t predictions = 0;
  if (batch.mlm_labels != nullptr)
    for (int64_t i = 0; i < batch.batch * batch.seq; ++i) predictions += batch.mlm_labels[i] >= 0;

  const int world = c.communicator.call([](loom::Communicator& m) { return m.size(); });
  const int rank = c.communicator.call([](loom::Communicator& m) { return m.rank(); });
  // As `loom run`: the step ends on the backend when everything offers it, else on host copies of
  // weights and gradients when the backend's memory is a device's.
  const std::unique_ptr<host::BackendUpdate> on_backend =
      host::BackendUpdate::attach_if_offered(c, model, world);
  host::HostMirror master(backend, model.master()), grads(backend, model.grads());
  if (!on_backend || world > 1) master.pull();  // as loom run: host views only where they are read
  host::GradientSync sync(c.communicator, c.communicator2, world > 1 ? grads.data() : nullptr, total,
                          host::gradient_sync_options(settings.allreduce_post_accumulation,
                                                      settings.allreduce_bucket_mb, grads.copies()));
  const bool overlap = world > 1 && sync.overlapping();
  loom::OpProfiler* const profiler = a.profile ? c.backend.find<loom::OpProfiler>() : nullptr;
  if (a.profile && profiler == nullptr && rank == 0)
    std::cerr << c.backend.name() << " does not time its ops (it does not offer "
              << loom::OpProfiler::kInterfaceName << "): --profile reports the phases only\n";
  host::OpProfileSummary profile;
  std::vector<loom::OpFamilyTime> op_times(loom::kOpFamilyCount);
  if (profiler != nullptr) profiler->set_op_profiling(true);
  double t_forward = 0, t_backward = 0, t_optimizer = 0, t_comm = 0, t_upload = 0;
  const double base_lr = c.optimizer.call([](loom::Optimizer& o) { return o.base_lr(); });
  for (int step = 0; step < a.warmup + a.steps; ++step) {
    if (step == a.warmup) t_forward = t_backward = t_optimizer = t_comm = t_upload = 0;
    auto t = Clock::now();
    // Each phase ends when the backend has done the work it queued.
    const auto end_phase = [&](double& phase) {
      backend.synchronize();
      phase += since(t);
      t = Clock::now();
    };
    model.zero_grads();
    const loom::BatchView& view = staging.upload(batch);
    end_phase(t_upload);
    model.forward(view, host::StepSettings{true, host::dropout_key(settings.seed, step, 0)});
    (void)model.loss();
    end_phase(t_forward);
    if (overlap)
      model.backward(1.0f, [&](size_t first) { sync.grads_final_from(first); });
    else
      model.backward(1.0f);
    end_phase(t_backward);
    if (!on_backend) grads.pull();
    if (world > 1) sync.finish();
    end_phase(t_comm);
    if (on_backend) {  // the gradient pass, the flag read, the update and the cast
      if (on_backend->decide().apply) on_backend->update({base_lr, 1.0});
    } else {
      c.optimizer.call([&](loom::Optimizer& o) { o.step(master.data(), grads.data(), {base_lr, 1.0}); });
      master.push();
      model.refresh_compute_weights();
    }
    end_phase(t_optimizer);
    if (profiler != nullptr) {  // the step's ops, after its last wait (warm-up steps' discarded)
      profiler->take_op_profile(op_times.data(), op_times.size());
      if (step >= a.warmup) profile.add_step(op_times.data(), op_times.size());
    }
  }
  if (profiler != nullptr) profiler->set_op_profiling(false);
  const double phase_seconds = t_upload + t_forward + t_backward + t_comm + t_optimizer;
  host::LossSums loss_sums(backend);
  host::InstanceTrace trace(rank);
  const uint64_t k = host::read_run_settings(recipe).grad_accumulation;
  const host::StepParts parts{c, model, staging, *run.buffers, master, grads, on_backend.get(), sync, loss_sums,
                              c.backend.find<loom::TransferCounter>(),
                              host::RankGroup{c.communicator, c.communicator2, rank, world}, settings.seed, k,
                              trace};
  const StepLoopResult loop =
      time_train_steps(parts, backend, static_cast<uint64_t>(a.warmup + a.steps), a.warmup, a.steps);
  const double train_seconds = loop.seconds;
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
  const double steps_per_second = n / train_seconds;
  const double tflops = steps_per_second * flops_per_step * static_cast<double>(k) / 1e12;
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
      {"grad_accumulation", k},
      {"global_train_sequences_per_second", world * static_cast<double>(loop.sequences) / train_seconds},
      {"train_sequences_per_second", static_cast<double>(loop.sequences) / train_seconds},
      {"train_tokens_per_second", static_cast<double>(loop.tokens) / train_seconds},
      {"inference_sequences_per_second", n * static_cast<double>(batch.batch) / t_inference},
      {"ms_per_step",
       {{"upload", 1e3 * t_upload / n},
        {"forward", 1e3 * t_forward / n},
        {"backward", 1e3 * t_backward / n},
        {"communication", 1e3 * t_comm / n},
        {"optimizer", 1e3 * t_optimizer / n},
        {"total", 1e3 * phase_seconds / n},
        {"step", 1e3 * train_seconds / n}}},
      {"train_model_tflops_per_second", tflops},
      {"peak_rss_mib", static_cast<double>(usage.ru_maxrss) / 1024.0}};
  if (loop.max_host_waits >= 0) result["syncs_per_step"] = loop.max_host_waits;
  const double phase_step_ms = 1e3 * phase_seconds / n;
  if (profiler != nullptr) result["profile"] = profile.to_json(phase_step_ms);
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
  const std::string profile_lines =
      profiler == nullptr
          ? ""
          : fmt::format("  profile    the backend's ops by family, in a step of {:.2f} ms (the phases):\n{}",
                        phase_step_ms, profile.table(phase_step_ms, "    "));
  const std::string syncs =
      loop.max_host_waits >= 0 ? fmt::format(", at most {} host waits per step", loop.max_host_waits) : "";
  std::cout << fmt::format(
      "{}: batch {} × seq {}, {} parameters, {} threads\n"
      "  training   {:.1f} seq/s, {:.0f} tokens/s, {:.1f} ms/step{}\n"
      "  phases     ms/step: forward {:.1f}, backward {:.1f}, optimizer {:.1f}, communication {:.2f}, "
      "upload {:.2f}\n{}"
      "  inference  {:.1f} seq/s\n  peak RSS   {:.0f} MiB\n{}",
      a.recipe.recipe, batch.batch, batch.seq, result["parameters"].get<uint64_t>(), backend.threads(),
      result["train_sequences_per_second"].get<double>(), result["train_tokens_per_second"].get<double>(),
      ms["step"].get<double>(), syncs, ms["forward"].get<double>(), ms["backward"].get<double>(),
      ms["optimizer"].get<double>(), ms["communication"].get<double>(), ms["upload"].get<double>(),
      profile_lines, result["inference_sequences_per_second"].get<double>(),
      result["peak_rss_mib"].get<double>(),
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
  CLI::Option* profile =
      verb->add_flag("--profile", args->profile,
                     "time the backend's ops by op family (GEMM, attention, optimizer, ...) per step");
  CLI::Option* inference =
      verb->add_flag("--inference", args->inference, "measure inference throughput and latency instead");
  inference->excludes(profile);
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
