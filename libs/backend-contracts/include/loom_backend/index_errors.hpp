// The wording of an index outside its range — an embedding id, a cross-entropy target — for every
// backend. backend/cpu finds such an index at the call; backend/cuda finds it on the device and
// reports it at the next synchronisation (plugins/backend-cuda/src/device_error_record.hpp). Both
// build the message here, so an error names the op's argument, its position and the allowed
// range in the same words whichever backend ran the op.
#pragma once

#include <cstdint>
#include <string>

namespace loom_backend {

/// "ids[3] = 30522 is outside [0, 30522)": `index` is the id's position in the flattened ids.
/// ArgumentChecks::fail prefixes the op ("embedding_gather: ...").
inline std::string id_out_of_range(int64_t index, int64_t id, int64_t vocab) {
  return "ids[" + std::to_string(index) + "] = " + std::to_string(id) + " is outside [0, " +
         std::to_string(vocab) + ")";
}

/// "targets[7] = 5 is outside [0, 4) and is not the ignore index -100": `row` is the batch row.
inline std::string target_out_of_range(int64_t row, int64_t target, int64_t num_classes,
                                       int64_t ignore_index) {
  return "targets[" + std::to_string(row) + "] = " + std::to_string(target) + " is outside [0, " +
         std::to_string(num_classes) + ") and is not the ignore index " + std::to_string(ignore_index);
}

}  // namespace loom_backend
