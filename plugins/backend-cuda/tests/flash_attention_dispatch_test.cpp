// Which fused attention calls the Tensor-Core kernels serve (flash_attention.hpp), decided on the
// host from dtypes, head dimension and row alignment alone: runs without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "attention_shape.hpp"
#include "flash_attention.hpp"

namespace loom_cuda {
namespace {

using loom::DType;

/// The per-head [B, H, T, d] view of a [B·T, H·d] activation starting `offset` elements into `data`.
loom::Tensor heads(void* data, DType dtype, int64_t B, int64_t T, int64_t H, int64_t d, int64_t offset = 0) {
  auto* base = static_cast<char*>(data) + offset * static_cast<int64_t>(loom::dtype_size(dtype));
  return loom::Tensor::contiguous(base, dtype, {B, T, H, d}).permute({0, 2, 1, 3});
}

AttentionShape shape_of(int64_t B, int64_t H, int64_t T, int64_t d) {
  return AttentionShape{B, H, T, d, 0.125f, false, 0u, 1.0f, 0, 0};
}

TEST(FlashAttentionDispatch, ServesSixteenBitStorageWithHeadDim64Or128AndAlignedRows) {
  alignas(16) static uint16_t buffer[2 * 8 * 4 * 128 + 64];
  alignas(16) static float gradient[2 * 8 * 4 * 128 + 64];
  for (const DType dtype : {DType::bf16, DType::f16})
    for (const int64_t d : {64, 128}) {
      const loom::Tensor t = heads(buffer, dtype, 2, 8, 4, d);
      EXPECT_TRUE(flash_attention_serves(shape_of(2, 4, 8, d), t, t, t, t))
          << loom::dtype_name(dtype) << " d=" << d;
      EXPECT_TRUE(
          flash_attention_serves(shape_of(2, 4, 8, d), t, t, t, t, heads(gradient, DType::f32, 2, 8, 4, d)))
          << "f32 d_ctx";
      EXPECT_TRUE(flash_attention_serves(shape_of(2, 4, 8, d), t, t, t, t, t)) << "16-bit d_ctx";
    }
}

TEST(FlashAttentionDispatch, LeavesF32OtherHeadDimsAndUnalignedRowsToTheCudaCoreKernels) {
  alignas(16) static uint16_t buffer[2 * 8 * 4 * 128 + 64];
  alignas(16) static float values[2 * 8 * 4 * 128 + 64];
  const loom::Tensor aligned = heads(buffer, DType::bf16, 2, 8, 4, 64);
  EXPECT_FALSE(flash_attention_serves(
      shape_of(2, 4, 8, 64), heads(values, DType::f32, 2, 8, 4, 64), heads(values, DType::f32, 2, 8, 4, 64),
      heads(values, DType::f32, 2, 8, 4, 64), heads(values, DType::f32, 2, 8, 4, 64)))
      << "f32 storage";
  const loom::Tensor d32 = heads(buffer, DType::bf16, 2, 8, 4, 32);
  EXPECT_FALSE(flash_attention_serves(shape_of(2, 4, 8, 32), d32, d32, d32, d32)) << "d = 32";
  const loom::Tensor shifted = heads(buffer, DType::bf16, 2, 8, 4, 64, 1);  // rows start 2 bytes off
  EXPECT_FALSE(flash_attention_serves(shape_of(2, 4, 8, 64), aligned, shifted, aligned, aligned))
      << "k unaligned";
  const loom::Tensor shifted_gradient = heads(values, DType::f32, 2, 8, 4, 64, 2);  // 8 bytes off
  EXPECT_FALSE(
      flash_attention_serves(shape_of(2, 4, 8, 64), aligned, aligned, aligned, aligned, shifted_gradient))
      << "d_ctx unaligned";
  // Rows 260 elements apart (a [B·T, 260] activation whose first 256 columns are the heads): the
  // rows of a head are not all 16-byte aligned.
  loom::Tensor odd_stride = aligned;
  odd_stride.strides[2] = 4 * 64 + 4;
  odd_stride.strides[0] = 8 * odd_stride.strides[2];
  EXPECT_FALSE(flash_attention_serves(shape_of(2, 4, 8, 64), odd_stride, aligned, aligned, aligned))
      << "row stride of 260 elements";
}

}  // namespace
}  // namespace loom_cuda
