// MemoryAccount: the device memory of a training run by class, computed from the layouts the host
// owns — the flat parameter buffers (ParameterTable), the activation arena (Model::
// arena_bytes_for), the staged batch (BatchStaging), the optimizer's state tensors and the step's
// small buffers — so it is known before anything is allocated, on any backend, and for models too
// large for the machine that computes it (`loom bench --memory`). Beside a backend that reports
// its allocations (MemoryUsage, loom/sdk/ops/memory_usage.hpp) it shows what the account does
// not explain: the backend's own allocations (peak requested − accounted) and its allocator's
// rounding (peak allocated − peak requested).
//
// Classes (bytes):
//   parameters          the weights the ops read: the 16-bit working copy in bf16/f16 compute,
//                       the f32 master itself in f32 compute (total elements × dtype size)
//   master_weights      the f32 master beside a 16-bit working copy (total × 4); 0 in f32
//   optimizer_state     the optimizer's state tensors in backend memory (tensors × total × 4:
//                       2 for Adam's and LAMB's moments); 0 when the step ends on the host
//   gradients           the flat f32 gradients (total × 4)
//   saved_activations   block outputs kept for backward, the blocks' saved tensors less attention's
//   saved_attention     what attention keeps for backward (blocks offering SavedAttentionBytes)
//   workspaces          the blocks' shared scratch, the two activation gradients, the loss, the
//                       window's loss sums and the non-finite flag
//   batch               the batch staged on the device
// "total" counts elements of the flat buffers, 64-byte alignment gaps between parameters included.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/sdk/ops/memory_usage.hpp"
#include "model/model.hpp"

namespace loom::host {

struct MemoryAccount {
  size_t parameters = 0;
  size_t master_weights = 0;
  size_t optimizer_state = 0;
  size_t gradients = 0;
  size_t saved_activations = 0;
  size_t saved_attention = 0;
  size_t workspaces = 0;
  size_t batch = 0;

  size_t total() const;
};

/// The account of training steps on `model` with batches up to `shape`. `optimizer_state_tensors`:
/// how many flat f32 state tensors the optimizer keeps in backend memory (0 on the host path);
/// `step_on_backend`: the step ends on the backend (BackendUpdate, with its non-finite flag).
MemoryAccount account_device_memory(const Model& model, const loom::ActivationShape& shape,
                                    size_t optimizer_state_tensors, bool step_on_backend);

/// `{"parameters": bytes, ..., "accounted": total}`, and with `usage` (the backend's MemoryUsage)
/// also `"backend": {requested, peak_requested, allocated, peak_allocated, reserved}`,
/// `"backend_own"` (peak requested − accounted) and `"allocator_rounding"` (peak allocated − peak
/// requested).
nlohmann::json memory_account_json(const MemoryAccount& account, const loom::MemoryUsageBytes* usage);

/// The same as text lines, each starting with `indent`.
std::string memory_account_table(const MemoryAccount& account, const loom::MemoryUsageBytes* usage,
                                 const std::string& indent);

}  // namespace loom::host
