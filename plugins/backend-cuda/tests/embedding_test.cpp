// embedding_gather and the deterministic embedding_scatter_add against backend/cpu (bad ids:
// device_error_record_test.cpp).
#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

class EmbeddingTest : public CudaOpTest {};

TEST_F(EmbeddingTest, GatherOverwriteAndAccumulate) {
  const int64_t vocab = 1000, cols = 771, n = 131;
  HostTensor table = HostTensor::of(random_floats(vocab * cols, 1), DType::f32, {vocab, cols});
  DeviceTensor table_g = upload(table);
  for (DType id_type : {DType::i32, DType::i64})
    for (bool accumulate : {false, true}) {
      HostTensor ids = HostTensor::ids(random_ids(n, vocab, 2), id_type, {n});
      HostTensor out = HostTensor::of(random_floats(n * cols, 3), DType::f32, {n, cols});
      DeviceTensor ids_g = upload(ids), out_g = upload(out);
      cpu.embedding_gather(table.view(), ids.view(), out.view(), accumulate);
      gpu->embedding_gather(table_g.view(), ids_g.view(), out_g.view(), accumulate);
      expect_equal(out_g.download(*gpu).floats(), out.floats(), accumulate ? "gather +=" : "gather");
    }
}

TEST_F(EmbeddingTest, ScatterAddIsExactlyTheCpuOrderWithRepeatedIds) {
  const int64_t vocab = 50, cols = 771, n = 1031;  // ~20 repeats per id
  for (DType id_type : {DType::i32, DType::i64}) {
    HostTensor ids = HostTensor::ids(random_ids(n, vocab, 4), id_type, {n});
    HostTensor dout = HostTensor::of(random_floats(n * cols, 5), DType::f32, {n, cols});
    HostTensor dtable = HostTensor::of(random_floats(vocab * cols, 6), DType::f32, {vocab, cols});
    DeviceTensor ids_g = upload(ids), dout_g = upload(dout), dtable_g = upload(dtable);
    cpu.embedding_scatter_add(dout.view(), ids.view(), dtable.view());
    gpu->embedding_scatter_add(dout_g.view(), ids_g.view(), dtable_g.view());
    expect_equal(dtable_g.download(*gpu).floats(), dtable.floats(), "scatter_add");
  }
}

TEST_F(EmbeddingTest, ScatterAddAtProductionSizeIsExactlyTheCpuOrder) {
  // BERT's vocabulary and a batch of 256 × 128 ids, a third of them the padding id 0: the radix
  // sort takes several passes and one id groups ~11,000 rows.
  const int64_t vocab = 30522, cols = 40, n = 32768;
  std::vector<int64_t> values = random_ids(n, vocab, 7);
  for (size_t i = 0; i < values.size(); i += 3) values[i] = 0;
  HostTensor ids = HostTensor::ids(values, DType::i32, {n});
  HostTensor dout = HostTensor::of(random_floats(n * cols, 8), DType::f32, {n, cols});
  HostTensor dtable = HostTensor::of(random_floats(vocab * cols, 9), DType::f32, {vocab, cols});
  DeviceTensor ids_g = upload(ids), dout_g = upload(dout), dtable_g = upload(dtable);
  cpu.embedding_scatter_add(dout.view(), ids.view(), dtable.view());
  gpu->embedding_scatter_add(dout_g.view(), ids_g.view(), dtable_g.view());
  expect_equal(dtable_g.download(*gpu).floats(), dtable.floats(), "scatter_add, 32768 ids over 30522 rows");
}

}  // namespace
}  // namespace loom_cuda_test
