// One optimizer step; see train_step.hpp for the sequence.
#include "train/train_step.hpp"

#include <vector>

namespace loom::host {
namespace {

struct MicroBatchesRun {
  uint64_t with_rows = 0;    // micro-batches of this rank that had rows
};

// Ends a phase when the step is timed (`loom bench`); nothing otherwise.
void end_phase(StepPhaseTimer* phases, StepPhase phase) {
  if (phases != nullptr) phases->end(phase);
}

void add_losses(const StepParts& p, const HostBatch& batch, int32_t rows, bool measure_mlm_accuracy,
                StepLosses& losses) {
  p.loss_sums.add(p.model);  // on the backend: nothing is read back here
  losses.micro_batches += 1;
  losses.rows += static_cast<uint64_t>(rows);
  for (int64_t i = 0; i < batch.batch * batch.seq; ++i) losses.tokens += batch.attention_mask[i] != 0;
  losses.slots += static_cast<uint64_t>(rows) * static_cast<uint64_t>(batch.seq);
  if (measure_mlm_accuracy) {
    const Tally t = masked_lm_tally(p.model, *p.components.backend.get(), batch);
    losses.mlm_tally.correct += t.correct, losses.mlm_tally.total += t.total;
  }
}

// Forward and backward of the step's k micro-batches; gradients accumulate.
MicroBatchesRun accumulate_gradients(const StepParts& p, uint64_t step, double loss_scale,
                                     bool measure_mlm_accuracy, StepLosses& losses, StepPhaseTimer* phases) {
  const uint64_t k = p.grad_accumulation;
  const bool overlap_sync = p.group.world > 1 && p.sync.overlapping();
  MicroBatchesRun run;
  for (uint64_t micro = 0; micro < k; ++micro) {
    const PrefetchedBatch next = p.batches.take();
    const HostBatch& batch = next.batch;
    const loom::BatchShape& shape = next.shape;
    p.trace.record(shape, *next.instance_ids);
    end_phase(phases, StepPhase::data);
    const bool last = micro + 1 == k;
    if (shape.rows == 0) {  // the other ranks took the rest of the epoch; still send gradients
      if (last && overlap_sync)
        for (size_t first : p.model.grads_final_offsets()) p.sync.grads_final_from(first);
      continue;
    }
    ++run.with_rows;
    // Keyed by the micro-batch's place among all ranks' micro-batches of the step, so 2 ranks
    // with batch b see the dropout 1 process with batch b and accumulation 2 sees.
    const uint64_t place = micro * static_cast<uint64_t>(p.group.world) + static_cast<uint64_t>(p.group.rank);
    const loom::BatchView& view = p.staging.upload(batch);
    end_phase(phases, StepPhase::upload);
    p.model.forward(view, StepSettings{true, dropout_key(p.seed, step, place)}, p.staging.packed());
    add_losses(p, batch, shape.rows, measure_mlm_accuracy && last, losses);
    end_phase(phases, StepPhase::forward);
    const auto scale = static_cast<float>(loss_scale / static_cast<double>(k));
    if (last && overlap_sync)
      p.model.backward(scale, [&](size_t first) { p.sync.grads_final_from(first); });
    else
      p.model.backward(scale);
    end_phase(phases, StepPhase::backward);
  }
  return run;
}

// The mean over ranks; returns the seconds spent blocked on it. Some ranks may have had no batch —
// at an epoch's end, and with token-budget batches at the end of any packing window: the sum is
// then divided by the batches that ran rather than by k × world. A rank cannot tell that another
// had none, so with several ranks every step counts them (one summed number beside the gradients).
double average_over_ranks(const StepParts& p, const MicroBatchesRun& run) {
  p.sync.finish();
  const double blocked = p.sync.take_blocked_seconds();
  if (p.group.world > 1) {
    std::vector<double> ran{static_cast<double>(run.with_rows)};
    sum_over_ranks(p.group, ran);
    const double expected = static_cast<double>(p.grad_accumulation) * p.group.world;
    if (ran[0] > 0 && ran[0] < expected) {
      const auto factor = static_cast<float>(expected / ran[0]);
      float* grads = p.grads.data();
      for (size_t i = 0; i < p.grads.size(); ++i) grads[i] *= factor;
    }
  }
  return blocked;
}

// The precision policy's decision from a scan of the gradients' host view.
loom::PrecisionDecision decide_on_host(const StepParts& p) {
  return p.components.precision.call([&](loom::Precision& policy) {
    return policy.after_backward(policy.any_nonfinite(p.grads.data(), p.grads.size()));
  });
}

void apply_update(const StepParts& p, double grad_scale, StepOutcome& out) {
  const Component<loom::Optimizer>& optimizer = p.components.optimizer;
  const double base_lr = optimizer.call([](loom::Optimizer& o) { return o.base_lr(); });
  const uint64_t done = optimizer.call([](loom::Optimizer& o) { return o.successful_steps(); });
  out.lr = p.components.schedule.call([&](loom::Schedule& s) { return s.lr(base_lr, done); });
  out.applied = true;
  if (p.backend_update != nullptr) {  // master weights, state and gradients stay on the backend
    p.backend_update->update(loom::OptimizerStepArgs{out.lr, grad_scale});
    return;
  }
  const loom::OptimizerStepResult result = optimizer.call([&](loom::Optimizer& o) {
    return o.step(p.master.data(), p.grads.data(), loom::OptimizerStepArgs{out.lr, grad_scale});
  });
  out.grad_norm = result.grad_norm;
  p.master.push();
  p.model.refresh_compute_weights();
}

}  // namespace

StepOutcome train_step(const StepParts& p, uint64_t step, bool measure_mlm_accuracy, StepPhaseTimer* phases) {
  StepOutcome out;
  const uint64_t waits_before =
      p.transfer_counter ? loom::host_waits(p.transfer_counter->transfer_counts()) : 0;
  if (phases != nullptr) phases->start();
  p.model.zero_grads();
  end_phase(phases, StepPhase::backward);  // the gradients backward accumulates into
  out.loss_scale = p.components.precision.call([](loom::Precision& policy) { return policy.loss_scale(); });
  const MicroBatchesRun run =
      accumulate_gradients(p, step, out.loss_scale, measure_mlm_accuracy, out.losses, phases);
  if (p.backend_update == nullptr) p.grads.pull();  // host path on a device: one bulk device → host copy
  if (p.group.world > 1) out.allreduce_seconds = average_over_ranks(p, run);
  end_phase(phases, StepPhase::communication);
  const loom::PrecisionDecision decision = p.backend_update ? p.backend_update->decide() : decide_on_host(p);
  if (decision.apply) apply_update(p, decision.grad_scale, out);
  if (p.backend_update != nullptr && measure_mlm_accuracy) out.grad_norm = p.backend_update->last_grad_norm();
  end_phase(phases, StepPhase::optimizer);
  if (p.transfer_counter)
    out.host_waits =
        static_cast<int64_t>(loom::host_waits(p.transfer_counter->transfer_counts()) - waits_before);
  out.measured_mlm_accuracy = measure_mlm_accuracy;
  return out;
}

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

}  // namespace loom::host
