// The backend path of a training step; see backend_update.hpp.
#include "train/backend_update.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom/sdk/ops/optimizer_working_copy.hpp"
#include "model/host_mirror.hpp"

namespace loom::host {
namespace {

/// LOOM_HOST_OPTIMIZER=1: keep the host path even where the backend path is offered.
bool host_path_forced() {
  const char* value = std::getenv("LOOM_HOST_OPTIMIZER");
  return value != nullptr && std::strcmp(value, "") != 0 && std::strcmp(value, "0") != 0;
}

}  // namespace

std::string BackendUpdate::host_path_reason(RunComponents& components, loom::Backend& backend, int world) {
  if (components.backend.find<loom::OptimizerSteps>() == nullptr)
    return components.backend.name() + " offers no optimizer passes (OptimizerSteps)";
  if (components.optimizer.find<loom::BackendOptimizer>() == nullptr)
    return components.optimizer.name() + " cannot run on a backend";
  if (components.precision.find<loom::BackendPrecision>() == nullptr)
    return components.precision.name() + " cannot decide from a backend flag";
  if (world > 1 && !host_addressable(backend))
    return "the gradient all-reduce of several ranks works on host copies of device memory";
  if (host_path_forced()) return "LOOM_HOST_OPTIMIZER is set";
  return "";
}

std::unique_ptr<BackendUpdate> BackendUpdate::attach_if_offered(RunComponents& components,
                                                                UpdatedBuffers buffers, int world) {
  const std::string missing = host_path_reason(components, buffers.backend, world);
  if (!missing.empty()) {
    spdlog::info("optimizer step on the host: {}", missing);
    return nullptr;
  }
  loom::OptimizerSteps* steps = components.backend.find<loom::OptimizerSteps>();
  loom::BackendOptimizer* optimizer = components.optimizer.find<loom::BackendOptimizer>();
  loom::BackendPrecision* precision = components.precision.find<loom::BackendPrecision>();
  components.optimizer.call([&](loom::Optimizer&) { optimizer->attach(buffers.backend, *steps); });
  spdlog::info(
      "optimizer step on the backend ({}): no gradient or weight crosses to the host; each step reads "
      "one non-finite flag",
      components.backend.name());
  auto update = std::make_unique<BackendUpdate>(components, std::move(buffers), *optimizer, *precision);
  update->hand_working_copy_to_passes();
  return update;
}

std::unique_ptr<BackendUpdate> BackendUpdate::attach_if_offered(RunComponents& components, Model& model,
                                                                int world) {
  return attach_if_offered(components,
                           {model.backend(), model.master(), model.grads(),
                            [&model] { model.refresh_compute_weights(); }, model.working_weights()},
                           world);
}

BackendUpdate::BackendUpdate(RunComponents& components, UpdatedBuffers buffers,
                             loom::BackendOptimizer& optimizer, loom::BackendPrecision& precision)
    : components_(components),
      buffers_(std::move(buffers)),
      optimizer_(&optimizer),
      precision_(&precision),
      flag_(buffers_.backend, kFlagBytes) {}

loom::PrecisionDecision BackendUpdate::decide() {
  const loom::Tensor flag = flag_.view(loom::DType::i32, {1});
  components_.optimizer.call([&](loom::Optimizer&) { optimizer_->inspect_gradients(buffers_.grads, flag); });
  return components_.precision.call(
      [&](loom::Precision&) { return precision_->after_backward_from_flag(buffers_.backend, flag); });
}

void BackendUpdate::hand_working_copy_to_passes() {
  if (!buffers_.working.defined()) return;  // f32 compute: no copy
  loom::OptimizerWorkingCopy* copy = components_.backend.find<loom::OptimizerWorkingCopy>();
  auto* optimizer = components_.optimizer.find<loom::BackendOptimizerWorkingCopy>();
  const std::string missing = copy == nullptr ? components_.backend.name() + " offers no OptimizerWorkingCopy"
                              : optimizer == nullptr
                                  ? components_.optimizer.name() + " offers no BackendOptimizerWorkingCopy"
                                  : "";
  if (!missing.empty()) {
    spdlog::info("working copy cast after each update: {}", missing);
    return;
  }
  components_.optimizer.call([&](loom::Optimizer&) { optimizer->write_working_copy(*copy, buffers_.working); });
  passes_write_working_copy_ = true;
  spdlog::info("working copy written by the optimizer's passes: no cast after an update");
}

void BackendUpdate::update(const loom::OptimizerStepArgs& args) {
  components_.optimizer.call(
      [&](loom::Optimizer&) { optimizer_->step_on_backend(buffers_.master, buffers_.grads, args); });
  if (!passes_write_working_copy_ && buffers_.refresh_working_copy) buffers_.refresh_working_copy();
}

double BackendUpdate::last_grad_norm() {
  return components_.optimizer.call(
      [&](loom::Optimizer&) { return optimizer_->read_last_result().grad_norm; });
}

}  // namespace loom::host
