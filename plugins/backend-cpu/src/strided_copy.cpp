// fill, zero, copy (any strides) and cast (f32/bf16/f16 conversions).
//
// Strided views are walked as outer rows × the last dimension: the outer multi-index is decoded
// once per row, the inner loop is a strided (usually unit-stride) run the compiler vectorises.
#include <cstring>

#include "argument_checks.hpp"
#include "cpu_backend.hpp"
#include "float_storage.hpp"

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

/// The bit pattern of `value` in `dtype`, in an unsigned word of the dtype's size.
template <typename Word>
Word bits_of(double value, loom::DType dtype) {
  unsigned char bytes[8] = {};
  const auto put = [&](auto v) { std::memcpy(bytes, &v, sizeof v); };
  switch (dtype) {
    case DType::f32:
      put(static_cast<float>(value));
      break;
    case DType::bf16:
      put(loom::f32_to_bf16_bits(static_cast<float>(value)));
      break;
    case DType::f16:
      put(loom::f32_to_f16_bits(static_cast<float>(value)));
      break;
    case DType::i32:
      put(static_cast<int32_t>(value));
      break;
    case DType::i64:
      put(static_cast<int64_t>(value));
      break;
    case DType::i8:
      put(static_cast<int8_t>(value));
      break;
    case DType::u8:
      put(static_cast<uint8_t>(value));
      break;
  }
  Word word;
  std::memcpy(&word, bytes, sizeof word);
  return word;
}

/// Calls body(Word{}) with an unsigned integer type of the dtype's size.
template <typename Body>
void with_word(loom::DType dtype, Body&& body) {
  switch (loom::dtype_size(dtype)) {
    case 1:
      body(uint8_t{});
      return;
    case 2:
      body(uint16_t{});
      return;
    case 4:
      body(uint32_t{});
      return;
    default:
      body(uint64_t{});
      return;
  }
}

void check_view(const ArgumentChecks& check, const char* name, const loom::Tensor& t) {
  check.require(t.defined() || t.numel() == 0, std::string(name) + " is absent");
  check.require(t.device.type == loom::DeviceType::cpu, std::string(name) + " is not in CPU memory");
}

}  // namespace

void CpuBackend::fill(const loom::Tensor& x, double value) {
  const ArgumentChecks check("fill");
  check_view(check, "x", x);
  with_word(x.dtype, [&](auto word) { fill_rows(x, bits_of<decltype(word)>(value, x.dtype), threads_); });
}

void CpuBackend::zero(const loom::Tensor& x) {
  fill(x, 0.0);
}

void CpuBackend::copy(const loom::Tensor& src, const loom::Tensor& dst) {
  const ArgumentChecks check("copy");
  check_view(check, "src", src);
  check_view(check, "dst", dst);
  check.same_shape("src", src, "dst", dst);
  check.require(src.dtype == dst.dtype, std::string("src is ") + loom::dtype_name(src.dtype) +
                                            " but dst is " + loom::dtype_name(dst.dtype) +
                                            "; use cast to convert");
  with_word(src.dtype, [&](auto word) { copy_rows<decltype(word)>(src, dst, threads_); });
}

void CpuBackend::cast(const loom::Tensor& src, const loom::Tensor& dst) {
  const ArgumentChecks check("cast");
  check.tensor("src", src, {DType::f32, DType::bf16, DType::f16});
  check.tensor("dst", dst, {DType::f32, DType::bf16, DType::f16});
  check.same_shape("src", src, "dst", dst);
  const int64_t n = src.numel();
  with_float_storage(src.dtype, "cast", [&](auto s_tag) {
    with_float_storage(dst.dtype, "cast", [&](auto d_tag) {
      using S = decltype(s_tag);
      using D = decltype(d_tag);
      const S* s = static_cast<const S*>(src.data);
      D* d = static_cast<D*>(dst.data);
      const int64_t chunks = (n + kParallelMinElements - 1) / kParallelMinElements;
#pragma omp parallel for num_threads(threads_) schedule(static) if (chunks > 1)
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t begin = chunk * kParallelMinElements;
        const int64_t end = begin + kParallelMinElements < n ? begin + kParallelMinElements : n;
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) store(d, i, load(s, i));
      }
    });
  });
}

}  // namespace loom_cpu
