// The parameter layout of optimizer.safetensors: which elements of its flat state tensors (the
// moments of every parameter, laid out as the flat master buffer) belong to which parameter.
//
// The writer records the layout in the file's metadata ("parameter_layout": JSON
// [[name, offset, count], ...]); a resume copies each parameter's elements by name into the
// current layout, so a run resumes correctly after the model's parameters were declared in another
// order, and a file whose parameters do not match the model is refused naming the parameter
// rather than loaded onto the wrong ones. A file without the record was written before it existed,
// in the layout unrecorded_parameter_layout() reconstructs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/parameter_table.hpp"

namespace loom::host {

/// One parameter's place in a flat state tensor.
struct StoredParameter {
  std::string name;
  size_t offset = 0;
  size_t count = 0;
};

/// The metadata key of the record.
inline constexpr const char* kParameterLayoutKey = "parameter_layout";

/// The record of `table`'s layout (the metadata value).
std::string parameter_layout_record(const ParameterTable& table);

/// The layout in a record; throws std::runtime_error naming `source` when it is malformed.
std::vector<StoredParameter> parse_parameter_layout(const std::string& record, const std::string& source);

/// The layout of a file written without a record: `table`'s parameters in the order Loom declared
/// them before the record existed (each attention projection's weight, then its bias), at the same
/// alignment.
std::vector<StoredParameter> unrecorded_parameter_layout(const ParameterTable& table);

/// Copies `stored` (`stored_count` floats laid out as `layout`, at any byte alignment: a mapped file) into
/// `out` (`out_count` floats laid out as `table`), parameter by parameter by name; elements between
/// parameters become 0. Throws std::runtime_error naming `source` and the parameter when one of `table`'s
/// parameters is not in `layout`, has another element count there, or lies outside the stored tensor.
void remap_state(const void* stored, size_t stored_count, const std::vector<StoredParameter>& layout,
                 const ParameterTable& table, float* out, size_t out_count, const std::string& source);

}  // namespace loom::host
