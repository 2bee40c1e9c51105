// OpenMP wait-policy default; see openmp_wait_policy.hpp.
#include "plugin_loading/openmp_wait_policy.hpp"

#include <cstdlib>

namespace loom::host {

bool apply_openmp_wait_default() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return false;
  return ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0) == 0;
}

}  // namespace loom::host
