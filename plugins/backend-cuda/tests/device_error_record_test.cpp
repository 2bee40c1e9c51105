// Invalid ids and targets found on the device (device_error_record.hpp): no error at the call, the
// precise error — op, position, value, in backend/cpu's words — at the next wait point, once.
//
// The message decoding is plain host code and is checked here without a GPU against what
// backend/cpu throws for the same input; the rest runs on a GPU and skips without one.
#include <cstddef>

#include "cuda_test_support.hpp"
#include "device_error_record.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;
using loom_cuda::CheckedOp;
using loom_cuda::DeviceErrorRecord;

constexpr const char* kAtCopy = " (found on the device, reported at copy_to_host)";

/// What `run` throws (a failure when it throws nothing).
template <typename Run>
std::string thrown_by(Run run) {
  try {
    run();
  } catch (const loom::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no loom::Error was thrown";
  return {};
}

// ---- decoding, without a GPU ------------------------------------------------------------------

TEST(DeviceErrorRecord, LayoutIsTheSameOnHostAndDevice) {
  // The kernels write the record through these offsets; nvcc and the host compiler must agree.
  EXPECT_EQ(sizeof(DeviceErrorRecord), 40u);
  EXPECT_EQ(offsetof(DeviceErrorRecord, index), 8u);
  EXPECT_EQ(offsetof(DeviceErrorRecord, ignore_index), 32u);
}

TEST(DeviceErrorRecord, AnEmptyRecordIsNoError) {
  EXPECT_EQ(loom_cuda::device_error_message(DeviceErrorRecord{}, "synchronize"), "");
}

TEST(DeviceErrorRecord, EmbeddingIdsAreNamedInBackendCpuWords) {
  loom_cpu::CpuBackend cpu(1);
  HostTensor table = HostTensor::zeros(DType::f32, {10, 4});
  HostTensor out = HostTensor::zeros(DType::f32, {3, 4});
  HostTensor ids = HostTensor::ids({1, 2, 10}, DType::i32, {3});
  const std::string gather =
      thrown_by([&] { cpu.embedding_gather(table.view(), ids.view(), out.view(), false); });
  EXPECT_EQ(gather, "embedding_gather: ids[2] = 10 is outside [0, 10)");
  const DeviceErrorRecord found{static_cast<int32_t>(CheckedOp::embedding_gather), 0, 2, 10, 10, 0};
  EXPECT_EQ(loom_cuda::device_error_message(found, "copy_to_host"), gather + kAtCopy);

  HostTensor negative = HostTensor::ids({-7, 2, 1}, DType::i64, {3});
  const std::string scatter =
      thrown_by([&] { cpu.embedding_scatter_add(out.view(), negative.view(), table.view()); });
  const DeviceErrorRecord scattered{static_cast<int32_t>(CheckedOp::embedding_scatter_add), 0, 0, -7, 10, 0};
  EXPECT_EQ(loom_cuda::device_error_message(scattered, "synchronize"),
            scatter + " (found on the device, reported at synchronize)");
}

TEST(DeviceErrorRecord, CrossEntropyTargetsNameTheBatchRowInBackendCpuWords) {
  loom_cpu::CpuBackend cpu(1);
  HostTensor logits = HostTensor::zeros(DType::f32, {4, 6});
  HostTensor mean = HostTensor::zeros(DType::f32, {1});
  HostTensor targets = HostTensor::ids({0, -100, 3, 5}, DType::i64, {4});
  const std::string expected = thrown_by(
      [&] { cpu.cross_entropy(logits.view(), targets.view(), 5, -100, 1.0f, mean.view(), {}, {}, {}); });
  EXPECT_EQ(expected, "cross_entropy: targets[3] = 5 is outside [0, 5) and is not the ignore index -100");
  const DeviceErrorRecord found{static_cast<int32_t>(CheckedOp::cross_entropy), 0, 3, 5, 5, -100};
  EXPECT_EQ(loom_cuda::device_error_message(found, "copy_to_host"), expected + kAtCopy);
}

TEST(DeviceErrorRecord, AnUnknownOpCodeIsNamedNotMisread) {
  const DeviceErrorRecord corrupt{77, 0, 1, 2, 3, 4};
  EXPECT_EQ(loom_cuda::device_error_message(corrupt, "synchronize"),
            "backend/cuda: the device error record holds the unknown op code 77 (found on the device, "
            "reported at synchronize)");
}

// ---- on a GPU ---------------------------------------------------------------------------------

class DeviceErrorTest : public CudaOpTest {};

TEST_F(DeviceErrorTest, ABadIdInEmbeddingGatherIsReportedAtTheNextCopyToHostThenCleared) {
  const int64_t vocab = 10, cols = 4;
  HostTensor table = HostTensor::of(random_floats(vocab * cols, 1), DType::f32, {vocab, cols});
  DeviceTensor table_g = upload(table);
  DeviceTensor out = upload(HostTensor::zeros(DType::f32, {3, cols}));
  for (DType id_type : {DType::i32, DType::i64})
    for (int64_t bad : {int64_t{10}, int64_t{-1}}) {
      DeviceTensor ids = upload(HostTensor::ids({1, bad, 2}, id_type, {3}));
      EXPECT_NO_THROW(gpu->embedding_gather(table_g.view(), ids.view(), out.view(), false)) << "at the call";
      EXPECT_EQ(thrown_by([&] { (void)out.download(*gpu); }),
                "embedding_gather: ids[1] = " + std::to_string(bad) + " is outside [0, 10)" + kAtCopy);
      // Reported once: the record is clear again, and the good rows were gathered.
      HostTensor again;
      ASSERT_NO_THROW(again = out.download(*gpu));
      for (int64_t c = 0; c < cols; ++c) {
        EXPECT_EQ(again.get(c), table.get(1 * cols + c));
        EXPECT_EQ(again.get(2 * cols + c), table.get(2 * cols + c));
      }
    }
}

TEST_F(DeviceErrorTest, TheLowestBadPositionOfTheFirstFailingOpIsReported) {
  const int64_t vocab = 50, cols = 3, n = 3001;  // more ids than the check's 1024 threads
  std::vector<int64_t> values(static_cast<size_t>(n), 7);
  values[2900] = 50;
  values[1500] = -3;  // lower position, found by another thread
  DeviceTensor table = upload(HostTensor::zeros(DType::f32, {vocab, cols}));
  DeviceTensor ids = upload(HostTensor::ids(values, DType::i64, {n}));
  DeviceTensor out = upload(HostTensor::zeros(DType::f32, {n, cols}));
  gpu->embedding_gather(table.view(), ids.view(), out.view(), false);
  // A later op's error does not replace the first one.
  DeviceTensor logits = upload(HostTensor::zeros(DType::f32, {2, 4}));
  DeviceTensor targets = upload(HostTensor::ids({9, 0}, DType::i32, {2}));
  DeviceTensor mean = upload(HostTensor::zeros(DType::f32, {1}));
  gpu->cross_entropy(logits.view(), targets.view(), 4, -100, 1.0f, mean.view(), {}, {}, {});
  EXPECT_EQ(
      thrown_by([&] { gpu->synchronize(); }),
      "embedding_gather: ids[1500] = -3 is outside [0, 50) (found on the device, reported at synchronize)");
  EXPECT_NO_THROW(gpu->synchronize());
}

TEST_F(DeviceErrorTest, ABadIdInEmbeddingScatterAddIsReportedAndTheGoodRowsAdded) {
  const int64_t vocab = 6, cols = 5;
  HostTensor dout = HostTensor::of(random_floats(4 * cols, 2), DType::f32, {4, cols});
  HostTensor dtable = HostTensor::of(random_floats(vocab * cols, 3), DType::f32, {vocab, cols});
  DeviceTensor dout_g = upload(dout), dtable_g = upload(dtable);
  DeviceTensor ids = upload(HostTensor::ids({3, 6, 3, 0}, DType::i64, {4}));
  EXPECT_NO_THROW(gpu->embedding_scatter_add(dout_g.view(), ids.view(), dtable_g.view()));
  EXPECT_EQ(thrown_by([&] { (void)dtable_g.download(*gpu); }),
            std::string("embedding_scatter_add: ids[1] = 6 is outside [0, 6)") + kAtCopy);
  // The bad row was skipped, the others added in row order as backend/cpu adds them.
  HostTensor good_dout = HostTensor::zeros(DType::f32, {3, cols});
  for (int64_t c = 0; c < cols; ++c) {
    good_dout.set(c, dout.get(c));
    good_dout.set(cols + c, dout.get(2 * cols + c));
    good_dout.set(2 * cols + c, dout.get(3 * cols + c));
  }
  HostTensor good_ids = HostTensor::ids({3, 3, 0}, DType::i64, {3});
  cpu.embedding_scatter_add(good_dout.view(), good_ids.view(), dtable.view());
  expect_equal(dtable_g.download(*gpu).floats(), dtable.floats(), "scatter_add without the bad row");
}

TEST_F(DeviceErrorTest, ABadTargetIsReportedNamingItsBatchRowAndTheRestStillAverages) {
  const int64_t rows = 5, width = 9, classes = 8;
  HostTensor logits = HostTensor::of(random_floats(rows * width, 4), DType::f32, {rows, width});
  DeviceTensor logits_g = upload(logits);
  DeviceTensor mean_g = upload(HostTensor::zeros(DType::f32, {1}));
  DeviceTensor dlogits_g = upload(HostTensor::zeros(DType::f32, {rows, width}));
  for (DType target_type : {DType::i32, DType::i64}) {
    DeviceTensor targets = upload(HostTensor::ids({0, -1, 8, 2, 7}, target_type, {rows}));
    EXPECT_NO_THROW(gpu->cross_entropy(logits_g.view(), targets.view(), classes, -1, 1.0f, mean_g.view(),
                                       dlogits_g.view(), {}, {}))
        << "at the call";
    EXPECT_EQ(thrown_by([&] { (void)mean_g.download(*gpu); }),
              "cross_entropy: targets[2] = 8 is outside [0, 8) and is not the ignore index -1" +
                  std::string(kAtCopy));
    // Cleared once reported; the bad row counted as ignored, so the rest is backend/cpu's result
    // with that row ignored.
    HostTensor ignored = HostTensor::ids({0, -1, -1, 2, 7}, target_type, {rows});
    HostTensor mean = HostTensor::zeros(DType::f32, {1});
    HostTensor dlogits = HostTensor::zeros(DType::f32, {rows, width});
    cpu.cross_entropy(logits.view(), ignored.view(), classes, -1, 1.0f, mean.view(), dlogits.view(), {}, {});
    HostTensor mean_back;
    ASSERT_NO_THROW(mean_back = mean_g.download(*gpu));
    expect_close(mean_back.floats(), mean.floats(), 1e-6, 1e-6, "mean over the good rows");
    expect_close(dlogits_g.download(*gpu).floats(), dlogits.floats(), 1e-5, 1e-7, "dlogits of the good rows");
  }
}

TEST_F(DeviceErrorTest, WithSyncCheckTheErrorSurfacesBeforeTheNextOp) {
  gpu->set_sync_check(true);
  DeviceTensor table = upload(HostTensor::zeros(DType::f32, {4, 2}));
  DeviceTensor out = upload(HostTensor::zeros(DType::f32, {2, 2}));
  DeviceTensor ids = upload(HostTensor::ids({4, 0}, DType::i64, {2}));
  gpu->embedding_gather(table.view(), ids.view(), out.view(), false);
  EXPECT_EQ(thrown_by([&] { gpu->zero(out.view()); }),
            "embedding_gather: ids[0] = 4 is outside [0, 4) (found on the device, reported at sync_check, "
            "before zero)");
  EXPECT_NO_THROW(gpu->synchronize());
}

}  // namespace
}  // namespace loom_cuda_test
