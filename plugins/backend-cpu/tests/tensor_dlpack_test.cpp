// Tensor views and their DLPack round trip (dtype, device, shape, strides, byte offset, deleter).
#include <dlpack/dlpack.h>

#include "op_test_support.hpp"

namespace {

using loom::DType;
using loom::Tensor;

TEST(TensorView, ContiguityNarrowSelectPermute) {
  std::vector<float> data(2 * 3 * 4);
  const Tensor t = Tensor::contiguous(data.data(), DType::f32, {2, 3, 4});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  const Tensor p = t.permute({2, 0, 1});
  EXPECT_FALSE(p.is_contiguous());
  EXPECT_EQ(p.size(0), 4);
  EXPECT_EQ(p.stride(0), 1);
  const Tensor n = t.narrow(1, 1, 2);
  EXPECT_EQ(n.data, data.data() + 4);
  EXPECT_FALSE(n.is_contiguous());
  const Tensor s = t.select(0, 1);
  EXPECT_EQ(s.ndim, 2);
  EXPECT_EQ(s.data, data.data() + 12);
  EXPECT_TRUE(s.is_contiguous());
  EXPECT_EQ(s.describe(), "f32[3, 4]");
  EXPECT_THROW(t.reshape({5, 5}), loom::Error);
  EXPECT_THROW(p.reshape({24}), loom::Error);
  EXPECT_THROW(t.data_as<int32_t>(), loom::Error);
  EXPECT_EQ(t.data_as<float>(), data.data());
}

TEST(TensorDlpack, RoundTripKeepsEverything) {
  std::vector<loom::BFloat16> data(5 * 7);
  Tensor t = Tensor::contiguous(data.data(), DType::bf16, {5, 7}).permute({1, 0}).narrow(0, 2, 3);
  DLTensor dl = loom::to_dlpack(t);
  EXPECT_EQ(dl.dtype.code, kDLBfloat);
  EXPECT_EQ(dl.dtype.bits, 16);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  const Tensor back = loom::from_dlpack(dl);
  EXPECT_EQ(back.data, t.data);
  EXPECT_EQ(back.dtype, DType::bf16);
  ASSERT_EQ(back.ndim, 2);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(back.shape[k], t.shape[k]);
    EXPECT_EQ(back.strides[k], t.strides[k]);
  }
  for (DType d : {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64, DType::i8, DType::u8})
    EXPECT_EQ(loom::from_dlpack_dtype(loom::to_dlpack_dtype(d)), d);
}

TEST(TensorDlpack, NullStridesAndByteOffsetAndUnsupported) {
  std::vector<int64_t> storage(12);
  int64_t shape[] = {3, 2};
  DLTensor dl{};
  dl.data = storage.data();
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = 2;
  dl.dtype = DLDataType{kDLInt, 64, 1};
  dl.shape = shape;
  dl.strides = nullptr;
  dl.byte_offset = 16;
  const Tensor t = loom::from_dlpack(dl);
  EXPECT_EQ(t.data, storage.data() + 2);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.strides[0], 2);
  dl.dtype = DLDataType{kDLFloat, 32, 4};
  EXPECT_THROW(loom::from_dlpack(dl), loom::UnsupportedError);
  dl.dtype = DLDataType{kDLFloat, 32, 1};
  dl.device = DLDevice{kDLVulkan, 0};
  EXPECT_THROW(loom::from_dlpack(dl), loom::UnsupportedError);
}

int released = 0;
void release(void* owner) noexcept {
  released += *static_cast<int*>(owner);
}

TEST(TensorDlpack, ManagedTensorDeleterReleasesTheOwner) {
  std::vector<float> data(6);
  int weight = 3;
  DLManagedTensor* managed =
      loom::to_dlpack_managed(Tensor::contiguous(data.data(), DType::f32, {2, 3}), &weight, &release);
  const Tensor t = loom::from_dlpack(*managed);
  EXPECT_EQ(t.data, data.data());
  EXPECT_EQ(managed->dl_tensor.shape[1], 3);
  EXPECT_EQ(managed->dl_tensor.strides[0], 3);
  managed->deleter(managed);
  EXPECT_EQ(released, 3);
}

}  // namespace
