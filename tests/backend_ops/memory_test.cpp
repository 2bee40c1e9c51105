// Memory: allocate() aligns to Backend::kAlignment and gives nullptr for 0 bytes, copies move the
// bytes both ways, Buffer views refuse shapes that do not fit; a backend whose memory is not host
// memory refuses host views in its ops.
#include "backend_op_case.hpp"

namespace loom_backend_ops {
namespace {

LOOM_BACKEND_OP_FAMILY(Memory);

TEST_P(Memory, AllocationsAreAlignedAndCopiesMoveBytes) {
  void* p = backend().allocate(100);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % loom::Backend::kAlignment, 0u);
  const char text[] = "loom";
  char out[5] = {};
  backend().copy_from_host(p, text, 5);
  backend().copy_to_host(out, p, 5);
  EXPECT_STREQ(out, "loom");
  backend().deallocate(p);
  EXPECT_EQ(backend().allocate(0), nullptr);
  loom::Buffer buffer(backend(), 64);
  EXPECT_EQ(buffer.view(loom::DType::f32, {4, 4}).numel(), 16);
  EXPECT_THROW(buffer.view(loom::DType::f32, {5, 4}), loom::Error);
}

TEST_P(Memory, OpsRefuseHostMemoryWhereItIsNotTheBackends) {
  if (backend().device() == loom::Device{}) GTEST_SKIP() << backend_label() << "'s memory is host memory";
  HostTensor x = HostTensor::zeros(loom::DType::f32, {4, 4});
  EXPECT_THROW(backend().tanh_forward(x.view(), x.view()), loom::Error);
  EXPECT_THROW(backend().fill(x.view(), 1.0), loom::Error);
}

}  // namespace
}  // namespace loom_backend_ops
