// Vector variants of expf/erff/tanhf/logf from glibc's libmvec, for `#pragma omp simd` loops.
//
// glibc declares these SIMD variants only under -ffast-math, which we do not want (NaN and
// infinity must survive for check_finite and the loss scaler). Redeclaring the functions with
// `omp declare simd` makes GCC call _ZGVdN8v_expf & co. (AVX2, ≤ 4 ulp) from vectorised loops
// without changing any other floating-point semantics. libm's linker script pulls in libmvec.
#pragma once

#include <cstdint>

extern "C" {
#pragma omp declare simd notinbranch
float expf(float) noexcept;
#pragma omp declare simd notinbranch
float erff(float) noexcept;
#pragma omp declare simd notinbranch
float tanhf(float) noexcept;
#pragma omp declare simd notinbranch
float logf(float) noexcept;
}

namespace loom_cpu {

/// y[i] = expf(x[i]) for kExpLanes lanes through one libmvec call. A `#pragma omp simd` loop over
/// a row sends its last (length mod 8) elements through scalar expf, which rounds differently
/// from the vector expf, so an element's exp would depend on the row's length; callers that need
/// the same bits for a key whatever the length (a padded row and the same row alone) go through
/// this call for every element, filling the lanes past the end with −∞ (exp 0).
constexpr int64_t kExpLanes = 8;
inline void exp_lanes(const float* x, float* y) {
#pragma omp simd simdlen(8)
  for (int64_t i = 0; i < kExpLanes; ++i) y[i] = expf(x[i]);
}

}  // namespace loom_cpu
