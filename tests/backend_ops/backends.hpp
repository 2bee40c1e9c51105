// The backends every case runs on, loaded through the plugin registry as `loom run` loads them, so
// that one case drives each through the same loom::Backend interface and named interfaces:
//
//   cpu         backend/cpu (libloom-backend-cpu.so), two threads so its parallel paths run;
//   cpu-opaque  the test backend backend/cpu-opaque (host/tests/fixtures/opaque_backend_plugin.cpp):
//               backend/cpu's ops behind memory the host cannot dereference, so a case that
//               touches backend memory other than through copy_to_host/copy_from_host faults;
//   cuda        backend/cuda on device 0, when this build has it; without a usable CUDA device its
//               cases skip saying why, and fail under LOOM_REQUIRE_GPU=1 (tests/gpu/gpu_requirement.hpp).
//
// The reference is one more backend/cpu, on one thread, whose memory is host memory: a case runs
// the reference op on HostTensor views directly.
//
// Plugin files: the build's, compiled in; LOOM_PLUGIN_DIR (the folder of libloom-backend-cpu.so)
// and LOOM_BACKEND_CUDA_PLUGIN override them, as scripts/gpu-check sets them in a package.
#pragma once

#include <string>
#include <vector>

#include "loom/sdk/backend.hpp"
#include "plugin_loading/component.hpp"

namespace loom_backend_ops {

/// One backend the cases run on.
struct BackendUnderTest {
  std::string name;  // "cpu", "cpu-opaque", "cuda"
  loom::host::Component<loom::Backend> component;
  /// Its ops are backend/cpu's code (cpu, cpu-opaque): its results are the reference's bits
  /// wherever backend/cpu's do not depend on the thread count.
  bool runs_reference_code = false;

  loom::Backend& backend() const { return *component.get(); }
};

/// The backends of this build, in order: cpu, cpu-opaque, then cuda when it is built.
const std::vector<std::string>& backend_names();

/// `name` as a test-name suffix (letters, digits and underscores: "cpu_opaque").
std::string test_name_of(const std::string& name);

/// Empty when backend `name` can run here, else why not (backend/cuda without a usable device).
std::string why_not_available(const std::string& name);

/// True when a missing device must fail the cases instead of skipping them (LOOM_REQUIRE_GPU=1).
bool device_required();

/// The backend `name`, created once per process on first use.
BackendUnderTest& backend_under_test(const std::string& name);

/// The reference: backend/cpu on one thread, created once per process.
const BackendUnderTest& reference_backend();

}  // namespace loom_backend_ops
