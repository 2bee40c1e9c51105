// Device memory by class; see memory_account.hpp.
#include "train/memory_account.hpp"

#include <array>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "model/batch_staging.hpp"
#include "train/backend_update.hpp"
#include "train/loss_sums.hpp"

namespace loom::host {
namespace {

// The classes in the order they are printed: JSON key and text label.
std::array<std::pair<const char*, const char*>, 8> class_names() {
  return {{{"parameters", "parameters"},
           {"master_weights", "master weights"},
           {"optimizer_state", "optimizer state"},
           {"gradients", "gradients"},
           {"saved_activations", "saved activations"},
           {"saved_attention", "attention's saved state"},
           {"workspaces", "workspaces"},
           {"batch", "batch"}}};
}

std::array<size_t, 8> class_bytes(const MemoryAccount& a) {
  return {a.parameters,        a.master_weights,  a.optimizer_state, a.gradients,
          a.saved_activations, a.saved_attention, a.workspaces,      a.batch};
}

std::string bytes_text(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
  if (bytes >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  if (bytes >= 1024.0) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{:.0f} B", bytes);
}

}  // namespace

size_t MemoryAccount::total() const {
  size_t sum = 0;
  for (size_t bytes : class_bytes(*this)) sum += bytes;
  return sum;
}

MemoryAccount account_device_memory(const Model& model, const loom::ActivationShape& shape,
                                    size_t optimizer_state_tensors, bool step_on_backend) {
  const size_t total = model.parameters().total_elements();
  MemoryAccount a;
  const bool working_copy = model.compute_dtype() != loom::DType::f32;
  a.parameters = total * (working_copy ? 2 : sizeof(float));
  a.master_weights = working_copy ? total * sizeof(float) : 0;
  a.optimizer_state = optimizer_state_tensors * total * sizeof(float);
  a.gradients = total * sizeof(float);
  const ArenaBytes arena = model.arena_bytes_for(shape);
  a.saved_attention = arena.saved_attention;
  a.saved_activations = arena.block_outputs + arena.saved - arena.saved_attention;
  // Requested sizes, as allocate() sees them (the arena is one allocation of its aligned parts).
  a.workspaces = arena.scratch + arena.activation_gradients + arena.loss + LossSums::kDeviceBytes +
                 (step_on_backend ? BackendUpdate::kFlagBytes : 0);
  a.batch = BatchStaging::device_bytes(shape);
  return a;
}

nlohmann::json memory_account_json(const MemoryAccount& account, const loom::MemoryUsageBytes* usage) {
  nlohmann::json j = nlohmann::json::object();
  const auto names = class_names();
  const auto bytes = class_bytes(account);
  for (size_t i = 0; i < names.size(); ++i) j[names[i].first] = bytes[i];
  j["accounted"] = account.total();
  if (usage != nullptr) {
    j["backend"] = {{"requested", usage->requested},
                    {"peak_requested", usage->peak_requested},
                    {"allocated", usage->allocated},
                    {"peak_allocated", usage->peak_allocated},
                    {"reserved", usage->reserved}};
    j["backend_own"] = static_cast<int64_t>(usage->peak_requested) - static_cast<int64_t>(account.total());
    j["allocator_rounding"] =
        static_cast<int64_t>(usage->peak_allocated) - static_cast<int64_t>(usage->peak_requested);
  }
  return j;
}

std::string memory_account_table(const MemoryAccount& account, const loom::MemoryUsageBytes* usage,
                                 const std::string& indent) {
  const auto names = class_names();
  const auto bytes = class_bytes(account);
  const double total = static_cast<double>(account.total());
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += fmt::format("{}{:<26}{:>12}  {:5.1f}%\n", indent, names[i].second,
                        bytes_text(static_cast<double>(bytes[i])),
                        total > 0 ? 100.0 * static_cast<double>(bytes[i]) / total : 0.0);
  text += fmt::format("{}{:<26}{:>12}\n", indent, "accounted", bytes_text(total));
  if (usage != nullptr) {
    const double own = static_cast<double>(usage->peak_requested) - total;
    text += fmt::format(
        "{}the backend at its peak: {} requested ({}{} its own), {} allocated ({} of rounding), {} reserved "
        "now\n",
        indent, bytes_text(static_cast<double>(usage->peak_requested)), own < 0 ? "-" : "",
        bytes_text(own < 0 ? -own : own), bytes_text(static_cast<double>(usage->peak_allocated)),
        bytes_text(static_cast<double>(usage->peak_allocated - usage->peak_requested)),
        bytes_text(static_cast<double>(usage->reserved)));
  }
  return text;
}

}  // namespace loom::host
