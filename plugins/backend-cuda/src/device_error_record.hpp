// The device error record: how an op reports an invalid id or target without making the host wait.
//
// embedding_gather, embedding_scatter_add and cross_entropy validate their ids/targets on the GPU
// (index_checks.cuh). The first invalid one is written into one DeviceErrorRecord in device memory
// — which op, the position (the batch row) and the bad value — and the op goes on, skipping the
// bad rows instead of touching memory outside the table. CudaBackend reads the record at the
// points where the host waits for the device anyway (copy_to_host, synchronize, the sync_check
// wait: cuda_backend.cpp), throws the error below, and clears the record. So the steady-state
// step has no synchronisation for validation, and a bad id still fails the run, naming the op and
// row in backend/cpu's words (loom_backend/index_errors.hpp), one wait point later.
//
// This header is plain C++ (the struct is shared by host and device code; the message is built
// on the host), so the decoding is unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <string>

#include "loom_backend/index_errors.hpp"

namespace loom_cuda {

/// The op that found an error. Stored in device memory: values are fixed, 0 means "no error".
enum class CheckedOp : int32_t {
  none = 0,
  embedding_gather = 1,
  embedding_scatter_add = 2,
  cross_entropy = 3,
  packed_rotary_apply = 4
};

/// The first invalid id/target since the record was last reported. A kernel claims it with an
/// integer atomicCAS of `op` from 0, so the first error wins and later ones leave it alone; only
/// the claiming thread writes the other fields.
struct DeviceErrorRecord {
  int32_t op;            ///< CheckedOp; 0 while no error was found
  int32_t reserved;      ///< keeps the int64 fields 8-byte aligned on host and device alike
  int64_t index;         ///< position in the flattened ids, or the batch row of the target
  int64_t value;         ///< the invalid id or target
  int64_t limit;         ///< the vocabulary size or num_classes: valid values are [0, limit)
  int64_t ignore_index;  ///< cross_entropy's ignore index (unused by the embedding ops)
};

/// The op's name as the Backend interface spells it; nullptr for an unknown code.
inline const char* checked_op_name(int32_t op) {
  switch (static_cast<CheckedOp>(op)) {
    case CheckedOp::embedding_gather:
      return "embedding_gather";
    case CheckedOp::embedding_scatter_add:
      return "embedding_scatter_add";
    case CheckedOp::cross_entropy:
      return "cross_entropy";
    case CheckedOp::packed_rotary_apply:
      return "packed_rotary_apply";
    case CheckedOp::none:
      break;
  }
  return nullptr;
}

/// The error text for `record` reported at the wait point `where` ("copy_to_host", ...): the same
/// words backend/cpu throws at the call, then where the device found it and where it surfaced.
/// Empty when the record holds no error.
inline std::string device_error_message(const DeviceErrorRecord& record, const char* where) {
  if (record.op == static_cast<int32_t>(CheckedOp::none)) return {};
  const char* op = checked_op_name(record.op);
  const std::string reported = std::string(" (found on the device, reported at ") + where + ")";
  if (op == nullptr)
    return "backend/cuda: the device error record holds the unknown op code " + std::to_string(record.op) +
           reported;
  const std::string problem =
      static_cast<CheckedOp>(record.op) == CheckedOp::cross_entropy
          ? loom_backend::target_out_of_range(record.index, record.value, record.limit, record.ignore_index)
          : loom_backend::id_out_of_range(record.index, record.value, record.limit);
  return std::string(op) + ": " + problem + reported;
}

}  // namespace loom_cuda
