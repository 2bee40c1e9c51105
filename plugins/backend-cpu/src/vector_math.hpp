// Vector variants of expf/erff/tanhf/logf from glibc's libmvec, for `#pragma omp simd` loops.
//
// glibc declares these SIMD variants only under -ffast-math, which we do not want (NaN and
// infinity must survive for check_finite and the loss scaler). Redeclaring the functions with
// `omp declare simd` makes GCC call _ZGVdN8v_expf & co. (AVX2, ≤ 4 ulp) from vectorised loops
// without changing any other floating-point semantics. libm's linker script pulls in libmvec.
#pragma once

#include <algorithm>
#include <cmath>
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

/// f(i, exp(x(i))) for i in [0, count), in order: the values taken kExpLanes at a time through
/// exp_lanes, the lanes past the end filled with −∞ (exp 0), so element i's exp is the same
/// whatever `count` is.
template <typename X, typename F>
void exp_in_lanes(int64_t count, X&& x, F&& f) {
  alignas(32) float in[kExpLanes], out[kExpLanes];
  for (int64_t i0 = 0; i0 < count; i0 += kExpLanes) {
    const int64_t n = std::min(kExpLanes, count - i0);
    for (int64_t l = 0; l < kExpLanes; ++l) in[l] = l < n ? x(i0 + l) : -INFINITY;
    exp_lanes(in, out);
    for (int64_t l = 0; l < n; ++l) f(i0 + l, out[l]);
  }
}

}  // namespace loom_cpu
