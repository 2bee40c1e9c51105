// Skipping a GPU test, or failing it: the one rule for every GoogleTest GPU test of the tree
// (plugins/backend-cuda/tests, plugins/comm-nccl/tests). The shell side is gpu_requirement.sh.
//
// Without a usable CUDA device a GPU test skips and prints why, so the suite passes on machines
// without a GPU. LOOM_REQUIRE_GPU=1 turns every such skip into a failure: on a machine that is
// meant to have a GPU (scripts/gpu-check sets it), a broken driver or a hidden device must not
// pass the suite by skipping it.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

namespace loom_gpu_test {

/// True when LOOM_REQUIRE_GPU is set to anything but "" or "0".
inline bool gpu_required() {
  const char* value = std::getenv("LOOM_REQUIRE_GPU");
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

/// Empty when a CUDA device is usable, else why not (the runtime's own words).
inline std::string no_cuda_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
  }
  return count == 0 ? "cudaGetDeviceCount reports 0 devices" : "";
}

/// The exit status of a test program that cannot run without a GPU (one not driven by
/// GoogleTest's skip, e.g. a main() that must construct a communicator first): prints the reason
/// and returns 77 (CTest's SKIP_RETURN_CODE), or 1 under LOOM_REQUIRE_GPU=1.
inline int exit_status_without_gpu(const std::string& what, const std::string& reason) {
  if (gpu_required()) {
    std::cout << "FAILED: LOOM_REQUIRE_GPU=1 but no CUDA device (" << reason << "); " << what
              << " needs one\n";
    return 1;
  }
  std::cout << "SKIPPED: no CUDA device (" << reason << "); " << what << " needs one\n";
  return 77;
}

}  // namespace loom_gpu_test

/// In a test body or SetUp(): skips without a CUDA device, or fails under LOOM_REQUIRE_GPU=1.
#define LOOM_SKIP_WITHOUT_CUDA()                                                  \
  do {                                                                            \
    const std::string loom_reason = ::loom_gpu_test::no_cuda_device_reason();     \
    if (!loom_reason.empty()) {                                                   \
      if (::loom_gpu_test::gpu_required())                                        \
        GTEST_FAIL() << "LOOM_REQUIRE_GPU=1 but no CUDA device: " << loom_reason; \
      else                                                                        \
        GTEST_SKIP() << "no CUDA device: " << loom_reason;                        \
    }                                                                             \
  } while (0)
