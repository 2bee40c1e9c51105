// Turning CUDA runtime statuses into loom::Error: every runtime call of the backend goes through
// cuda_check, so a failure names the op and the runtime's own message instead of crashing later.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "loom/sdk/error.hpp"

namespace loom_cuda {

/// Throws loom::Error "what: cudaErrorName (cudaGetErrorString)" unless `status` is cudaSuccess.
/// Out-of-memory becomes LOOM_E_OUT_OF_MEMORY, every other failure LOOM_E_DEVICE.
inline void cuda_check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  const loom_status code = status == cudaErrorMemoryAllocation ? LOOM_E_OUT_OF_MEMORY : LOOM_E_DEVICE;
  throw loom::Error(
      std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")", code);
}

/// Checks that the kernel launch just issued by `op` was accepted (bad configuration, no image for
/// this GPU...). Execution errors surface at the next synchronising call.
inline void check_launch(const char* op) {
  cuda_check(cudaGetLastError(), op);
}

}  // namespace loom_cuda
