// Vector variants of expf/erff/tanhf/logf from glibc's libmvec, for `#pragma omp simd` loops.
//
// glibc declares these SIMD variants only under -ffast-math, which we do not want (NaN and
// infinity must survive for check_finite and the loss scaler). Redeclaring the functions with
// `omp declare simd` makes GCC call _ZGVdN8v_expf & co. (AVX2, ≤ 4 ulp) from vectorised loops
// without changing any other floating-point semantics. libm's linker script pulls in libmvec.
#pragma once

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
