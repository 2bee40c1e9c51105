// cross_entropy (at odd sizes and over BERT's 30,522 classes), sum_squares, global_norm and
// check_finite against backend/cpu.
#include <limits>

#include "cuda_test_support.hpp"
#include "loom/sdk/block.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

class LossReductionsTest : public CudaOpTest {};

TEST_F(LossReductionsTest, CrossEntropyWithPaddingIgnoredRowsAndEveryOutput) {
  const int64_t rows = 131, width = 776, classes = 771, ignore = -100;
  std::vector<int64_t> targets(rows);
  std::mt19937 engine(3);
  for (int64_t r = 0; r < rows; ++r)
    targets[r] = r % 7 == 0 ? ignore : static_cast<int64_t>(engine() % classes);
  std::vector<float> logits_values = random_floats(rows * width, 1, -4.0f, 4.0f);
  logits_values[5 * width + 3] = logits_values[5 * width + 9] = 10.0f;  // a tie: the first arg-max counts
  targets[5] = 9;
  for (DType target_type : {DType::i32, DType::i64})
    for (bool in_place : {false, true}) {
      HostTensor logits = HostTensor::of(logits_values, DType::f32, {rows, width});
      HostTensor t = HostTensor::ids(targets, target_type, {rows});
      HostTensor mean = HostTensor::zeros(DType::f32, {1});
      HostTensor dlogits = HostTensor::zeros(DType::f32, {rows, width});
      HostTensor row_loss = HostTensor::zeros(DType::f32, {rows});
      HostTensor correct = HostTensor::zeros(DType::i32, {rows});
      DeviceTensor logits_g = upload(logits), t_g = upload(t), mean_g = upload(mean),
                   dlogits_g = upload(dlogits), row_loss_g = upload(row_loss), correct_g = upload(correct);
      cpu.cross_entropy(logits.view(), t.view(), classes, ignore, 2.0f, mean.view(), dlogits.view(),
                        row_loss.view(), correct.view());
      gpu->cross_entropy(logits_g.view(), t_g.view(), classes, ignore, 2.0f, mean_g.view(),
                         in_place ? logits_g.view() : dlogits_g.view(), row_loss_g.view(), correct_g.view());
      expect_close(mean_g.download(*gpu).floats(), mean.floats(), 1e-5, 1e-6, "mean_loss");
      expect_close((in_place ? logits_g : dlogits_g).download(*gpu).floats(), dlogits.floats(), 1e-4, 1e-7,
                   "dlogits");
      expect_close(row_loss_g.download(*gpu).floats(), row_loss.floats(), 1e-5, 1e-5, "row_loss");
      EXPECT_EQ(correct_g.download(*gpu).bytes, correct.bytes) << "row_correct";
    }
}

TEST_F(LossReductionsTest, CrossEntropyOptionalOutputsAbsentAndAllIgnored) {
  const int64_t rows = 4, width = 8;
  HostTensor logits = HostTensor::of(random_floats(rows * width, 2), DType::f32, {rows, width});
  HostTensor t = HostTensor::ids({-1, -1, -1, -1}, DType::i64, {rows});
  DeviceTensor logits_g = upload(logits), t_g = upload(t),
               mean_g = upload(HostTensor::of({7.0f}, DType::f32, {1}));
  gpu->cross_entropy(logits_g.view(), t_g.view(), width, -1, 1.0f, mean_g.view(), {}, {}, {});
  expect_equal(mean_g.download(*gpu).floats(), {0.0f}, "mean over no rows");
  // A bad target is reported at the next wait point: device_error_record_test.cpp.
}

TEST_F(LossReductionsTest, CrossEntropyOverTheBertVocabularyInPlace) {
  // The masked-LM loss of 128 sequences × 20 masked positions over BERT's 30,522 classes, the rows
  // padded to 30,528 columns and the gradient written over the logits with a loss scale, as
  // pretraining_heads.cpp calls it; one position in 8 unused (target kIgnoreIndex). Each thread of
  // a row's block walks ~120 of its columns.
  //
  // Tolerances, and why: with logits in [−4, 4] a row's Σexp adds up to ~3,800 in f32, rounded in
  // another order on each side; backend/cpu's row losses (8 to 16, where an f32 ulp is up to
  // 1.9e-6) are within 2e-6 of f64 and its gradients within 1.4e-6 relative. row_loss atol 1e-5,
  // the mean (~12, an f64 sum of them rounded to f32) atol 5e-6; dlogits rtol 2e-5 with no atol,
  // so every element counts however small (down to ~4e-8). A column left out of Σexp moves a loss
  // by up to 2.6e-4. row_correct exactly.
  const int64_t rows = 128 * 20, classes = 30522, width = 30528;
  const float loss_scale = 1024.0f;
  std::vector<int64_t> targets(rows);
  std::mt19937 engine(11);
  for (int64_t r = 0; r < rows; ++r)
    targets[r] = r % 8 == 7 ? loom::kIgnoreIndex : static_cast<int64_t>(engine() % classes);
  HostTensor logits = HostTensor::of(random_floats(rows * width, 12, -4.0f, 4.0f), DType::f32, {rows, width});
  HostTensor t = HostTensor::ids(targets, DType::i32, {rows});
  HostTensor mean = HostTensor::zeros(DType::f32, {1});
  HostTensor dlogits = HostTensor::zeros(DType::f32, {rows, width});
  HostTensor row_loss = HostTensor::zeros(DType::f32, {rows});
  HostTensor correct = HostTensor::zeros(DType::i32, {rows});
  DeviceTensor logits_g = upload(logits), t_g = upload(t), mean_g = upload(mean),
               row_loss_g = upload(row_loss), correct_g = upload(correct);
  cpu.cross_entropy(logits.view(), t.view(), classes, loom::kIgnoreIndex, loss_scale, mean.view(),
                    dlogits.view(), row_loss.view(), correct.view());
  gpu->cross_entropy(logits_g.view(), t_g.view(), classes, loom::kIgnoreIndex, loss_scale, mean_g.view(),
                     logits_g.view(), row_loss_g.view(), correct_g.view());
  expect_close(mean_g.download(*gpu).floats(), mean.floats(), 0, 5e-6, "mean_loss over 30522 classes");
  expect_close(row_loss_g.download(*gpu).floats(), row_loss.floats(), 0, 1e-5, "row_loss over 30522 classes");
  expect_equal(correct_g.download(*gpu).floats(), correct.floats(), "row_correct over 30522 classes");
  expect_close(logits_g.download(*gpu).floats(), dlogits.floats(), 2e-5, 0,
               "dlogits in place over 30522 classes");
}

TEST_F(LossReductionsTest, SumSquaresPerSegmentAndGlobalNorm) {
  const int64_t n = 100003;
  HostTensor x = HostTensor::of(random_floats(n, 4), DType::f32, {n});
  DeviceTensor x_g = upload(x);
  const std::vector<int64_t> offsets = {0, 37, 37, 20000, 53000, n};  // an empty segment too
  const size_t segments = offsets.size() - 1;
  HostTensor out = HostTensor::zeros(DType::f32, {static_cast<int64_t>(segments)});
  DeviceTensor out_g = upload(out);
  cpu.sum_squares(x.view(), offsets.data(), segments, out.view());
  gpu->sum_squares(x_g.view(), offsets.data(), segments, out_g.view());
  const std::vector<float> first = out_g.download(*gpu).floats();
  expect_close(first, out.floats(), 1e-6, 0, "sum_squares");
  gpu->sum_squares(x_g.view(), offsets.data(), segments, out_g.view());
  expect_equal(out_g.download(*gpu).floats(), first, "sum_squares rerun");

  HostTensor norm = HostTensor::zeros(DType::f32, {1});
  DeviceTensor norm_g = upload(norm);
  cpu.global_norm(x.view(), norm.view());
  gpu->global_norm(x_g.view(), norm_g.view());
  expect_close(norm_g.download(*gpu).floats(), norm.floats(), 1e-6, 0, "global_norm");
  const std::vector<int64_t> bad = {0, 5, 3};
  EXPECT_THROW(gpu->sum_squares(x_g.view(), bad.data(), 2, out_g.view().narrow(0, 0, 2)), loom::Error);
}

TEST_F(LossReductionsTest, CheckFiniteSetsButNeverClears) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    std::vector<float> values = random_floats(771, 5);
    DeviceTensor flag = upload(HostTensor::ids({0}, DType::i32, {1}));
    DeviceTensor finite = upload(HostTensor::of(values, dtype, {771}));
    gpu->check_finite(finite.view(), flag.view());
    EXPECT_EQ(flag.download(*gpu).get(0), 0.0f) << loom::dtype_name(dtype);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
      std::vector<float> with_bad = values;
      with_bad[770] = bad;
      DeviceTensor x = upload(HostTensor::of(with_bad, dtype, {771}));
      DeviceTensor f = upload(HostTensor::ids({0}, DType::i32, {1}));
      gpu->check_finite(x.view(), f.view());
      EXPECT_EQ(f.download(*gpu).get(0), 1.0f) << loom::dtype_name(dtype) << " " << bad;
      gpu->check_finite(finite.view(), f.view());
      EXPECT_EQ(f.download(*gpu).get(0), 1.0f) << "a later finite check cleared the flag";
    }
  }
}

}  // namespace
}  // namespace loom_cuda_test
