// The two paths of backend/cuda's element-wise kernels — four elements per thread in one access
// each way (sizes a multiple of 4, views aligned: row_quads.cuh) and one element per thread
// (views one element past their alignment, sizes with a remainder) — for cast, bias + GELU forward
// and backward, dropout and embedding gather: each against backend/cpu (exactly where the op is
// exact, to elementwise_test.cpp's tolerances for GELU) and the paths against each other bit for
// bit on the data they share.
//
// Which path runs is chosen on the host from the sizes and the data pointers, so the tests choose
// it by where they place the data: allocations are 256-byte aligned (checked), shift 0 allows the
// quad path, shift 1 forbids it. A grid holds at most 65536 × 256 threads (grid_for), so the quad
// kernels' grid-stride loops go round only past 2^26 elements: the large cases use 2^26 + 1024.
#include <cstdint>
#include <cstring>

#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

const DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};

/// Rows × columns of the large cases: 2^26 + 1024 elements, 2^24 + 256 quads (> 65536 · 256).
constexpr int64_t kLoopingRows = 65537, kLoopingCols = 1024;

/// A device copy of `host` starting `shift` elements into its own allocation.
class PlacedTensor {
 public:
  PlacedTensor(loom::Backend& backend, const HostTensor& host, int64_t shift)
      : dtype_(host.dtype),
        shape_(host.shape),
        shift_bytes_(static_cast<size_t>(shift) * loom::dtype_size(host.dtype)),
        buffer_(backend, shift_bytes_ + host.bytes.size()) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer_.data()) % 256, 0u)
        << "test assumption: device allocations are 256-byte aligned";
    backend.copy_from_host(start(), host.bytes.data(), host.bytes.size());
  }
  loom::Tensor view() const {
    return loom::Tensor::contiguous(start(), dtype_, shape_.data(), static_cast<int>(shape_.size()),
                                    loom::Device{loom::DeviceType::cuda, 0});
  }
  HostTensor download(loom::Backend& backend) const {
    HostTensor host = HostTensor::zeros(dtype_, shape_);
    backend.copy_to_host(host.bytes.data(), start(), host.bytes.size());
    return host;
  }

 private:
  void* start() const { return static_cast<char*>(buffer_.data()) + shift_bytes_; }

  DType dtype_;
  std::vector<int64_t> shape_;
  size_t shift_bytes_;
  loom::Buffer buffer_;
};

/// Elements [first, first + count) of `host` as a tensor of `shape`.
HostTensor slice(const HostTensor& host, int64_t first, int64_t count, std::vector<int64_t> shape) {
  HostTensor out = HostTensor::zeros(host.dtype, std::move(shape));
  EXPECT_EQ(out.numel(), count) << "test bug: slice shape";
  const size_t size = loom::dtype_size(host.dtype);
  std::memcpy(out.bytes.data(), host.bytes.data() + static_cast<size_t>(first) * size,
              static_cast<size_t>(count) * size);
  return out;
}


std::string gelu_name(loom::Gelu variant) {
  return variant == loom::Gelu::erf ? "erf" : "tanh";
}

class VectorizedPathsTest : public CudaOpTest {
 protected:
  PlacedTensor place(const HostTensor& host, int64_t shift) { return PlacedTensor(*gpu, host, shift); }

  /// cast of `src` to `to` with src and dst placed at the given shifts.
  HostTensor gpu_cast(const HostTensor& src, DType to, int64_t src_shift, int64_t dst_shift) {
    const PlacedTensor in = place(src, src_shift), out = place(HostTensor::zeros(to, src.shape), dst_shift);
    gpu->cast(in.view(), out.view());
    return out.download(*gpu);
  }
  /// dropout_forward of `x` into `to` with x and y placed at `shift`.
  HostTensor gpu_dropout(const HostTensor& x, DType to, float p, uint64_t offset, int64_t shift) {
    const PlacedTensor in = place(x, shift), out = place(HostTensor::zeros(to, x.shape), shift);
    gpu->dropout_forward(in.view(), out.view(), p, kDropoutSeed, offset);
    return out.download(*gpu);
  }
  /// bias_gelu_forward with x and y at `data_shift`, bias (when given) at `bias_shift`.
  HostTensor gpu_gelu_forward(const HostTensor& x, const HostTensor* bias, DType to, loom::Gelu variant,
                              int64_t data_shift, int64_t bias_shift) {
    const PlacedTensor in = place(x, data_shift), out = place(HostTensor::zeros(to, x.shape), data_shift);
    const PlacedTensor b = place(bias != nullptr ? *bias : HostTensor::zeros(DType::f32, {1}), bias_shift);
    gpu->bias_gelu_forward(in.view(), bias != nullptr ? b.view() : loom::Tensor{}, out.view(), variant);
    return out.download(*gpu);
  }
  /// bias_gelu_backward: dx and dbias (dbias starts from `dbias0`) with dy, x and dx at `data_shift`,
  /// bias and dbias (when given) at `bias_shift`.
  std::pair<HostTensor, HostTensor> gpu_gelu_backward(const HostTensor& dy, const HostTensor& x,
                                                      const HostTensor* bias, const HostTensor& dbias0,
                                                      loom::Gelu variant, int64_t data_shift,
                                                      int64_t bias_shift) {
    const PlacedTensor dy_g = place(dy, data_shift), x_g = place(x, data_shift);
    const PlacedTensor dx_g = place(HostTensor::zeros(DType::f32, dy.shape), data_shift);
    const PlacedTensor b = place(bias != nullptr ? *bias : dbias0, bias_shift),
                       db = place(dbias0, bias_shift);
    gpu->bias_gelu_backward(dy_g.view(), x_g.view(), bias != nullptr ? b.view() : loom::Tensor{}, dx_g.view(),
                            bias != nullptr ? db.view() : loom::Tensor{}, variant);
    return {dx_g.download(*gpu), db.download(*gpu)};
  }
  /// embedding_gather with the table and out at the given shifts; out starts from `out0`.
  HostTensor gpu_gather(const HostTensor& table, const HostTensor& ids, const HostTensor& out0,
                        bool accumulate, int64_t table_shift, int64_t out_shift) {
    const PlacedTensor t = place(table, table_shift), i = place(ids, 0), out = place(out0, out_shift);
    gpu->embedding_gather(t.view(), i.view(), out.view(), accumulate);
    return out.download(*gpu);
  }

  static constexpr uint64_t kDropoutSeed = 0x1234567890abcdefull;
};

TEST_F(VectorizedPathsTest, CastQuadAndScalarPathsGiveTheCpuBits) {
  const int64_t n = 4 * 771;
  std::vector<float> values = random_floats(n, 5, -70000.0f, 70000.0f);
  values[0] = 1e-7f;  // f16 subnormal
  values[1] = 65519.0f;
  values[2] = 65520.0f;  // rounds to f16 infinity
  values[3] = -0.0f;
  values[5] = 1.00390625f;  // 1 + 2^-8: a bf16 tie, rounds to even
  // (src shift, dst shift): both aligned (quad path: 16 bytes for f32, 8 for 16-bit), then every
  // way of leaving it; shift 2 is 8 bytes of f32 (scalar) but 4 of 16-bit (scalar), shift 4 is
  // 16 bytes of f32 and 8 of 16-bit (quad path again).
  const std::pair<int64_t, int64_t> shifts[] = {{0, 0}, {1, 1}, {1, 0}, {0, 1}, {2, 2}, {4, 4}};
  for (DType from : kFloatTypes)
    for (DType to : kFloatTypes) {
      const std::string what = std::string(loom::dtype_name(from)) + " → " + loom::dtype_name(to);
      HostTensor src = HostTensor::of(values, from, {n});
      HostTensor expected = HostTensor::zeros(to, {n});
      cpu.cast(src.view(), expected.view());
      HostTensor quads = gpu_cast(src, to, 0, 0);
      expect_same_bits(quads, expected, what + " (quads) against the CPU");
      for (const auto& [src_shift, dst_shift] : shifts)
        expect_same_bits(gpu_cast(src, to, src_shift, dst_shift), quads,
                         what + " src shift " + std::to_string(src_shift) + ", dst shift " +
                             std::to_string(dst_shift) + " against the aligned run");
      // A remainder (n % 4 = 3, aligned): the scalar path over the first n − 1 elements.
      HostTensor head = gpu_cast(slice(src, 0, n - 1, {n - 1}), to, 0, 0);
      expect_same_bits(head, 0, quads, 0, n - 1, what + " remainder against the aligned run");
    }
}

TEST_F(VectorizedPathsTest, CastPastOneGridOfQuadsAndOfElements) {
  const int64_t n = kLoopingRows * kLoopingCols;
  const std::vector<float> values = random_floats(n, 6, -300.0f, 300.0f);
  for (auto [from, to] : {std::pair{DType::f32, DType::bf16}, std::pair{DType::bf16, DType::f32}}) {
    const std::string what = std::string(loom::dtype_name(from)) + " → " + loom::dtype_name(to);
    HostTensor src = HostTensor::of(values, from, {n});
    HostTensor expected = HostTensor::zeros(to, {n});
    cpu.cast(src.view(), expected.view());
    expect_same_bits(gpu_cast(src, to, 0, 0), expected, what + " quads, looping");
    expect_same_bits(gpu_cast(src, to, 1, 1), expected, what + " scalar, looping");
  }
}

TEST_F(VectorizedPathsTest, BiasGeluForwardQuadAndScalarPathsAgree) {
  const int64_t rows = 37, cols = 772;
  HostTensor bias = HostTensor::of(random_floats(cols, 4), DType::f32, {cols});
  for (loom::Gelu variant : {loom::Gelu::erf, loom::Gelu::tanh})
    for (DType x_type : kFloatTypes)
      for (DType y_type : kFloatTypes)
        for (bool with_bias : {true, false}) {
          const std::string what = "gelu " + gelu_name(variant) + " " + loom::dtype_name(x_type) + " → " +
                                   loom::dtype_name(y_type) + (with_bias ? " bias" : "");
          HostTensor x = HostTensor::of(random_floats(rows * cols, 3, -4.0f, 4.0f), x_type, {rows, cols});
          const HostTensor* b = with_bias ? &bias : nullptr;
          HostTensor expected = HostTensor::zeros(y_type, {rows, cols});
          cpu.bias_gelu_forward(x.view(), with_bias ? bias.view() : loom::Tensor{}, expected.view(), variant);
          HostTensor quads = gpu_gelu_forward(x, b, y_type, variant, 0, 0);
          expect_close(quads.floats(), expected.floats(), rtol_for(y_type), 1e-5 + atol_for(y_type),
                       what + " (quads) against the CPU");
          // x and y one element off (and, with a bias, the bias alone): the scalar path, same bits.
          expect_same_bits(gpu_gelu_forward(x, b, y_type, variant, 1, 0), quads, what + " x, y shifted");
          if (with_bias)
            expect_same_bits(gpu_gelu_forward(x, b, y_type, variant, 0, 1), quads, what + " bias shifted");
          // In place (y aliasing x) on the quad path.
          if (x_type == y_type) {
            const PlacedTensor inout = place(x, 0);
            const PlacedTensor b_g = place(bias, 0);
            gpu->bias_gelu_forward(inout.view(), with_bias ? b_g.view() : loom::Tensor{}, inout.view(),
                                   variant);
            expect_same_bits(inout.download(*gpu), quads, what + " in place");
          }
          // Without a bias the op is elementwise: a remainder (n % 4 = 3) over the first n − 1 elements.
          if (!with_bias) {
            HostTensor head = gpu_gelu_forward(slice(x, 0, rows * cols - 1, {rows * cols - 1}), nullptr,
                                               y_type, variant, 0, 0);
            expect_same_bits(head, 0, quads, 0, rows * cols - 1, what + " remainder");
          }
        }
  // C % 4 ≠ 0: the scalar path, against the CPU.
  const int64_t odd = 771;
  HostTensor x = HostTensor::of(random_floats(rows * odd, 7, -4.0f, 4.0f), DType::bf16, {rows, odd});
  HostTensor odd_bias = HostTensor::of(random_floats(odd, 8), DType::f32, {odd});
  HostTensor expected = HostTensor::zeros(DType::bf16, {rows, odd});
  cpu.bias_gelu_forward(x.view(), odd_bias.view(), expected.view(), loom::Gelu::erf);
  expect_close(gpu_gelu_forward(x, &odd_bias, DType::bf16, loom::Gelu::erf, 0, 0).floats(), expected.floats(),
               rtol_for(DType::bf16), 1e-5 + atol_for(DType::bf16), "gelu C = 771");
}

TEST_F(VectorizedPathsTest, BiasGeluBackwardQuadAndScalarPathsAgree) {
  const int64_t rows = 37, cols = 772;
  HostTensor bias = HostTensor::of(random_floats(cols, 4), DType::f32, {cols});
  HostTensor dbias0 = HostTensor::of(random_floats(cols, 6), DType::f32, {cols});
  HostTensor dy = HostTensor::of(random_floats(rows * cols, 5), DType::f32, {rows, cols});
  for (loom::Gelu variant : {loom::Gelu::erf, loom::Gelu::tanh})
    for (DType x_type : kFloatTypes)
      for (bool with_bias : {true, false}) {
        const std::string what = "gelu backward " + gelu_name(variant) + " " + loom::dtype_name(x_type) +
                                 (with_bias ? " bias" : "");
        HostTensor x = HostTensor::of(random_floats(rows * cols, 3, -4.0f, 4.0f), x_type, {rows, cols});
        const HostTensor* b = with_bias ? &bias : nullptr;
        HostTensor dx = HostTensor::zeros(DType::f32, {rows, cols});
        HostTensor dbias = dbias0;
        cpu.bias_gelu_backward(dy.view(), x.view(), with_bias ? bias.view() : loom::Tensor{}, dx.view(),
                               with_bias ? dbias.view() : loom::Tensor{}, variant);
        const auto [quad_dx, quad_dbias] = gpu_gelu_backward(dy, x, b, dbias0, variant, 0, 0);
        expect_close(quad_dx.floats(), dx.floats(), 1e-5, 1e-5, what + " dx (quads) against the CPU");
        if (with_bias)
          expect_close(quad_dbias.floats(), dbias.floats(), 1e-5, 1e-4,
                       what + " dbias (quads) against the CPU");
        // dy, x and dx one element off, then the bias alone: the scalar path; dbias sums the same dx.
        for (auto [data_shift, bias_shift] :
             {std::pair<int64_t, int64_t>{1, 0}, std::pair<int64_t, int64_t>{0, 1}}) {
          if (!with_bias && bias_shift != 0) continue;
          const auto [scalar_dx, scalar_dbias] =
              gpu_gelu_backward(dy, x, b, dbias0, variant, data_shift, bias_shift);
          const std::string shifted = what + (data_shift != 0 ? " dy, x, dx shifted" : " bias shifted");
          expect_same_bits(scalar_dx, quad_dx, shifted);
          if (with_bias) expect_same_bits(scalar_dbias, quad_dbias, shifted + " dbias");
        }
        // dx aliasing dy on the quad path.
        const PlacedTensor grad = place(dy, 0), x_g = place(x, 0), b_g = place(bias, 0);
        gpu->bias_gelu_backward(grad.view(), x_g.view(), with_bias ? b_g.view() : loom::Tensor{}, grad.view(),
                                loom::Tensor{}, variant);
        expect_same_bits(grad.download(*gpu), quad_dx, what + " dx aliasing dy");
      }
}

TEST_F(VectorizedPathsTest, BiasGeluPastOneGridOfQuadsAndOfElements) {
  const int64_t rows = kLoopingRows, cols = kLoopingCols;
  HostTensor x = HostTensor::of(random_floats(rows * cols, 9, -4.0f, 4.0f), DType::bf16, {rows, cols});
  HostTensor bias = HostTensor::of(random_floats(cols, 10), DType::f32, {cols});
  HostTensor y = HostTensor::zeros(DType::bf16, {rows, cols});
  cpu.bias_gelu_forward(x.view(), bias.view(), y.view(), loom::Gelu::erf);
  HostTensor quads = gpu_gelu_forward(x, &bias, DType::bf16, loom::Gelu::erf, 0, 0);
  expect_close(quads.floats(), y.floats(), rtol_for(DType::bf16), 1e-5 + atol_for(DType::bf16),
               "gelu quads, looping");
  expect_same_bits(gpu_gelu_forward(x, &bias, DType::bf16, loom::Gelu::erf, 1, 1), quads,
                   "gelu scalar, looping");

  HostTensor dy = HostTensor::of(random_floats(rows * cols, 11), DType::f32, {rows, cols});
  HostTensor dbias0 = HostTensor::zeros(DType::f32, {cols});
  HostTensor dx = HostTensor::zeros(DType::f32, {rows, cols});
  HostTensor dbias = dbias0;
  cpu.bias_gelu_backward(dy.view(), x.view(), bias.view(), dx.view(), dbias.view(), loom::Gelu::erf);
  const auto [quad_dx, quad_dbias] = gpu_gelu_backward(dy, x, &bias, dbias0, loom::Gelu::erf, 0, 0);
  expect_close(quad_dx.floats(), dx.floats(), 1e-5, 1e-5, "gelu backward dx quads, looping");
  // 65537 rows summed in another order than the CPU's: bias_grad's tolerance for tall inputs.
  expect_close(quad_dbias.floats(), dbias.floats(), 1e-4, 1e-2, "gelu backward dbias quads, looping");
  const auto [scalar_dx, scalar_dbias] = gpu_gelu_backward(dy, x, &bias, dbias0, loom::Gelu::erf, 1, 1);
  expect_same_bits(scalar_dx, quad_dx, "gelu backward dx scalar, looping");
  expect_same_bits(scalar_dbias, quad_dbias, "gelu backward dbias scalar, looping");
}

TEST_F(VectorizedPathsTest, DropoutQuadAndScalarPathsDropTheSameElements) {
  const int64_t n = 4 * 771;
  for (DType in : kFloatTypes)
    for (DType out : {DType::f32, DType::bf16})
      for (uint64_t offset : {uint64_t{0}, uint64_t{8}, (uint64_t{1} << 33) + 4})  // offset % 4 = 0: quads
        for (float p : {0.1f, 0.5f}) {
          const std::string what = "dropout " + std::string(loom::dtype_name(in)) + " → " +
                                   loom::dtype_name(out) + " offset " + std::to_string(offset) + " p " +
                                   std::to_string(p);
          HostTensor x = HostTensor::of(random_floats(n, 1), in, {n});
          HostTensor expected = HostTensor::zeros(out, {n});
          cpu.dropout_forward(x.view(), expected.view(), p, kDropoutSeed, offset);
          HostTensor quads = gpu_dropout(x, out, p, offset, 0);
          expect_same_bits(quads, expected, what + " (quads) against the CPU");
          expect_same_bits(gpu_dropout(x, out, p, offset, 1), quads, what + " x, y shifted");
          // A remainder (n % 4 = 3): the scalar path over the first n − 1 elements.
          expect_same_bits(gpu_dropout(slice(x, 0, n - 1, {n - 1}), out, p, offset, 0), 0, quads, 0, n - 1,
                           what + " remainder");
          // Elements 1 .. n − 1 as their own view at offset + 1 (not a Philox block start): element e
          // still draws word offset + e.
          expect_same_bits(gpu_dropout(slice(x, 1, n - 1, {n - 1}), out, p, offset + 1, 0), 0, quads, 1,
                           n - 1, what + " from element 1 at offset + 1");
        }
  // dropout_backward (f32) on the quad path, out of place and in place.
  HostTensor dy = HostTensor::of(random_floats(n, 2), DType::f32, {n});
  HostTensor dx = HostTensor::zeros(DType::f32, {n});
  cpu.dropout_backward(dy.view(), dx.view(), 0.3f, 42, 4);
  const PlacedTensor dy_g = place(dy, 0), dx_g = place(HostTensor::zeros(DType::f32, {n}), 0);
  gpu->dropout_backward(dy_g.view(), dx_g.view(), 0.3f, 42, 4);
  expect_same_bits(dx_g.download(*gpu), dx, "dropout_backward (quads)");
  gpu->dropout_backward(dy_g.view(), dy_g.view(), 0.3f, 42, 4);
  expect_same_bits(dy_g.download(*gpu), dx, "dropout_backward (quads) in place");
}

TEST_F(VectorizedPathsTest, DropoutPastOneGridOfQuadsAndOfElements) {
  const int64_t n = kLoopingRows * kLoopingCols;
  HostTensor x = HostTensor::of(random_floats(n, 12), DType::f32, {n});
  HostTensor expected = HostTensor::zeros(DType::f32, {n});
  cpu.dropout_forward(x.view(), expected.view(), 0.1f, kDropoutSeed, 1024);
  expect_same_bits(gpu_dropout(x, DType::f32, 0.1f, 1024, 0), expected, "dropout quads, looping");
  expect_same_bits(gpu_dropout(x, DType::f32, 0.1f, 1024, 1), expected, "dropout scalar, looping");
}

TEST_F(VectorizedPathsTest, GatherQuadAndScalarPathsCopyTheSameRows) {
  const int64_t vocab = 1000, n = 131;
  for (int64_t cols : {int64_t{772}, int64_t{771}}) {  // C % 4 = 0 (quads when aligned), then not
    HostTensor table = HostTensor::of(random_floats(vocab * cols, 1), DType::f32, {vocab, cols});
    HostTensor out0 = HostTensor::of(random_floats(n * cols, 3), DType::f32, {n, cols});
    for (DType id_type : {DType::i32, DType::i64})
      for (bool accumulate : {false, true}) {
        const std::string what = "gather C = " + std::to_string(cols) + " " + loom::dtype_name(id_type) +
                                 (accumulate ? " +=" : "");
        HostTensor ids = HostTensor::ids(random_ids(n, vocab, 2), id_type, {n});
        HostTensor expected = out0;
        cpu.embedding_gather(table.view(), ids.view(), expected.view(), accumulate);
        HostTensor aligned = gpu_gather(table, ids, out0, accumulate, 0, 0);
        expect_same_bits(aligned, expected, what + " against the CPU");
        for (auto [table_shift, out_shift] :
             {std::pair<int64_t, int64_t>{1, 0}, std::pair<int64_t, int64_t>{0, 1}})
          expect_same_bits(gpu_gather(table, ids, out0, accumulate, table_shift, out_shift), aligned,
                           what + (table_shift != 0 ? " table shifted" : " out shifted"));
      }
  }
}

TEST_F(VectorizedPathsTest, GatherPastOneGridOfQuadsAndOfElements) {
  const int64_t vocab = 1000, n = kLoopingRows, cols = kLoopingCols;
  HostTensor table = HostTensor::of(random_floats(vocab * cols, 13), DType::f32, {vocab, cols});
  HostTensor ids = HostTensor::ids(random_ids(n, vocab, 14), DType::i32, {n});
  HostTensor out0 = HostTensor::of(random_floats(n * cols, 15), DType::f32, {n, cols});
  HostTensor expected = out0;
  cpu.embedding_gather(table.view(), ids.view(), expected.view(), true);
  expect_same_bits(gpu_gather(table, ids, out0, true, 0, 0), expected, "gather += quads, looping");
  expect_same_bits(gpu_gather(table, ids, out0, true, 0, 1), expected, "gather += scalar, looping");
}

}  // namespace
}  // namespace loom_cuda_test
