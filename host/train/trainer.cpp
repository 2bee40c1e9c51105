// The training loop; see trainer.hpp for the step sequence and the determinism contract.
#include "train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "files/atomic_file.hpp"
#include "model/batch_staging.hpp"
#include "checkpoint/checkpoint_store.hpp"
#include "train/data_parallel.hpp"
#include "recipe/errors.hpp"
#include "eval/evaluator.hpp"
#include "train/gradient_sync.hpp"
#include "model/host_batch_buffers.hpp"
#include "model/host_mirror.hpp"
#include "train/launch_environment.hpp"
#include "metrics/metrics_log.hpp"
#include "metrics/metrics_server.hpp"
#include "model/model_setup.hpp"
#include "train/run_checkpoint.hpp"
#include "train/run_components.hpp"
#include "recipe/run_settings.hpp"
#include "files/sha256.hpp"
#include "control/stop_request.hpp"
#include "loom/sdk/version.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace loom::host {

uint64_t dropout_key(uint64_t seed, uint64_t step, uint64_t micro_batch) {
  auto mix = [](uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  };
  // The outer mix (of a former rank term, now 0) keeps single-process keys what they were.
  return mix(mix(mix(mix(seed) ^ step) ^ micro_batch));
}

// Everything one run holds, in construction order (destroyed in reverse).
struct Trainer::State {
  RunSettings settings;
  TrainOptions options;
  std::string resolved_recipe;
  RunComponents components;
  int rank = 0, world = 1;
  ModelSetup setup;
  // What host code reads and writes of the flat master weights and gradients (host_mirror.hpp).
  std::unique_ptr<HostMirror> master_host, grads_host;
  std::unique_ptr<BatchStaging> staging;
  std::unique_ptr<HostBatchBuffers> buffers, eval_buffers;
  std::unique_ptr<CheckpointStore> store;
  uint64_t step = 0;
  std::filesystem::path resumed_from;   // the checkpoint this run continues, empty for a fresh run
  RunControl control;
  std::vector<std::string> head_prefixes;  // parameters a fine-tuning run may lack in init_from
};

namespace {

loom::Backend& backend_of(const RunComponents& c) {
  return *c.backend.get();
}

// Parameters that only a task head has: absent from a pre-training checkpoint used for init_from.
const std::vector<std::string> kHeadOnlyPrefixes = {"classifier.", "qa_outputs.", "cls.", "bert.pooler."};

}  // namespace

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

  const loom::DatasetSetup data_setup{s.rank, s.world, s.settings.seed,
                                      c.tokenizer ? c.tokenizer.get() : nullptr};
  // Every rank evaluates the whole evaluation set (same numbers everywhere; rank 0 records them).
  const loom::DatasetSetup eval_setup{0, 1, s.settings.seed, data_setup.tokenizer};
  c.data.call([&](loom::Dataset& d) { d.open(data_setup); });
  const loom::BatchLimits limits = c.data.call([](loom::Dataset& d) { return d.limits(); });
  loom::ActivationShape shape = activation_shape_for(limits);
  s.buffers = std::make_unique<HostBatchBuffers>(limits);
  if (c.eval_data) {
    c.eval_data.call([&](loom::Dataset& d) { d.open(eval_setup); });
    const loom::BatchLimits eval_limits = c.eval_data.call([](loom::Dataset& d) { return d.limits(); });
    const loom::ActivationShape eval_shape = activation_shape_for(eval_limits);
    shape = {std::max(shape.batch, eval_shape.batch), std::max(shape.seq, eval_shape.seq),
             std::max(shape.max_masked, eval_shape.max_masked)};
    s.eval_buffers = std::make_unique<HostBatchBuffers>(eval_limits);
  }

  s.setup = build_model(recipe, registry, backend_of(c), *c.precision.get(), &limits, data_setup.tokenizer);
  if (limits.task == loom::BatchTask::classification) {
    // Hugging Face's label maps, so `loom predict` and BertForSequenceClassification name classes.
    nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
    for (int32_t i = 0; i < limits.num_labels; ++i) {
      const char* name = c.data.call([&](loom::Dataset& d) { return d.label_name(i); });
      const std::string label = name != nullptr ? name : "LABEL_" + std::to_string(i);
      id2label[std::to_string(i)] = label;
      label2id[label] = i;
    }
    s.setup.bert_config.extra["id2label"] = id2label;
    s.setup.bert_config.extra["label2id"] = label2id;
    s.setup.bert_config.extra["architectures"] = nlohmann::json::array({"BertForSequenceClassification"});
  }
  Model& model = *s.setup.model;
  model.reserve(shape);
  s.staging = std::make_unique<BatchStaging>(backend_of(c), shape);

  const auto segments = model.parameters().segments();
  c.optimizer.call([&](loom::Optimizer& o) {
    o.setup(segments.data(), segments.size(), model.parameters().total_elements());
  });
  c.schedule.call([&](loom::Schedule& sc) { sc.setup(s.settings.steps); });

  model.initialize(s.settings.seed);
  s.store = std::make_unique<CheckpointStore>(s.settings.run_directory() / "checkpoints",
                                              s.settings.checkpoint_keep);
  // The caller owns the run directory (RunDirectoryLock), so no other process is writing these.
  if (s.rank == 0)
    for (const fs::path& leftover : s.store->remove_partial())
      spdlog::warn("removed {}: a checkpoint that a killed run left half-written", leftover.string());

  std::optional<fs::path> resume_from;
  if (!s.options.resume.empty())
    resume_from = s.store->resolve(s.options.resume);
  else if (!s.store->complete().empty())
    throw std::runtime_error(fmt::format(
        "{} already holds checkpoints: pass --resume auto to continue that run, or choose another run.name",
        s.store->directory().string()));

  if (resume_from) {
    load_model_weights(model, *resume_from, {});
    c.optimizer.call([&](loom::Optimizer& o) { load_optimizer_state(o, *resume_from); });
    const RunState saved = read_run_state(*resume_from);
    if (saved.seed != s.settings.seed)
      spdlog::warn("resuming with seed {} from a checkpoint written with seed {}", s.settings.seed,
                   saved.seed);
    if (!saved.recipe_sha256.empty() &&
        saved.recipe_sha256 != sha256_hex(s.resolved_recipe.data(), s.resolved_recipe.size()))
      spdlog::warn("the recipe differs from the one {} was written with", resume_from->string());
    c.optimizer.call([&](loom::Optimizer& o) { o.set_successful_steps(saved.successful_steps); });
    c.precision.call([&](loom::Precision& p) { p.restore_state(saved.scaler); });
    c.data.call([&](loom::Dataset& d) { d.seek(saved.cursor); });
    s.step = saved.step;
    s.resumed_from = *resume_from;
    spdlog::info("resumed from {} at step {}", resume_from->string(), s.step);
  } else if (!s.settings.init_from.empty()) {
    CheckpointLoadOptions load{true, kHeadOnlyPrefixes};
    const CheckpointLoadReport report = load_model_weights(model, s.settings.init_from, load);
    spdlog::info("init_from {}:\n{}", s.settings.init_from, report.summary());
    // Always shown (even with --quiet): a silently half-loaded model is the classic mistake.
    if (s.rank == 0)
      std::cerr << "init_from " << s.settings.init_from << ": " << report.loaded.size()
                << " parameters loaded, " << report.missing.size() << " initialised fresh (missing), "
                << report.unexpected.size() << " unused (unexpected)\n";
  }
  s.master_host = std::make_unique<HostMirror>(backend_of(c), model.master());
  s.grads_host = std::make_unique<HostMirror>(backend_of(c), model.grads());
  if (s.master_host->copies())
    spdlog::info("backend memory is not host-addressable: the optimizer, precision checks and "
                 "gradient all-reduce work on host copies (one gradient download, one weight upload "
                 "per step)");
  s.master_host->pull();
  // One set of starting weights whatever each rank initialised or loaded, verified by checksum.
  broadcast_parameters(RankGroup{c.communicator, c.communicator2, s.rank, s.world}, s.master_host->data(),
                       s.master_host->size());
  if (s.world > 1) {
    s.master_host->push();
    model.refresh_compute_weights();
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
  Model& model = *s.setup.model;
  loom::Backend& backend = backend_of(c);
  const RunSettings& cfg = s.settings;
  const bool leader = s.rank == 0;
  const fs::path run_dir = cfg.run_directory();
  TrainSummary summary;
  summary.run_directory = run_dir;

  std::unique_ptr<MetricsLog> metrics;
  if (leader) {
    fs::create_directories(run_dir);
    write_file_atomically(run_dir / "recipe.resolved.toml", s.resolved_recipe);
    metrics = std::make_unique<MetricsLog>(run_dir / "metrics.jsonl", s.step);
    if (metrics->dropped() > 0)
      spdlog::warn("{}: dropped {} records after step {} (an earlier attempt wrote them past its last "
                   "checkpoint; this run writes those steps again)",
                   metrics->path().string(), metrics->dropped(), s.step);
    if (!s.resumed_from.empty() || metrics->dropped() > 0) {
      nlohmann::json event{{"type", "event"}, {"step", s.step}, {"dropped_records", metrics->dropped()}};
      if (!s.resumed_from.empty()) event["resumed_from"] = s.resumed_from.string();
      metrics->write(event);
    }
  }
  // Who else hears about the run (rank 0): the metrics stream and an in-process observer.
  std::unique_ptr<MetricsServer> stream;
  std::vector<RunObserver*> observers;
  if (leader && !cfg.metrics_listen.empty()) {
    stream = std::make_unique<MetricsServer>(
        MetricsStreamSettings{cfg.metrics_listen, cfg.metrics_token, cfg.metrics_client_queue}, s.control);
    observers.push_back(stream.get());
    std::cerr << "metrics stream listening on " << stream->local_endpoint() << "\n";
  }
  if (leader && s.options.observer != nullptr) observers.push_back(s.options.observer);
  for (RunObserver* o : observers) o->on_start(make_hello_message(cfg, s.resolved_recipe, s.world, s.step));
  auto emit = [&](const nlohmann::json& record) {
    if (metrics) metrics->write(record);
    for (RunObserver* o : observers) o->on_record(record);
  };
  install_stop_handlers();
  // LOOM_TRACE_INSTANCES=DIR: every rank lists the instances it trained on ("epoch id" lines in
  // DIR/rank-N.txt), to check data parallelism reads each instance once per epoch.
  std::unique_ptr<std::ofstream> trace;
  if (const char* dir = std::getenv("LOOM_TRACE_INSTANCES"); dir != nullptr && *dir != '\0')
    trace =
        std::make_unique<std::ofstream>(fs::path(dir) / fmt::format("rank-{}.txt", s.rank), std::ios::app);

  const uint64_t k = cfg.grad_accumulation;
  const size_t total = model.parameters().total_elements();
  // Host pointers: the backend's own buffers on the CPU, host copies on a device (host_mirror.hpp).
  HostMirror& master_host = *s.master_host;
  HostMirror& grads_host = *s.grads_host;
  float* const master = master_host.data();
  float* const grads = grads_host.data();
  const RankGroup group{c.communicator, c.communicator2, s.rank, s.world};
  const bool data_parallel = s.world > 1;
  const GradientSyncOptions sync_options =
      gradient_sync_options(cfg.allreduce_post_accumulation, cfg.allreduce_bucket_mb, grads_host.copies());
  if (data_parallel && !cfg.allreduce_post_accumulation && !sync_options.overlap)
    spdlog::info("device backend: gradients are all-reduced once after accumulation, on their host copy "
                 "(overlapped buckets need device collectives)");
  GradientSync sync(c.communicator, c.communicator2, grads, total, sync_options);

  auto save_checkpoint = [&] {
    RunState state;
    state.step = s.step;
    state.successful_steps = c.optimizer.call([](loom::Optimizer& o) { return o.successful_steps(); });
    state.scaler = c.precision.call([](loom::Precision& p) { return p.state(); });
    state.cursor = c.data.call([](loom::Dataset& d) { return d.cursor(); });
    state.seed = cfg.seed;
    state.recipe_sha256 = sha256_hex(s.resolved_recipe.data(), s.resolved_recipe.size());
    state.sdk_version = loom::kSdkVersion;
    if (!leader) return;
    summary.last_checkpoint = s.store->commit(s.step, [&](const fs::path& dir) {
      write_run_checkpoint(dir, model, s.setup.bert_config, c.tokenizer ? c.tokenizer.get() : nullptr,
                           c.optimizer.get(), state);
    });
    emit({{"type", "event"}, {"step", s.step}, {"checkpoint", summary.last_checkpoint.string()}});
  };

  const std::optional<int32_t> mask_id = mask_token_id(c);
  auto run_eval = [&] {
    if (!c.eval_data) return;
    nlohmann::json record = c.eval_data.call([&](loom::Dataset& d) {
      return evaluate(model, backend, *s.staging, d, *s.eval_buffers, cfg.eval_batches, mask_id);
    });
    record["type"] = "eval";
    record["step"] = s.step;
    summary.last_eval = record;
    if (leader) emit(record);
    if (leader && s.options.console) std::cerr << "eval step " << s.step << ": " << record.dump() << "\n";
  };

  // Window statistics between two log records.
  double window_loss = 0, window_mlm = 0, window_nsp = 0, window_allreduce = 0;
  uint64_t window_micro = 0, window_rows = 0, window_tokens = 0, window_step_count = 0;
  Tally window_mlm_tally;
  auto window_start = Clock::now();
  const auto loop_start = Clock::now();
  const uint64_t first_step = s.step;
  double grad_norm = 0;

  bool stop_commanded = false;  // by the metrics stream's stop (shared with every rank)
  while (s.step < cfg.steps && !any_rank(group, stop_requested()) && !stop_commanded) {
    model.zero_grads();
    const double loss_scale = c.precision.call([](loom::Precision& p) { return p.loss_scale(); });
    const bool log_now = (s.step + 1) % cfg.log_every == 0 || s.step + 1 == cfg.steps;
    uint64_t batches_run = 0;
    bool epoch_ended = false;
    for (uint64_t micro = 0; micro < k; ++micro) {
      loom::BatchShape shape{};
      const HostBatch batch = c.data.call([&](loom::Dataset& d) { return s.buffers->next(d, shape); });
      epoch_ended = epoch_ended || shape.last_in_epoch != 0;
      if (trace)
        for (int32_t r = 0; r < shape.rows; ++r)
          *trace << shape.epoch << ' ' << s.buffers->instance_ids()[static_cast<size_t>(r)] << '\n';
      const bool last = micro + 1 == k;
      if (shape.rows == 0) {  // the other ranks took the rest of the epoch; still send gradients
        if (last)
          for (size_t first : model.grads_final_offsets()) sync.grads_final_from(first);
        continue;
      }
      ++batches_run;
      // Keyed by the micro-batch's place among all ranks' micro-batches of the step, so 2 ranks
      // with batch b see the dropout 1 process with batch b and accumulation 2 sees.
      model.forward(s.staging->upload(batch),
                    StepSettings{true, dropout_key(cfg.seed, s.step,
                                                   micro * static_cast<uint64_t>(s.world) +
                                                       static_cast<uint64_t>(s.rank))});
      const double loss = model.loss();
      auto scalar = [&](const char* name) {
        const loom::Tensor t = model.output(name);
        float v = 0;
        if (t.defined()) backend.copy_to_host(&v, t.data, sizeof(float));
        return static_cast<double>(v);
      };
      window_loss += loss;
      window_mlm += scalar("mlm_loss");
      window_nsp += scalar("nsp_loss");
      window_micro += 1;
      window_rows += static_cast<uint64_t>(shape.rows);
      for (int64_t i = 0; i < batch.batch * batch.seq; ++i) window_tokens += batch.attention_mask[i] != 0;
      if (log_now && micro + 1 == k) {
        const Tally t = masked_lm_tally(model, backend, batch);
        window_mlm_tally.correct += t.correct, window_mlm_tally.total += t.total;
      }
      const float scale = static_cast<float>(loss_scale / static_cast<double>(k));
      if (last && data_parallel && sync.overlapping())
        model.backward(scale, [&](size_t first) { sync.grads_final_from(first); });
      else
        model.backward(scale);
    }
    grads_host.pull();  // on a device backend: the step's one bulk device → host copy
    if (data_parallel) {
      sync.finish();
      window_allreduce += sync.take_blocked_seconds();
      // At an epoch's end some ranks may have had no batch: average over the batches that ran.
      if (epoch_ended) {
        std::vector<double> ran{static_cast<double>(batches_run)};
        sum_over_ranks(group, ran);
        const double expected = static_cast<double>(k) * s.world;
        if (ran[0] > 0 && ran[0] < expected) {
          const auto factor = static_cast<float>(expected / ran[0]);
          for (size_t i = 0; i < total; ++i) grads[i] *= factor;
        }
      }
    }
    const bool nonfinite =
        c.precision.call([&](loom::Precision& p) { return p.any_nonfinite(grads, total); });
    const loom::PrecisionDecision decision =
        c.precision.call([&](loom::Precision& p) { return p.after_backward(nonfinite); });
    double lr = 0;
    if (decision.apply) {
      const double base = c.optimizer.call([](loom::Optimizer& o) { return o.base_lr(); });
      const uint64_t done = c.optimizer.call([](loom::Optimizer& o) { return o.successful_steps(); });
      lr = c.schedule.call([&](loom::Schedule& sc) { return sc.lr(base, done); });
      const loom::OptimizerStepResult result = c.optimizer.call([&](loom::Optimizer& o) {
        return o.step(master, grads, loom::OptimizerStepArgs{lr, decision.grad_scale});
      });
      grad_norm = result.grad_norm;
      master_host.push();
      model.refresh_compute_weights();
    }
    ++s.step;
    ++window_step_count;

    if (log_now) {
      const double seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
      const double per_step = std::chrono::duration<double>(Clock::now() - loop_start).count() /
                              static_cast<double>(s.step - first_step);
      const uint64_t skipped = c.precision.call([](loom::Precision& p) { return p.skipped_steps(); });
      const uint64_t window_steps = std::max<uint64_t>(1, window_step_count);
      const double step_ms = 1000.0 * seconds / static_cast<double>(window_steps);
      const nlohmann::json ranks =
          per_rank_throughput(group, step_ms, static_cast<double>(window_rows) / seconds);
      // Losses and counts of every rank's micro-batches (the mean over ranks and micro-batches).
      std::vector<double> sums{window_loss,
                               window_mlm,
                               window_nsp,
                               static_cast<double>(window_micro),
                               static_cast<double>(window_rows),
                               static_cast<double>(window_tokens),
                               static_cast<double>(window_mlm_tally.correct),
                               static_cast<double>(window_mlm_tally.total)};
      sum_over_ranks(group, sums);
      const double micro_batches = std::max(1.0, sums[3]);
      const double mean_loss = sums[0] / micro_batches;
      const Tally mlm_tally{static_cast<uint64_t>(sums[6]), static_cast<uint64_t>(sums[7])};
      nlohmann::json record{{"type", "train"},
                            {"step", s.step},
                            {"loss", mean_loss},
                            {"mlm_loss", sums[1] / micro_batches},
                            {"nsp_loss", sums[2] / micro_batches},
                            {"mlm_accuracy", mlm_tally.rate()},
                            {"lr", lr},
                            {"loss_scale", loss_scale},
                            {"skipped_steps", skipped},
                            {"grad_norm", grad_norm},
                            {"sequences_per_second", sums[4] / seconds},
                            {"tokens_per_second", sums[5] / seconds},
                            {"step_ms", step_ms}};
      if (data_parallel) {
        record["world_size"] = s.world;
        record["allreduce_ms"] = 1000.0 * window_allreduce / static_cast<double>(window_steps);
        record["ranks"] = ranks;
      }
      const double eta = per_step * static_cast<double>(cfg.steps - s.step);
      if (leader) emit(record);
      if (leader && s.options.console)
        std::cerr << (s.options.headless ? format_headless_line(record, cfg.steps, eta)
                                         : format_progress_line(s.step, cfg.steps, mean_loss, lr, loss_scale,
                                                                sums[4] / seconds, eta))
                  << "\n";
      summary.final_loss = mean_loss;
      window_loss = window_mlm = window_nsp = window_allreduce = 0;
      window_micro = window_rows = window_tokens = window_step_count = 0;
      window_mlm_tally = {};
      window_start = Clock::now();
    }
    if (cfg.eval_every > 0 && s.step % cfg.eval_every == 0 && s.step < cfg.steps) run_eval();
    if (cfg.checkpoint_every > 0 && s.step % cfg.checkpoint_every == 0 && s.step < cfg.steps)
      save_checkpoint();

    // Step boundary: rank 0's run-control commands, shared with every rank.
    RunControl::Boundary boundary = leader ? s.control.at_step_boundary(s.step) : RunControl::Boundary{};
    if (s.world > 1 && !cfg.metrics_listen.empty()) {
      int32_t flags[2] = {boundary.checkpoint_now, boundary.stop};
      c.communicator.call([&](loom::Communicator& m) { m.broadcast(flags, sizeof flags, 0); });
      boundary = {flags[0] != 0, flags[1] != 0};
    }
    if (boundary.checkpoint_now) {
      save_checkpoint();
      s.control.acknowledge(RunCommand::checkpoint_now, s.step, {{"checkpoint", summary.last_checkpoint.string()}});
    }
    stop_commanded = boundary.stop;
  }
  summary.stopped_early = s.step < cfg.steps;
  summary.steps = s.step;
  summary.seconds = std::chrono::duration<double>(Clock::now() - loop_start).count();
  if (!summary.stopped_early) run_eval();
  save_checkpoint();
  s.control.acknowledge(RunCommand::stop, s.step, {{"checkpoint", summary.last_checkpoint.string()}});
  for (RunObserver* o : observers)
    o->on_end({{"type", "end"}, {"step", s.step}, {"stopped_early", summary.stopped_early},
               {"checkpoint", summary.last_checkpoint.string()}});
  if (stream) {
    stream->shutdown();
    const MetricsServer::Statistics st = stream->statistics();
    const double stream_seconds = st.training_thread_seconds + st.stream_thread_cpu_seconds;
    std::cerr << fmt::format(
        "metrics stream: {} clients ({} refused), {} records, {} dropped for slow clients; {:.2f} ms on the "
        "training thread + {:.2f} ms stream-thread CPU = {:.3f}% of the {:.2f} s loop\n",
        st.clients, st.refused, st.records, st.dropped, 1e3 * st.training_thread_seconds,
        1e3 * st.stream_thread_cpu_seconds, 100.0 * stream_seconds / summary.seconds, summary.seconds);
  }
  if (leader && s.options.console && summary.stopped_early)
    std::cerr << "stopped at step " << s.step << "; checkpoint " << summary.last_checkpoint.string() << "\n";
  return summary;
}

}  // namespace loom::host
