// Initial parameter values (Hugging Face `_init_weights`, docs/decisions/initialisation.md).
//
// normal: N(0, std²) with std = initializer_range; zeros; ones. The normal stream of a parameter
// is keyed by (seed, parameter name), so adding or reordering blocks never changes the values of
// the others, and the values do not depend on threads or backend. Box–Muller over splitmix64.
#pragma once

#include <cstdint>
#include <span>

#include "model/parameter_table.hpp"

namespace loom::host {

/// Writes the initial values of `entry` into `values` (entry.count floats).
void initial_values(const ParameterEntry& entry, float std, uint64_t seed, std::span<float> values);

}  // namespace loom::host
