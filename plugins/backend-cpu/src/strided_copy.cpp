// fill, zero, copy (any strides) and cast (f32/bf16/f16 conversions).
//
// Strided views are walked as outer rows × the last dimension: the outer multi-index is decoded
// once per row, the inner loop is a strided (usually unit-stride) run the compiler vectorises.
#include <cstring>

#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "loom_backend/element_words.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.hpp"

namespace loom_cpu {
namespace {

/// Element offset of outer row `row` (row-major over dims [0, ndim-1)) in a view with `strides`.
int64_t row_offset(const loom::Tensor& shape_of, const int64_t* strides, int64_t row) {
  int64_t offset = 0;
  for (int d = shape_of.ndim - 2; d >= 0; --d) {
    const int64_t extent = shape_of.shape[d];
    offset += (row % extent) * strides[d];
    row /= extent;
  }
  return offset;
}

template <typename Word>
void copy_rows(const loom::Tensor& src, const loom::Tensor& dst, int threads) {
  const int64_t inner = src.ndim == 0 ? 1 : src.shape[src.ndim - 1];
  if (inner == 0) return;
  const int64_t rows = src.numel() / inner;
  const int64_t s_in = src.ndim == 0 ? 1 : src.strides[src.ndim - 1];
  const int64_t d_in = dst.ndim == 0 ? 1 : dst.strides[dst.ndim - 1];
  const Word* s = static_cast<const Word*>(src.data);
  Word* d = static_cast<Word*>(dst.data);
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * inner > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const Word* sr = s + row_offset(src, src.strides, r);
    Word* dr = d + row_offset(dst, dst.strides, r);
    if (s_in == 1 && d_in == 1) {
      std::memcpy(dr, sr, static_cast<size_t>(inner) * sizeof(Word));
    } else {
      for (int64_t i = 0; i < inner; ++i) dr[i * d_in] = sr[i * s_in];
    }
  }
}

template <typename Word>
void fill_rows(const loom::Tensor& x, Word value, int threads) {
  const int64_t inner = x.ndim == 0 ? 1 : x.shape[x.ndim - 1];
  if (inner == 0) return;
  const int64_t rows = x.numel() / inner;
  const int64_t stride = x.ndim == 0 ? 1 : x.strides[x.ndim - 1];
  Word* base = static_cast<Word*>(x.data);
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * inner > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    Word* row = base + row_offset(x, x.strides, r);
    for (int64_t i = 0; i < inner; ++i) row[i * stride] = value;
  }
}

}  // namespace

void CpuBackend::fill(const loom::Tensor& x, double value) {
  const auto check = checks("fill");
  loom_backend::check_fill(check, x);
  loom_backend::with_word(x.dtype, [&](auto word) {
    fill_rows(x, loom_backend::bits_of<decltype(word)>(value, x.dtype), threads_);
  });
}

void CpuBackend::zero(const loom::Tensor& x) {
  fill(x, 0.0);
}

void CpuBackend::copy(const loom::Tensor& src, const loom::Tensor& dst) {
  const auto check = checks("copy");
  loom_backend::check_copy(check, src, dst);
  loom_backend::with_word(src.dtype, [&](auto word) { copy_rows<decltype(word)>(src, dst, threads_); });
}

void CpuBackend::cast(const loom::Tensor& src, const loom::Tensor& dst) {
  run_op(
      "cast",
      [&](const ArgumentChecks& check) {
        loom_backend::check_cast(check, src, dst);
        return src.numel();
      },
      {src.dtype, dst.dtype},
      [&](int64_t n, auto s_tag, auto d_tag) {
        using S = decltype(s_tag);
        using D = decltype(d_tag);
        const S* s = static_cast<const S*>(src.data);
        D* d = static_cast<D*>(dst.data);
        const int64_t chunks = (n + kParallelMinElements - 1) / kParallelMinElements;
#pragma omp parallel for num_threads(threads_) schedule(static) if (chunks > 1)
        for (int64_t chunk = 0; chunk < chunks; ++chunk) {
          const int64_t begin = chunk * kParallelMinElements;
          convert_range(s, d, begin, begin + kParallelMinElements < n ? begin + kParallelMinElements : n);
        }
      });
}

}  // namespace loom_cpu
