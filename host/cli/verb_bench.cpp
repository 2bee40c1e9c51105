// `loom bench RECIPE [--steps N] [--warmup W] [--profile] [--memory] [--json]`: steady-state training and
// inference throughput of the recipe's model, data and precision (no checkpoints, no metrics files):
// sequences/s, tokens/s, model TFLOP/s (training_flops.hpp), milliseconds per step split into
// data, upload, forward, backward, communication and optimizer, the process's peak RSS, and on a
// backend that describes its device (DeviceDescription) the device (name, SMs or threads, share
// of its dense bf16 peak, peak device memory). Every step is train_step(), the function `loom run`
// calls, through the same StepRunner (step_runner.hpp): the recipe's schedule, loss scale,
// gradient accumulation and data, batches read and masked by the dataset as in a run. Under
// mpirun with communicator/mpi every rank reads the same batches and gradients are averaged as
// `loom run` does (overlapped buckets, or once with train.allreduce_post_accumulation);
// "communication" is then the time a step waited for gradients that backward did not hide. The
// step ends as in `loom run` (backend_update.hpp): on the backend when it offers the optimizer
// passes ("optimizer" then includes the non-finite flag read), else, on a backend whose memory the
// host cannot address, on host copies (host_mirror.hpp), where "communication" includes the
// gradient download and "optimizer" the weight upload. Rank 0 prints. With --inference it
// measures inference requests instead: sequences/s and latency percentiles per batch size,
// sequence length and precision (inference_bench.cpp).
//
// Two kinds of training step run, alternating in blocks of a few steps so that both see the same
// machine. Timed steps time each phase (StepPhaseTimer, step_phases.hpp): each phase ends when the
// backend has done the work it queued, and the phases partition the step, so they add up to its
// wall time (`ms_per_step`). With --profile the backend also times each of its ops in those steps
// (OpProfiler, loom/sdk/ops/op_profiler.hpp: CUDA events on backend/cuda, wall time on the CPU
// backends), read once at the end of each step, and bench reports time, calls and share of the
// step per op family (`profile`; eval/op_profile_summary.hpp). Untimed steps call train_step()
// exactly as `loom run` does, with no wait but the step's own and no per-op timing, and give the
// throughput (`train_sequences_per_second`, tokens/s, TFLOP/s, `ms_per_step.step`) and, on a
// backend that counts them (TransferCounter), `syncs_per_step`: the most times one of its steps
// made the host wait for the backend.
//
// With --layouts the untimed blocks run twice over, each block once unpadded (the model's layers
// that accept packed tokens on real tokens only) and once padded, on the same data stream, and
// bench reports both layouts' real tokens per second, the padding share of their batches and the
// speed-up beside its bound 1 / (1 − padding share); the inference requests (one batch of the
// recipe's data, forward without dropout) are timed in both layouts too (`layouts.inference`).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.hpp"
#include "eval/op_profile_summary.hpp"
#include "inference_bench.hpp"
#include "loom/sdk/ops/device_description.hpp"
#include "loom/sdk/ops/memory_usage.hpp"
#include "loom/sdk/ops/op_profiler.hpp"
#include "model/host_mirror.hpp"
#include "model/model_setup.hpp"
#include "model/training_flops.hpp"
#include "recipe/run_settings.hpp"
#include "train/backend_update.hpp"
#include "train/memory_account.hpp"
#include "train/run_components.hpp"
#include "train/step_phases.hpp"
#include "train/step_runner.hpp"

namespace loom::cli {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// What the training steps measured.
struct TrainingTimes {
  explicit TrainingTimes(loom::Backend& backend) : phases(backend) {}
  host::StepPhaseTimer phases;     ///< the timed steps, phase by phase
  host::OpProfileSummary profile;  ///< their ops by family (--profile on a backend that times ops)
  double untimed_seconds = 0;   ///< wall time of the untimed steps, each block ending with the backend idle
  uint64_t sequences = 0;       ///< rows trained on in the untimed steps
  uint64_t tokens = 0;          ///< non-padding tokens among them
  uint64_t slots = 0;           ///< rows × columns of their padded batches
  int64_t max_host_waits = -1;  ///< the most host waits of one untimed step; -1 when not counted
};

/// Untimed steps run in blocks of this many between two synchronisations: few enough that a
/// block and the timed steps beside it see the same machine, enough that the one wait per block
/// costs a GPU little of the overlap between consecutive steps.
constexpr int kUntimedBlock = 5;

/// `warmup` + `steps` steps timed phase by phase (and per op with `profiler`), and as many untimed
/// ones, called as `loom run` calls them. The two kinds alternate in blocks, so that a machine whose
/// speed drifts (other processes, clocks) affects both alike; warm-up steps of both come first.
TrainingTimes time_training(const host::StepRunner& runner, loom::Backend& backend,
                            loom::OpProfiler* profiler, int warmup, int steps) {
  TrainingTimes r(backend);
  std::vector<loom::OpFamilyTime> op_times(loom::kOpFamilyCount);
  uint64_t step = 0;
  const auto timed = [&](int count, bool measured) {
    if (profiler != nullptr) profiler->set_op_profiling(true);
    for (int i = 0; i < count; ++i) {
      (void)runner.run(step++, false, &r.phases);
      if (profiler != nullptr) {  // the step's ops, after its last wait
        profiler->take_op_profile(op_times.data(), op_times.size());
        if (measured) r.profile.add_step(op_times.data(), op_times.size());
      }
    }
    if (profiler != nullptr) profiler->set_op_profiling(false);
  };
  const auto untimed = [&](int count) {
    backend.synchronize();
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < count; ++i) {
      const host::StepOutcome outcome = runner.run(step++, false);
      r.sequences += outcome.losses.rows;
      r.tokens += outcome.losses.tokens;
      r.slots += outcome.losses.slots;
      r.max_host_waits = std::max(r.max_host_waits, outcome.host_waits);
    }
    backend.synchronize();
    return since(start);
  };
  timed(warmup, false);
  (void)untimed(warmup);
  r.phases.reset();
  r.sequences = r.tokens = r.slots = 0;
  r.max_host_waits = -1;
  for (int done = 0; done < steps; done += kUntimedBlock) {
    const int count = std::min(kUntimedBlock, steps - done);
    timed(count, true);
    r.untimed_seconds += untimed(count);
  }
  return r;
}

/// One layout's untimed steps in a --layouts run.
struct LayoutTimes {
  double seconds = 0;
  uint64_t sequences = 0, tokens = 0, slots = 0;  // rows, real tokens, rows × seq
  nlohmann::json to_json() const {
    return {{"seconds", seconds},
            {"sequences_per_second", static_cast<double>(sequences) / seconds},
            {"real_tokens_per_second", static_cast<double>(tokens) / seconds},
            {"padding_share", 1.0 - static_cast<double>(tokens) / static_cast<double>(slots)}};
  }
};

/// `steps` untimed steps of each layout after `warmup` of each, in alternating blocks.
std::pair<LayoutTimes, LayoutTimes> time_layouts(const host::StepRunner& runner, loom::Backend& backend,
                                                 host::Model& model, int warmup, int steps) {
  LayoutTimes unpadded, padded;
  const bool recipe_layout = model.runs_unpadded();
  uint64_t step = 0;
  const auto block = [&](bool packs, int count, LayoutTimes* into) {
    model.set_unpadded(packs);
    backend.synchronize();
    const Clock::time_point start = Clock::now();
    LayoutTimes t;
    for (int i = 0; i < count; ++i) {
      const host::StepOutcome outcome = runner.run(step++, false);
      t.sequences += outcome.losses.rows;
      t.tokens += outcome.losses.tokens;
      t.slots += outcome.losses.slots;
    }
    backend.synchronize();
    t.seconds = since(start);
    if (into == nullptr) return;
    into->seconds += t.seconds;
    into->sequences += t.sequences;
    into->tokens += t.tokens;
    into->slots += t.slots;
  };
  block(true, warmup, nullptr);
  block(false, warmup, nullptr);
  for (int done = 0; done < steps; done += kUntimedBlock) {
    const int count = std::min(kUntimedBlock, steps - done);
    block(true, count, &unpadded);
    block(false, count, &padded);
  }
  model.set_unpadded(recipe_layout);
  return {unpadded, padded};
}

/// `count` timed inference requests of `batch` (upload, forward without dropout, the loss read
/// back) after `warmup` untimed ones, in the model's current layout.
LayoutTimes time_inference_requests(host::Model& model, host::BatchStaging& staging, loom::Backend& backend,
                                    const host::HostBatch& batch, int warmup, int count) {
  Clock::time_point start = Clock::now();
  for (int i = 0; i < warmup + count; ++i) {
    if (i == warmup) {
      backend.synchronize();
      start = Clock::now();
    }
    const loom::BatchView& view = staging.upload(batch);
    model.forward(view, host::StepSettings{false, 0}, staging.packed());
    (void)model.loss();
  }
  backend.synchronize();
  LayoutTimes t;
  t.seconds = since(start);
  const uint64_t slots = static_cast<uint64_t>(batch.batch * batch.seq);
  uint64_t real = slots;
  if (batch.attention_mask != nullptr) {
    real = 0;
    for (uint64_t i = 0; i < slots; ++i) real += batch.attention_mask[i] != 0;
  }
  t.sequences = static_cast<uint64_t>(count) * static_cast<uint64_t>(batch.batch);
  t.tokens = static_cast<uint64_t>(count) * real;
  t.slots = static_cast<uint64_t>(count) * slots;
  return t;
}

/// `ms_per_step`: each phase of the timed loop, their sum ("total") and the untimed loop's step
/// ("step"), in milliseconds per step over `steps` steps.
nlohmann::json phase_milliseconds(const host::StepPhaseTimer& phases, double steps, double train_seconds) {
  nlohmann::json ms = nlohmann::json::object();
  for (size_t i = 0; i < host::kStepPhaseCount; ++i) {
    const auto phase = static_cast<host::StepPhase>(i);
    ms[host::step_phase_name(phase)] = 1e3 * phases.seconds(phase) / steps;
  }
  ms["total"] = 1e3 * phases.total_seconds() / steps;
  ms["step"] = 1e3 * train_seconds / steps;
  return ms;
}

struct BenchArguments {
  RecipeArguments recipe;
  int steps = 20;
  int warmup = 3;
  bool json = false;
  bool profile = false;
  bool inference = false;
  bool memory = false;
  bool layouts = false;
  InferenceBenchArguments inference_args;
};

// `--memory`: the account of device memory alone, from the layouts (memory_account.hpp). The
// model's flat buffers are allocated (they are what the blocks bind to) but no activation arena,
// no batch and no optimizer state, and nothing is trained: it sizes a recipe whose activations
// would not fit this machine, for the backend and precision the recipe names.
void print_memory_account(const GlobalOptions& options, const BenchArguments& a) {
  auto [recipe, registry] = load_and_check(options, a.recipe);
  const host::RunSettings settings = host::read_run_settings(recipe);
  host::RunComponents c = host::create_run_components(recipe, *registry);
  const loom::DatasetSetup setup{0, 1, settings.seed, c.tokenizer ? c.tokenizer.get() : nullptr};
  c.data.call([&](loom::Dataset& d) { d.open(setup); });
  const loom::BatchLimits limits = c.data.call([](loom::Dataset& d) { return d.limits(); });
  const host::ModelSetup built =
      host::build_model(recipe, *registry, c.backend, *c.precision.get(), &limits, setup.tokenizer);
  const loom::ActivationShape shape = host::activation_shape_for(limits);
  const int world = c.communicator.call([](loom::Communicator& m) { return m.size(); });
  const int rank = c.communicator.call([](loom::Communicator& m) { return m.rank(); });
  const std::string host_path = host::BackendUpdate::host_path_reason(c, *c.backend.get(), world);
  const size_t state_tensors =
      host_path.empty() ? c.optimizer.call([](loom::Optimizer& o) { return o.num_state_tensors(); }) : 0;
  const host::MemoryAccount account =
      host::account_device_memory(*built.model, shape, state_tensors, host_path.empty());
  if (rank != 0) return;
  if (a.json) {
    nlohmann::json result{{"recipe", a.recipe.recipe},
                          {"batch", shape.batch},
                          {"seq", shape.seq},
                          {"max_masked", shape.max_masked},
                          {"parameters", built.model->parameters().parameter_count()},
                          {"optimizer_step", host_path.empty() ? "backend" : "host"},
                          {"device_memory", host::memory_account_json(account, nullptr)}};
    std::cout << result.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format(
      "{}: device memory by class for batches up to {} × {} ({} masked), {} parameters, "
      "optimizer step on the {}{}:\n{}",
      a.recipe.recipe, shape.batch, shape.seq, shape.max_masked, built.model->parameters().parameter_count(),
      host_path.empty() ? "backend" : "host", host_path.empty() ? "" : " (" + host_path + ")",
      host::memory_account_table(account, nullptr, "  "));
}

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
  // The timed and the untimed steps, numbered in the order they run.
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
  const host::StepRunner steps(c, settings,
                               host::StepModel{.model = model,
                                               .staging = staging,
                                               .buffers = *run.buffers,
                                               .master = master,
                                               .grads = grads,
                                               .backend_update = on_backend.get()},
                               host::RankGroup{c.communicator, rank, world});
  const uint64_t k = settings.grad_accumulation;
  loom::OpProfiler* const profiler = a.profile ? c.backend.find<loom::OpProfiler>() : nullptr;
  if (a.profile && profiler == nullptr && rank == 0)
    std::cerr << c.backend.name() << " does not time its ops (it does not offer "
              << loom::OpProfiler::kInterfaceName << "): --profile reports the phases only\n";
  const TrainingTimes times = time_training(steps, backend, profiler, a.warmup, a.steps);
  const double train_seconds = times.untimed_seconds;
  std::optional<std::pair<LayoutTimes, LayoutTimes>> layouts;
  if (a.layouts) layouts = time_layouts(steps, backend, model, a.warmup, a.steps);
  // Inference on a batch read now: the training steps have reused the host buffers since.
  loom::BatchShape inference_shape{};
  const auto held = steps.hold_data();  // the dataset is read ahead for training steps
  const host::HostBatch inference_batch =
      c.data.call([&](loom::Dataset& d) { return run.buffers->next(d, inference_shape); });
  const LayoutTimes inference = time_inference_requests(model, staging, backend, inference_batch, a.warmup, a.steps);
  // With --layouts the same batch's requests again, padded, then unpadded.
  std::optional<std::pair<LayoutTimes, LayoutTimes>> inference_layouts;
  if (a.layouts) {
    const bool recipe_layout = model.runs_unpadded();
    model.set_unpadded(false);
    const LayoutTimes padded = time_inference_requests(model, staging, backend, inference_batch, a.warmup, a.steps);
    model.set_unpadded(true);
    inference_layouts = {time_inference_requests(model, staging, backend, inference_batch, a.warmup, a.steps), padded};
    model.set_unpadded(recipe_layout);
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
      {"allreduce", world == 1            ? "none"
                    : steps.overlapping() ? "overlapped"
                                          : "post_accumulation"},
      {"grad_accumulation", k},
      {"global_train_sequences_per_second", world * static_cast<double>(times.sequences) / train_seconds},
      {"train_sequences_per_second", static_cast<double>(times.sequences) / train_seconds},
      {"train_tokens_per_second", static_cast<double>(times.tokens) / train_seconds},
      {"train_real_tokens_per_second", static_cast<double>(times.tokens) / train_seconds},
      {"padding_share", 1.0 - static_cast<double>(times.tokens) / static_cast<double>(times.slots)},
      {"unpadded", model.runs_unpadded()},
      {"inference_sequences_per_second", static_cast<double>(inference.sequences) / inference.seconds},
      {"ms_per_step", phase_milliseconds(times.phases, n, train_seconds)},
      {"train_model_tflops_per_second", tflops},
      {"peak_rss_mib", static_cast<double>(usage.ru_maxrss) / 1024.0}};
  if (times.max_host_waits >= 0) result["syncs_per_step"] = times.max_host_waits;
  std::string layout_line;
  if (layouts) {
    const nlohmann::json unpadded = layouts->first.to_json(), padded = layouts->second.to_json();
    const double speedup = unpadded["real_tokens_per_second"].get<double>() / padded["real_tokens_per_second"].get<double>();
    const double bound = 1.0 / (1.0 - padded["padding_share"].get<double>());
    result["layouts"] = {{"unpadded", unpadded}, {"padded", padded}, {"speedup", speedup}, {"bound", bound},
                         {"share_of_bound", speedup / bound}};
    const nlohmann::json inference_unpadded = inference_layouts->first.to_json(),
                         inference_padded = inference_layouts->second.to_json();
    result["layouts"]["inference"] = {
        {"unpadded", inference_unpadded},
        {"padded", inference_padded},
        {"speedup", inference_unpadded["real_tokens_per_second"].get<double>() /
                        inference_padded["real_tokens_per_second"].get<double>()}};
    layout_line = fmt::format(
        "  layouts    unpadded {:.0f} real tokens/s, padded {:.0f}: {:.2f}× (bound {:.2f}× at {:.1f}% padding; "
        "{:.0f}% of it)\n",
        unpadded["real_tokens_per_second"].get<double>(), padded["real_tokens_per_second"].get<double>(), speedup,
        bound, 100 * padded["padding_share"].get<double>(), 100 * speedup / bound);
    layout_line += fmt::format(
        "  layouts    inference unpadded {:.0f} real tokens/s, padded {:.0f}: {:.2f}× ({:.1f}% padding)\n",
        inference_unpadded["real_tokens_per_second"].get<double>(),
        inference_padded["real_tokens_per_second"].get<double>(),
        result["layouts"]["inference"]["speedup"].get<double>(), 100 * inference_padded["padding_share"].get<double>());
  }
  // Device memory by class, beside what the backend's allocator reports when it does.
  const host::MemoryAccount account = host::account_device_memory(
      model, model.reserved(),
      on_backend ? c.optimizer.call([](loom::Optimizer& o) { return o.num_state_tensors(); }) : 0,
      on_backend != nullptr);
  const loom::MemoryUsage* memory_usage = c.backend.find<loom::MemoryUsage>();
  const std::optional<loom::MemoryUsageBytes> memory =
      memory_usage ? std::optional(memory_usage->memory_usage()) : std::nullopt;
  result["device_memory"] = host::memory_account_json(account, memory ? &*memory : nullptr);
  const double phase_step_ms = 1e3 * times.phases.total_seconds() / n;
  if (profiler != nullptr) result["profile"] = times.profile.to_json(phase_step_ms);
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
                        phase_step_ms, times.profile.table(phase_step_ms, "    "));
  const std::string syncs =
      times.max_host_waits >= 0 ? fmt::format(", at most {} host waits per step", times.max_host_waits) : "";
  std::cout << fmt::format(
      "{}: batch {} × seq {}, {} parameters, {} threads\n"
      "  training   {:.1f} seq/s, {:.0f} real tokens/s ({:.1f}% padding, {}), {:.1f} ms/step{}\n{}"
      "  phases     ms/step: data {:.2f}, upload {:.2f}, forward {:.1f}, backward {:.1f}, communication "
      "{:.2f}, "
      "optimizer {:.1f}; {:.1f} in all\n{}"
      "  inference  {:.1f} seq/s\n  peak RSS   {:.0f} MiB\n{}"
      "  memory     device memory by class, for batches up to {} × {}:\n{}",
      a.recipe.recipe, batch.batch, batch.seq, result["parameters"].get<uint64_t>(), backend.threads(),
      result["train_sequences_per_second"].get<double>(), result["train_tokens_per_second"].get<double>(),
      100 * result["padding_share"].get<double>(), model.runs_unpadded() ? "unpadded" : "padded",
      ms["step"].get<double>(), syncs, layout_line, ms["data"].get<double>(), ms["upload"].get<double>(),
      ms["forward"].get<double>(), ms["backward"].get<double>(), ms["communication"].get<double>(),
      ms["optimizer"].get<double>(), ms["total"].get<double>(), profile_lines,
      result["inference_sequences_per_second"].get<double>(), result["peak_rss_mib"].get<double>(),
      device_line, model.reserved().batch, model.reserved().seq,
      host::memory_account_table(account, memory ? &*memory : nullptr, "    "));
}

void register_bench_verb(CLI::App& app, GlobalOptions& options) {
  auto args = std::make_shared<BenchArguments>();
  auto* verb = app.add_subcommand("bench", "measure training and inference throughput of a recipe");
  add_recipe_arguments(*verb, args->recipe);
  verb->add_option(
          "--steps", args->steps,
          "measured steps, as many timed by phase as untimed (with --inference: timed requests per row)")
      ->check(CLI::Range(1, 100000));
  verb->add_option("--warmup", args->warmup,
                   "unmeasured steps of each kind (with --inference: requests) first")
      ->check(CLI::Range(0, 1000));
  verb->add_flag("--json", args->json, "print JSON");
  CLI::Option* profile =
      verb->add_flag("--profile", args->profile,
                     "time the backend's ops by op family (GEMM, attention, optimizer, ...) per step");
  CLI::Option* inference =
      verb->add_flag("--inference", args->inference, "measure inference throughput and latency instead");
  inference->excludes(profile);
  CLI::Option* memory =
      verb->add_flag("--memory", args->memory,
                     "print the account of device memory by class from the model's layout, without training");
  memory->excludes(profile)->excludes(inference);
  verb->add_flag("--layouts", args->layouts,
                 "also time unpadded against padded steps, alternating on the same data (real tokens/s each)")
      ->excludes(inference)
      ->excludes(memory);
  add_inference_bench_options(*verb, inference, args->inference_args);
  add_plugin_flags(*verb, options);
  verb->callback([&options, args] {
    if (args->inference)
      run_inference_bench(options, args->recipe, args->inference_args, args->steps, args->warmup, args->json);
    else if (args->memory)
      print_memory_account(options, *args);
    else
      bench(options, *args);
  });
}

const VerbRegistration registration(&register_bench_verb);

}  // namespace
}  // namespace loom::cli
