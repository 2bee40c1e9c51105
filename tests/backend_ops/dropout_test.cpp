// Dropout: element e is kept unless philox_word(seed, offset + e) < dropout_threshold(p)
// (loom/sdk/philox.hpp), kept values scaled by 1/(1 − p); keyed by seed and offset, about 1 − p
// kept, the backward applying the same mask, p = 0 a copy and p = 1 refused. Every backend draws
// the same words, so results are the reference's bits for every storage pair and offsets that do
// not start a Philox block.
#include "backend_op_case.hpp"
#include "loom/sdk/philox.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;

LOOM_BACKEND_OP_FAMILY(Dropout);

TEST_P(Dropout, MaskIsTheDocumentedPhiloxStream) {
  const int64_t n = 1003;
  const float p = 0.1f;
  DeviceTensor x = upload(HostTensor::of(std::vector<float>(n, 1.0f), DType::f32, {n})),
               y = upload_zeros(DType::f32, {n});
  backend().dropout_forward(x.view(), y.view(), p, 1234, 77);
  const std::vector<float> out = read(y);
  const uint32_t threshold = loom::dropout_threshold(p);
  int64_t kept = 0;
  for (int64_t e = 0; e < n; ++e) {
    const bool keep = loom::philox_word(1234, 77 + e) >= threshold;
    EXPECT_EQ(out[e], keep ? 1.0f / (1.0f - p) : 0.0f) << "element " << e;
    kept += keep;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.9, 0.03);
}

TEST_P(Dropout, KeyedBySeedAndOffset) {
  const int64_t n = 500, shift = 123;
  DeviceTensor ones = upload(HostTensor::of(std::vector<float>(n + shift, 1.0f), DType::f32, {n + shift})),
               big = upload_zeros(DType::f32, {n + shift}), small = upload_zeros(DType::f32, {n}),
               other_seed = upload_zeros(DType::f32, {n});
  backend().dropout_forward(ones.view(), big.view(), 0.5f, 42, 0);
  backend().dropout_forward(ones.view().narrow(0, 0, n), small.view(), 0.5f, 42, shift);
  const std::vector<float> whole = read(big), part = read(small);
  EXPECT_EQ(part, std::vector<float>(whole.begin() + shift, whole.end()))
      << "offset k = elements k.. of the stream";
  backend().dropout_forward(ones.view().narrow(0, 0, n), other_seed.view(), 0.5f, 43, shift);
  EXPECT_NE(part, read(other_seed));
}

TEST_P(Dropout, BackwardAppliesTheForwardMask) {
  const int64_t n = 257;
  const auto dy_values = random_floats(n, 73);
  DeviceTensor ones = upload(HostTensor::of(std::vector<float>(n, 1.0f), DType::f32, {n})),
               mask_dev = upload_zeros(DType::f32, {n}),
               dy = upload(HostTensor::of(dy_values, DType::f32, {n})), dx = upload_zeros(DType::f32, {n});
  backend().dropout_forward(ones.view(), mask_dev.view(), 0.2f, 7, 1000);
  backend().dropout_backward(dy.view(), dx.view(), 0.2f, 7, 1000);
  const std::vector<float> mask = read(mask_dev), grad = read(dx);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(grad[i], dy_values[i] * mask[i]);
  // bf16 storage of the forward: the f32 product rounded once.
  const HostTensor x16 = HostTensor::of(random_floats(n, 72), DType::bf16, {n});
  DeviceTensor x16_dev = upload(x16), y16 = upload_zeros(DType::bf16, {n});
  backend().dropout_forward(x16_dev.view(), y16.view(), 0.2f, 7, 1000);
  const std::vector<float> kept = read(y16);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(kept[i], loom::to_f32(loom::to_bf16(x16.get(i) * mask[i])));
  // In place.
  backend().dropout_backward(dy.view(), dy.view(), 0.2f, 7, 1000);
  EXPECT_EQ(read(dy), grad);
}

TEST_P(Dropout, ZeroProbabilityCopiesAndOneIsRefused) {
  const auto values = random_floats(50, 74);
  DeviceTensor x = upload(HostTensor::of(values, DType::f32, {50})), y = upload_zeros(DType::f32, {50});
  backend().dropout_forward(x.view(), y.view(), 0.0f, 1, 0);
  EXPECT_EQ(read(y), values);
  EXPECT_THROW(backend().dropout_forward(x.view(), y.view(), 1.0f, 1, 0), loom::Error);
  EXPECT_THROW(backend().dropout_forward(x.view(), x.view(), 1.0f, 1, 0), loom::Error);
}

TEST_P(Dropout, ForwardIsTheReferencesBitsForEveryStorageAndOffset) {
  const int64_t n = 37 * 771;
  for (DType in : {DType::f32, DType::bf16, DType::f16})
    for (DType out : {DType::f32, DType::bf16})
      for (uint64_t offset : {uint64_t{0}, uint64_t{3}, (uint64_t{1} << 33) + 5})
        for (float p : {0.0f, 0.1f, 0.5f}) {
          HostTensor x = HostTensor::of(random_floats(n, 1), in, {37, 771});
          HostTensor y = HostTensor::zeros(out, {37, 771});
          DeviceTensor x_dev = upload(x), y_dev = upload(y);
          reference().dropout_forward(x.view(), y.view(), p, 0x1234567890abcdefull, offset);
          backend().dropout_forward(x_dev.view(), y_dev.view(), p, 0x1234567890abcdefull, offset);
          expect_same_bits(y_dev.download(), y,
                           std::string(loom::dtype_name(in)) + "→" + loom::dtype_name(out) + " offset " +
                               std::to_string(offset) + " p " + std::to_string(p));
        }
}

TEST_P(Dropout, BackwardInPlaceIsTheReferencesBits) {
  const int64_t n = 131 * 3 + 1;
  HostTensor dy = HostTensor::of(random_floats(n, 2), DType::f32, {n});
  HostTensor dx = HostTensor::zeros(DType::f32, {n});
  DeviceTensor dy_dev = upload(dy);
  reference().dropout_backward(dy.view(), dx.view(), 0.3f, 42, 7);
  backend().dropout_backward(dy_dev.view(), dy_dev.view(), 0.3f, 42, 7);
  expect_equal(read(dy_dev), dx.floats(), "dropout_backward in place");
}

}  // namespace
}  // namespace loom_backend_ops
