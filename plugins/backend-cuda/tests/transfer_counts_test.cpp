// TransferCounter on backend/cuda: a steady-state sequence of training ops — embedding gather,
// linear layers, cross-entropy with its gradient, embedding scatter-add, an update — makes the
// host wait zero times (ids and targets are validated on the device), and each copy_to_host,
// synchronize and copy_from_host is counted once. The sequence's loss is backend/cpu's. One-segment
// reductions do not wait for the staging buffer.
#include "loom/sdk/ops/transfer_counts.hpp"
#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

class TransferCountsTest : public CudaOpTest {};

/// One tiny "training step" of an embedding model with a tied output layer, on either backend:
/// logits = table[ids]·tableᵀ, loss and dlogits, the gradients of both uses of the table, and
/// table −= 0.1·dtable.
void train_step(loom::Backend& backend, const loom::Tensor& table, const loom::Tensor& dtable,
                const loom::Tensor& ids, const loom::Tensor& targets, const loom::Tensor& x,
                const loom::Tensor& logits, const loom::Tensor& dx, const loom::Tensor& mean, int64_t vocab) {
  backend.embedding_gather(table, ids, x, false);
  backend.gemm(x, false, table, true, logits, 1.0f, 0.0f);
  backend.cross_entropy(logits, targets, vocab, -100, 1.0f, mean, logits, {}, {});  // dlogits in place
  backend.gemm(logits, false, table, false, dx, 1.0f, 0.0f);
  backend.gemm(logits, true, x, false, dtable, 1.0f, 1.0f);
  backend.embedding_scatter_add(dx, ids, dtable);
  backend.axpby(-0.1f, dtable, 1.0f, table);
  backend.zero(dtable);
}

TEST_F(TransferCountsTest, ASteadyStateSequenceOfOpsWaitsZeroTimes) {
  const int64_t vocab = 97, cols = 64, n = 131;
  std::mt19937 engine(5);
  std::vector<int64_t> id_values(static_cast<size_t>(n)), target_values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    id_values[static_cast<size_t>(i)] = static_cast<int64_t>(engine() % vocab);
    target_values[static_cast<size_t>(i)] = i % 5 == 0 ? -100 : static_cast<int64_t>(engine() % vocab);
  }
  HostTensor table = HostTensor::of(random_floats(vocab * cols, 6, -0.1f, 0.1f), DType::f32, {vocab, cols});
  HostTensor dtable = HostTensor::zeros(DType::f32, {vocab, cols});
  HostTensor ids = HostTensor::ids(id_values, DType::i32, {n});
  HostTensor targets = HostTensor::ids(target_values, DType::i64, {n});
  HostTensor x = HostTensor::zeros(DType::f32, {n, cols});
  HostTensor logits = HostTensor::zeros(DType::f32, {n, vocab});
  HostTensor dx = HostTensor::zeros(DType::f32, {n, cols});
  HostTensor mean = HostTensor::zeros(DType::f32, {1});
  DeviceTensor table_g = upload(table), dtable_g = upload(dtable), ids_g = upload(ids),
               targets_g = upload(targets), x_g = upload(x), logits_g = upload(logits), dx_g = upload(dx),
               mean_g = upload(mean);

  // Warm-up step: scratch areas grow, the GEMM engine picks its plans.
  train_step(*gpu, table_g.view(), dtable_g.view(), ids_g.view(), targets_g.view(), x_g.view(),
             logits_g.view(), dx_g.view(), mean_g.view(), vocab);
  train_step(cpu, table.view(), dtable.view(), ids.view(), targets.view(), x.view(), logits.view(), dx.view(),
             mean.view(), vocab);
  gpu->synchronize();

  const loom::TransferCounter& counter = *gpu;
  const loom::TransferCounts before = counter.transfer_counts();
  for (int step = 0; step < 3; ++step) {
    train_step(*gpu, table_g.view(), dtable_g.view(), ids_g.view(), targets_g.view(), x_g.view(),
               logits_g.view(), dx_g.view(), mean_g.view(), vocab);
    train_step(cpu, table.view(), dtable.view(), ids.view(), targets.view(), x.view(), logits.view(),
               dx.view(), mean.view(), vocab);
  }
  const loom::TransferCounts steady = counter.transfer_counts();
  EXPECT_EQ(loom::host_waits(steady), loom::host_waits(before))
      << "the steady-state steps made the host wait";
  EXPECT_EQ(steady.host_to_device_copies, before.host_to_device_copies);

  // The one read-back is one wait, counted as a copy to the host; the loss is backend/cpu's.
  const HostTensor loss = mean_g.download(*gpu);
  const loom::TransferCounts read = counter.transfer_counts();
  EXPECT_EQ(read.device_to_host_copies, steady.device_to_host_copies + 1);
  EXPECT_EQ(read.synchronizations, steady.synchronizations);
  expect_close(loss.floats(), mean.floats(), 1e-4, 1e-5, "mean loss after 4 steps");

  gpu->synchronize();
  gpu->copy_from_host(dtable_g.buffer.data(), dtable.bytes.data(), dtable.bytes.size());
  const loom::TransferCounts last = counter.transfer_counts();
  EXPECT_EQ(last.synchronizations, read.synchronizations + 1);
  EXPECT_EQ(last.host_to_device_copies, read.host_to_device_copies + 1);
  EXPECT_EQ(last.device_to_host_copies, read.device_to_host_copies);
}

// One segment (global_norm, a regression head's squared error per micro-batch) needs no chunk table,
// so repeated calls never wait for the staging buffer; several segments still upload one.
TEST_F(TransferCountsTest, OneSegmentReductionsNeverWaitForTheStagingBuffer) {
  const int64_t n = 50000;
  HostTensor x = HostTensor::of(random_floats(n, 8), DType::f32, {n});
  DeviceTensor x_g = upload(x), out_g = upload(HostTensor::zeros(DType::f32, {2}));
  const int64_t one[] = {3, n - 5}, two[] = {0, 100, n};
  gpu->sum_squares(x_g.view(), two, 2, out_g.view());  // the scratch grows, the table goes up
  gpu->synchronize();
  const loom::TransferCounter& counter = *gpu;
  const loom::TransferCounts before = counter.transfer_counts();
  for (int i = 0; i < 4; ++i) {
    gpu->sum_squares(x_g.view(), one, 1, out_g.view().narrow(0, 0, 1));
    gpu->global_norm(x_g.view(), out_g.view().narrow(0, 1, 1));
  }
  EXPECT_EQ(loom::host_waits(counter.transfer_counts()), loom::host_waits(before))
      << "one-segment reductions waited for the staging buffer";
  HostTensor expected = HostTensor::zeros(DType::f32, {2});
  cpu.sum_squares(x.view(), one, 1, expected.view().narrow(0, 0, 1));
  cpu.global_norm(x.view(), expected.view().narrow(0, 1, 1));
  expect_close(out_g.download(*gpu).floats(), expected.floats(), 1e-6, 0.0, "one-segment sum and norm");
}

}  // namespace
}  // namespace loom_cuda_test
