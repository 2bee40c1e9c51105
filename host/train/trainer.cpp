// The training loop; see trainer.hpp for the run's contract and train_step.hpp for the step.
#include "train/trainer.hpp"

#include <chrono>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "checkpoint/checkpoint_store.hpp"
#include "control/stop_request.hpp"
#include "files/sha256.hpp"
#include "loom/sdk/version.hpp"
#include "model/model_setup.hpp"
#include "recipe/errors.hpp"
#include "recipe/run_settings.hpp"
#include "recipe/stream_address.hpp"
#include "train/backend_update.hpp"
#include "train/finite_state.hpp"
#include "train/launch_environment.hpp"
#include "train/log_window.hpp"
#include "train/run_checkpoint.hpp"
#include "train/run_reporter.hpp"
#include "train/step_runner.hpp"
#include "train/task_labels.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace loom::host {
namespace {

// Parameters that only a task head has: absent from a pre-training checkpoint used for init_from.
const std::vector<std::string> kHeadOnlyPrefixes = {"classifier.", "qa_outputs.", "cls.", "bert.pooler."};

}  // namespace

// Everything one run holds, in construction order (destroyed in reverse).
struct Trainer::State {
  RunSettings settings;
  TrainOptions options;
  std::string resolved_recipe;
  RunComponents components;
  int rank = 0, world = 1;
  ModelSetup setup;
  // The end of each step on the backend when everything offers it, else null (backend_update.hpp).
  std::unique_ptr<BackendUpdate> backend_update;
  // What host code reads and writes of the flat master weights and gradients (host_mirror.hpp).
  std::unique_ptr<HostMirror> master_host, grads_host;
  std::unique_ptr<BatchStaging> staging;
  std::unique_ptr<HostBatchBuffers> buffers, eval_buffers;
  std::unique_ptr<CheckpointStore> store;
  uint64_t step = 0;
  fs::path resumed_from;  // the checkpoint this run continues, empty for a fresh run
  RunControl control;
  // The steps while run() takes them: the dataset is read ahead, so its position and any other
  // reading go through them (batch_prefetcher.hpp).
  const StepRunner* steps = nullptr;

  RankGroup group() const { return {components.communicator, rank, world}; }
  Model& model() { return *setup.model; }
  loom::Backend& backend() { return *components.backend.get(); }
  // The optimizer's state in backend memory on the backend path (checkpoints copy it), else none.
  std::optional<BackendOptimizerState> optimizer_on_backend() const {
    if (!backend_update) return std::nullopt;
    return BackendOptimizerState{backend_update->optimizer(), *components.backend.get()};
  }

  void open_datasets_and_build_model(const Recipe& recipe, const PluginRegistry& registry);
  StepModel step_model() {
    return {.model = model(),
            .staging = *staging,
            .buffers = *buffers,
            .master = *master_host,
            .grads = *grads_host,
            .backend_update = backend_update.get()};
  }
  void resume_or_initialise();
  void save_checkpoint(RunReporter& reporter, TrainSummary& summary);
  void evaluate(RunReporter& reporter, TrainSummary& summary);
  RunControl::Boundary step_boundary(RunReporter& reporter, TrainSummary& summary);
};

Trainer::Trainer(const Recipe& recipe, const PluginRegistry& registry, TrainOptions options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.options = std::move(options);
  s.settings = read_run_settings(recipe);
  if (!s.options.listen.empty()) {
    const std::string problem = metrics_listen_problem(s.options.listen, s.settings.metrics_token);
    if (!problem.empty()) throw RecipeError({"--listen " + s.options.listen + ": " + problem});
    s.settings.metrics_listen = s.options.listen;
  }
  s.resolved_recipe = recipe.to_toml();
  s.components = create_run_components(recipe, registry);
  RunComponents& c = s.components;
  s.rank = c.communicator.call([](loom::Communicator& m) { return m.rank(); });
  s.world = c.communicator.call([](loom::Communicator& m) { return m.size(); });
  check_launch_matches(detect_launch_environment(), c.communicator.name(), s.rank, s.world);
  if (s.rank != 0) spdlog::set_level(std::max(spdlog::get_level(), spdlog::level::warn));

  s.open_datasets_and_build_model(recipe, registry);
  s.resume_or_initialise();
  s.master_host = std::make_unique<HostMirror>(s.backend(), s.model().master());
  s.grads_host = std::make_unique<HostMirror>(s.backend(), s.model().grads());
  if (s.master_host->copies() && !s.backend_update)
    spdlog::info(
        "backend memory is not host-addressable: the optimizer, precision checks and "
        "gradient all-reduce work on host copies (one gradient download, one weight upload "
        "per step)");
  // The host view of the weights is needed by the host path's optimizer and by the broadcast;
  // one process on the backend path never reads it (checkpoints take their own copy).
  if (!s.backend_update || s.world > 1) s.master_host->pull();
  if (s.world > 1) {
    // One set of starting weights whatever each rank initialised or loaded, verified by checksum.
    broadcast_parameters(s.group(), s.master_host->data(), s.master_host->size());
    s.master_host->push();
    s.model().refresh_compute_weights();
  }
}

Trainer::~Trainer() = default;

bool Trainer::leader() const {
  return state_->rank == 0;
}

RunControl& Trainer::control() {
  return state_->control;
}

TrainSummary Trainer::run() {
  State& s = *state_;
  RunComponents& c = s.components;
  const RunSettings& cfg = s.settings;
  TrainSummary summary;
  summary.run_directory = cfg.run_directory();
  RunReporter reporter(s.rank == 0, cfg, s.options, s.resolved_recipe, s.world, s.step, s.resumed_from,
                       s.control);
  install_stop_handlers();

  StepRunner steps(c, cfg, s.step_model(), s.group());
  s.steps = &steps;
  struct Forget {
    const StepRunner*& steps;
    ~Forget() { steps = nullptr; }
  } forget{s.steps};

  LogWindow window;
  const auto loop_start = Clock::now();
  const uint64_t first_step = s.step;
  double grad_norm = 0;  // of the last applied update
  bool stop_commanded = false;
  while (s.step < cfg.steps && !any_rank(s.group(), stop_requested()) && !stop_commanded) {
    const bool log_step = (s.step + 1) % cfg.log_every == 0 || s.step + 1 == cfg.steps;
    const StepOutcome outcome = steps.run(s.step, log_step);
    ++s.step;
    window.add(outcome);
    if (outcome.grad_norm) grad_norm = *outcome.grad_norm;
    if (log_step) {
      const uint64_t skipped =
          c.precision.call([](loom::Precision& policy) { return policy.skipped_steps(); });
      const nlohmann::json record =
          window.close(s.group(), s.step, outcome, steps.loss_sums().take(), skipped, grad_norm);
      const double per_step = std::chrono::duration<double>(Clock::now() - loop_start).count() /
                              static_cast<double>(s.step - first_step);
      reporter.train(record, per_step * static_cast<double>(cfg.steps - s.step));
      summary.final_loss = record["loss"];
    }
    // Checkpoint before evaluation: a failing evaluation must not cost the step's weights.
    if (cfg.checkpoint_every > 0 && s.step % cfg.checkpoint_every == 0 && s.step < cfg.steps)
      s.save_checkpoint(reporter, summary);
    if (cfg.eval_every > 0 && s.step % cfg.eval_every == 0 && s.step < cfg.steps)
      s.evaluate(reporter, summary);
    stop_commanded = s.step_boundary(reporter, summary).stop;
  }
  summary.stopped_early = s.step < cfg.steps;
  summary.steps = s.step;
  summary.seconds = std::chrono::duration<double>(Clock::now() - loop_start).count();
  // The final checkpoint first: a bad row in the evaluation file must not cost the trained weights.
  s.save_checkpoint(reporter, summary);
  if (!summary.stopped_early) {
    try {
      s.evaluate(reporter, summary);
    } catch (const std::exception&) {
      if (s.rank != 0) throw;
      const std::string saved = summary.last_checkpoint.string();
      rethrow_with_context("", fmt::format("; the trained weights are saved in {}: once the evaluation data "
                                           "is fixed, evaluate them with loom eval RECIPE --checkpoint {}",
                                           saved, saved));
    }
  }
  s.control.acknowledge(RunCommand::stop, s.step, {{"checkpoint", summary.last_checkpoint.string()}});
  reporter.end(summary);
  if (s.rank == 0 && s.options.console && summary.stopped_early)
    std::cerr << "stopped at step " << s.step << "; checkpoint " << summary.last_checkpoint.string() << "\n";
  return summary;
}

void Trainer::State::open_datasets_and_build_model(const Recipe& recipe, const PluginRegistry& registry) {
  RunComponents& c = components;
  const loom::DatasetSetup data_setup{rank, world, settings.seed, c.tokenizer ? c.tokenizer.get() : nullptr};
  // Every rank evaluates the whole evaluation set (same numbers everywhere; rank 0 records them).
  const loom::DatasetSetup eval_setup{0, 1, settings.seed, data_setup.tokenizer};
  c.data.call([&](loom::Dataset& d) { d.open(data_setup); });
  const loom::BatchLimits limits = c.data.call([](loom::Dataset& d) { return d.limits(); });
  loom::ActivationShape shape = activation_shape_for(limits);
  buffers = std::make_unique<HostBatchBuffers>(limits);
  if (c.eval_data) {
    // One label map per task: the evaluation split numbers its classes as the training split does.
    const TaskLabels task_labels = dataset_task_labels(c.data, "the training split [data]");
    hand_task_labels(c.eval_data, task_labels);
    c.eval_data.call([&](loom::Dataset& d) { d.open(eval_setup); });
    if (limits.task == loom::BatchTask::classification)
      check_split_labels(c.eval_data, "eval_data", task_labels, limits.num_labels);
    const loom::BatchLimits eval_limits = c.eval_data.call([](loom::Dataset& d) { return d.limits(); });
    const loom::ActivationShape eval_shape = activation_shape_for(eval_limits);
    shape = {std::max(shape.batch, eval_shape.batch), std::max(shape.seq, eval_shape.seq),
             std::max(shape.max_masked, eval_shape.max_masked)};
    eval_buffers = std::make_unique<HostBatchBuffers>(eval_limits);
  }

  check_sequence_length(recipe, "data", limits);
  if (eval_buffers) check_sequence_length(recipe, "eval_data", eval_buffers->limits());
  setup = build_model(recipe, registry, c.backend, *c.precision.get(), &limits, data_setup.tokenizer);
  if (limits.task == loom::BatchTask::classification) {
    // Hugging Face's label maps, so `loom predict` and BertForSequenceClassification name classes.
    nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
    for (int32_t i = 0; i < limits.num_labels; ++i) {
      const char* name = c.data.call([&](loom::Dataset& d) { return d.label_name(i); });
      const std::string label = name != nullptr ? name : "LABEL_" + std::to_string(i);
      id2label[std::to_string(i)] = label;
      label2id[label] = i;
    }
    setup.bert_config.extra["id2label"] = id2label;
    setup.bert_config.extra["label2id"] = label2id;
    // One output is regression (MSE); Hugging Face infers it from num_labels = 1 and saves it so.
    if (limits.num_labels == 1) setup.bert_config.extra["problem_type"] = "regression";
    setup.bert_config.extra["architectures"] = nlohmann::json::array({"BertForSequenceClassification"});
  }
  if (limits.task == loom::BatchTask::span_extraction)  // what Hugging Face loads for a span head
    setup.bert_config.extra["architectures"] = nlohmann::json::array({"BertForQuestionAnswering"});
  // A head that names its Hugging Face class (every head since SDK 0.4) overrides the guesses above.
  if (const std::string architecture = model().architecture(); !architecture.empty())
    setup.bert_config.extra["architectures"] = nlohmann::json::array({architecture});
  model().reserve(shape);
  staging = std::make_unique<BatchStaging>(backend(), shape, setup.model_config.pad_token_id);

  std::vector<loom::ParameterSegment> segments;
  try {
    segments = model().parameters().segments(settings.freeze);
  } catch (const std::invalid_argument& e) {
    throw RecipeError({"[train] freeze: " + std::string(e.what())});
  }
  if (!settings.freeze.empty())
    std::cerr << "[train] freeze: " << model().parameters().entries().size() - segments.size() << " of "
              << model().parameters().entries().size() << " parameters left as they are\n";
  c.optimizer.call([&](loom::Optimizer& o) {
    o.setup(segments.data(), segments.size(), model().parameters().total_elements());
  });
  backend_update = BackendUpdate::attach_if_offered(c, model(), world);  // before any state is restored
  c.schedule.call([&](loom::Schedule& s) { s.setup(settings.steps); });
}

void Trainer::State::resume_or_initialise() {
  RunComponents& c = components;
  model().initialize(settings.seed);
  store =
      std::make_unique<CheckpointStore>(settings.run_directory() / "checkpoints", settings.checkpoint_keep);
  // The caller owns the run directory (RunDirectoryLock), so no other process is writing these.
  if (rank == 0)
    for (const fs::path& leftover : store->remove_partial())
      spdlog::warn("removed {}: a checkpoint that a killed run left half-written", leftover.string());

  std::optional<fs::path> resume_from;
  if (!options.resume.empty())
    resume_from = store->resolve(options.resume);
  else if (!store->complete().empty())
    throw std::runtime_error(fmt::format(
        "{} already holds checkpoints: pass --resume auto to continue that run, or choose another run.name",
        store->directory().string()));

  if (resume_from) {
    load_model_weights(model(), *resume_from, {});
    const std::optional<BackendOptimizerState> on_backend = optimizer_on_backend();
    c.optimizer.call([&](loom::Optimizer& o) {
      load_optimizer_state(o, model().parameters(), *resume_from, on_backend ? &*on_backend : nullptr);
    });
    const RunState saved = read_run_state(*resume_from);
    if (saved.seed != settings.seed)
      spdlog::warn("resuming with seed {} from a checkpoint written with seed {}", settings.seed, saved.seed);
    if (!saved.recipe_sha256.empty() &&
        saved.recipe_sha256 != sha256_hex(resolved_recipe.data(), resolved_recipe.size()))
      spdlog::warn("the recipe differs from the one {} was written with", resume_from->string());
    c.optimizer.call([&](loom::Optimizer& o) { o.set_successful_steps(saved.successful_steps); });
    c.precision.call([&](loom::Precision& policy) { policy.restore_state(saved.scaler); });
    c.data.call([&](loom::Dataset& d) { d.seek(saved.cursor); });
    step = saved.step;
    resumed_from = *resume_from;
    spdlog::info("resumed from {} at step {}", resume_from->string(), step);
  } else if (!settings.init_from.empty()) {
    CheckpointLoadOptions load{true, kHeadOnlyPrefixes};
    const CheckpointLoadReport report = load_model_weights(model(), settings.init_from, load);
    spdlog::info("init_from {}:\n{}", settings.init_from, report.summary());
    // Always shown (even with --quiet): a silently half-loaded model is the classic mistake.
    if (rank == 0)
      std::cerr << "init_from " << settings.init_from << ": " << report.loaded.size()
                << " parameters loaded, " << report.missing.size() << " initialised fresh (missing), "
                << report.unexpected.size() << " unused (unexpected)\n";
  }
}

void Trainer::State::save_checkpoint(RunReporter& reporter, TrainSummary& summary) {
  RunComponents& c = components;
  RunState state;
  state.step = step;
  state.successful_steps = c.optimizer.call([](loom::Optimizer& o) { return o.successful_steps(); });
  state.scaler = c.precision.call([](loom::Precision& policy) { return policy.state(); });
  state.cursor =
      steps != nullptr ? steps->data_cursor() : c.data.call([](loom::Dataset& d) { return d.cursor(); });
  state.seed = settings.seed;
  state.recipe_sha256 = sha256_hex(resolved_recipe.data(), resolved_recipe.size());
  state.sdk_version = loom::kSdkVersion;
  if (rank != 0) return;
  const std::optional<BackendOptimizerState> on_backend = optimizer_on_backend();
  try {
    summary.last_checkpoint = store->commit(step, [&](const fs::path& dir) {
      write_run_checkpoint(dir, model(), setup.bert_config, c.tokenizer ? c.tokenizer.get() : nullptr,
                           c.optimizer.get(), state, on_backend ? &*on_backend : nullptr);
    });
  } catch (const NonFiniteState& e) {
    // Nothing was written and `latest` still names the newest finite checkpoint; the run ends
    // here with an error (finite_state.hpp). Other ranks are stopped by the launcher.
    reporter.record({{"type", "event"}, {"step", step}, {"nonfinite_state", e.what()}});
    throw std::runtime_error(
        diverged_run_message(step, e.what(), state.scaler.skipped_steps, store->latest()));
  }
  reporter.record({{"type", "event"}, {"step", step}, {"checkpoint", summary.last_checkpoint.string()}});
}

void Trainer::State::evaluate(RunReporter& reporter, TrainSummary& summary) {
  if (!components.eval_data) return;
  const std::optional<int32_t> mask_id = mask_token_id(components);
  // SQuAD: every rank decodes (same numbers); rank 0 writes predictions.json & co. in the run directory.
  std::optional<SquadEvaluation> squad;
  if (eval_buffers->limits().task == loom::BatchTask::span_extraction && components.tokenizer)
    squad.emplace(*components.tokenizer.get(), squad_decode_options(settings),
                  rank == 0 ? settings.run_directory() : std::filesystem::path());
  // The training data's reader waits meanwhile: both may read through one library (HDF5).
  const std::optional<BatchPrefetcher::Hold> held =
      steps != nullptr ? std::optional(steps->hold_data()) : std::nullopt;
  nlohmann::json record = components.eval_data.call([&](loom::Dataset& d) {
    return host::evaluate(model(), backend(), *staging, d, *eval_buffers, settings.eval_batches, mask_id,
                          squad ? &*squad : nullptr);
  });
  record["type"] = "eval";
  record["step"] = step;
  summary.last_eval = record;
  reporter.eval(record);
}

// Rank 0's run-control commands (the metrics stream's pause, checkpoint-now, stop), shared with
// every rank so they all leave the loop, or checkpoint, at the same step.
RunControl::Boundary Trainer::State::step_boundary(RunReporter& reporter, TrainSummary& summary) {
  RunControl::Boundary boundary = rank == 0 ? control.at_step_boundary(step) : RunControl::Boundary{};
  if (world > 1 && !settings.metrics_listen.empty()) {
    int32_t flags[2] = {boundary.checkpoint_now, boundary.stop};
    components.communicator.call([&](loom::Communicator& m) { m.broadcast(flags, sizeof flags, 0); });
    boundary = {flags[0] != 0, flags[1] != 0};
  }
  if (boundary.checkpoint_now) {
    save_checkpoint(reporter, summary);
    control.acknowledge(RunCommand::checkpoint_now, step, {{"checkpoint", summary.last_checkpoint.string()}});
  }
  return boundary;
}

}  // namespace loom::host
