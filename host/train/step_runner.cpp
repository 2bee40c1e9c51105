// The steps of a run and what they share; see step_runner.hpp.
#include "train/step_runner.hpp"

#include <spdlog/spdlog.h>

namespace loom::host {
namespace {

// The mean of gradients over ranks: overlapped with backward in buckets, or once after it.
GradientSync gradient_sync(RunComponents& components, const RunSettings& settings, HostMirror& grads,
                           int world) {
  const GradientSyncOptions options = gradient_sync_options(settings.allreduce_post_accumulation,
                                                            settings.allreduce_bucket_mb, grads.copies());
  if (world > 1 && !settings.allreduce_post_accumulation && !options.overlap)
    spdlog::info(
        "device backend: gradients are all-reduced once after accumulation, on their host copy "
        "(overlapped buckets need device collectives)");
  // One process never all-reduces: the gradients' host view is then left unallocated (on a device
  // backend that is a second copy of every gradient, unused on the backend path).
  return GradientSync(components.communicator, world > 1 ? grads.data() : nullptr, grads.size(), options);
}

}  // namespace

StepRunner::StepRunner(RunComponents& components, const RunSettings& settings, const StepModel& model,
                       RankGroup group)
    : sync_(gradient_sync(components, settings, model.grads, group.world)),
      loss_sums_(*components.backend.get()),
      trace_(group.rank),
      batches_(std::make_unique<BatchPrefetcher>(components.data, model.buffers.limits())),
      parts_{.components = components,
             .model = model.model,
             .staging = model.staging,
             .batches = *batches_,
             .master = model.master,
             .grads = model.grads,
             .backend_update = model.backend_update,
             .sync = sync_,
             .loss_sums = loss_sums_,
             .transfer_counter = components.backend.find<loom::TransferCounter>(),
             .group = group,
             .seed = settings.seed,
             .grad_accumulation = settings.grad_accumulation,
             .trace = trace_} {}

}  // namespace loom::host
