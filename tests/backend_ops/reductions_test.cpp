// Reductions and checks: sum_squares per segment (empty segments too, one segment inside x) and global_norm summed in
// float64, decreasing segment offsets refused; check_finite sets its flag for NaN and ±infinity in
// f32, bf16 and f16 (an f16 overflow included) and never clears it.
#include <limits>

#include "backend_op_case.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;

LOOM_BACKEND_OP_FAMILY(Reductions);

TEST_P(Reductions, SumSquaresPerSegmentAndGlobalNormMatchFloat64) {
  const int64_t n = 70001;  // several chunks
  const auto x = random_floats(n, 101);
  const int64_t offsets[] = {0, 10, 10, 40000, n};
  DeviceTensor x_dev = upload(HostTensor::of(x, DType::f32, {n})), out = upload_zeros(DType::f32, {4}),
               norm = upload_zeros(DType::f32, {1});
  backend().sum_squares(x_dev.view(), offsets, 4, out.view());
  const std::vector<float> sums = read(out);
  std::vector<double> expected(4, 0.0);
  double total = 0;
  for (int s = 0; s < 4; ++s) {
    for (int64_t i = offsets[s]; i < offsets[s + 1]; ++i) expected[s] += double(x[i]) * x[i];
    total += expected[s];
  }
  expect_close(sums, expected, kFloat64SumRoundedToF32, "segments");
  EXPECT_EQ(sums[1], 0.0f) << "an empty segment";
  backend().global_norm(x_dev.view(), norm.view());
  expect_close(read(norm), std::vector<double>{std::sqrt(total)}, kFloat64SumRoundedToF32, "global norm");
  // One segment anywhere in x (a different path on a backend that cuts chunks from its bounds),
  // and an empty one.
  // The empty one goes where a non-zero sum was (out[0], the first segment's), so it must write.
  const int64_t inside[] = {7, 60007}, empty[] = {9, 9};
  ASSERT_NE(sums[0], 0.0f) << "test assumption: out[0] holds a non-zero sum";
  backend().sum_squares(x_dev.view(), empty, 1, out.view().narrow(0, 0, 1));
  backend().sum_squares(x_dev.view(), inside, 1, out.view().narrow(0, 1, 1));
  double inside_expected = 0.0;
  for (int64_t i = inside[0]; i < inside[1]; ++i) inside_expected += double(x[i]) * x[i];
  const std::vector<float> one = read(out);
  EXPECT_EQ(one[0], 0.0f) << "one empty segment";
  expect_close(std::vector<float>{one[1]}, std::vector<double>{inside_expected}, kFloat64SumRoundedToF32,
               "one segment");
  const int64_t bad[] = {0, 5, 3};
  EXPECT_THROW(backend().sum_squares(x_dev.view(), bad, 2, out.view().narrow(0, 0, 2)), loom::Error);
}

TEST_P(Reductions, SumSquaresAndGlobalNormAsTheReferenceAndRepeatable) {
  const int64_t n = 100003;
  HostTensor x = HostTensor::of(random_floats(n, 4), DType::f32, {n});
  DeviceTensor x_dev = upload(x);
  const std::vector<int64_t> offsets = {0, 37, 37, 20000, 53000, n};  // an empty segment too
  const size_t segments = offsets.size() - 1;
  HostTensor out = HostTensor::zeros(DType::f32, {static_cast<int64_t>(segments)});
  DeviceTensor out_dev = upload(out);
  reference().sum_squares(x.view(), offsets.data(), segments, out.view());
  backend().sum_squares(x_dev.view(), offsets.data(), segments, out_dev.view());
  const std::vector<float> first = read(out_dev);
  expect_close(first, out.floats(), kFloat64SumRoundedToF32, "sum_squares");
  EXPECT_EQ(first[1], 0.0f) << "an empty segment";
  backend().sum_squares(x_dev.view(), offsets.data(), segments, out_dev.view());
  expect_equal(read(out_dev), first, "sum_squares rerun");

  HostTensor norm = HostTensor::zeros(DType::f32, {1});
  DeviceTensor norm_dev = upload(norm);
  reference().global_norm(x.view(), norm.view());
  backend().global_norm(x_dev.view(), norm_dev.view());
  expect_close(read(norm_dev), norm.floats(), kFloat64SumRoundedToF32, "global_norm");
}

TEST_P(Reductions, CheckFiniteSetsTheFlagForNanOrInfinityAndNeverClearsIt) {
  // Named tensors, not temporaries: a device backend may still be reading an input after the call.
  std::vector<float> big = random_floats(100000, 102);
  DeviceTensor flag = upload(HostTensor::ids({0}, DType::i32, {1})),
               finite_big = upload(HostTensor::of(big, DType::f32, {100000}));
  backend().check_finite(finite_big.view(), flag.view());
  EXPECT_EQ(read(flag)[0], 0.0f);
  big[77777] = INFINITY;
  DeviceTensor infinite_big = upload(HostTensor::of(big, DType::f32, {100000})),
               two = upload(HostTensor::of({1, 2}, DType::f32, {2}));
  backend().check_finite(infinite_big.view(), flag.view());
  EXPECT_EQ(read(flag)[0], 1.0f);
  backend().check_finite(two.view(), flag.view());
  EXPECT_EQ(read(flag)[0], 1.0f) << "the flag is never cleared";

  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    const std::vector<float> values = random_floats(771, 5);
    DeviceTensor finite = upload(HostTensor::of(values, dtype, {771}));
    DeviceTensor clear = upload(HostTensor::ids({0}, DType::i32, {1}));
    backend().check_finite(finite.view(), clear.view());
    EXPECT_EQ(read(clear)[0], 0.0f) << loom::dtype_name(dtype);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
      std::vector<float> with_bad = values;
      with_bad[770] = bad;
      DeviceTensor x = upload(HostTensor::of(with_bad, dtype, {771}));
      DeviceTensor f = upload(HostTensor::ids({0}, DType::i32, {1}));
      backend().check_finite(x.view(), f.view());
      EXPECT_EQ(read(f)[0], 1.0f) << loom::dtype_name(dtype) << " " << bad;
      backend().check_finite(finite.view(), f.view());
      EXPECT_EQ(read(f)[0], 1.0f) << "a later finite check cleared the flag";
    }
  }

  // An f16 value beyond 65504 is +infinity: non-finite.
  std::vector<float> halves = random_floats(240, 27, -3.0f, 3.0f);
  DeviceTensor f16_flag = upload(HostTensor::ids({0}, DType::i32, {1})),
               finite16 = upload(HostTensor::of(halves, DType::f16, {6, 40}));
  backend().check_finite(finite16.view(), f16_flag.view());
  EXPECT_EQ(read(f16_flag)[0], 0.0f);
  halves[17] = 1e6f;
  DeviceTensor overflow16 = upload(HostTensor::of(halves, DType::f16, {6, 40}));
  backend().check_finite(overflow16.view(), f16_flag.view());
  EXPECT_EQ(read(f16_flag)[0], 1.0f) << "an f16 overflow is non-finite";
}

}  // namespace
}  // namespace loom_backend_ops
