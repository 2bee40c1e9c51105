// Embeddings: embedding_gather (overwrite and accumulate) and embedding_scatter_add (repeated ids
// add up) against central differences, an id outside the table an error naming it; and exactly the
// reference's results — the scatter-add's order of additions included — with i32 and i64 ids, odd
// widths, ~20 repeats per id, and BERT's vocabulary under a batch of 256 × 128 ids; and that order
// itself (loom_backend::kScatterAddChunkRows), computed here, over ids with hundreds of rows each.
#include "backend_op_case.hpp"
#include "loom_backend/op_contracts.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;

LOOM_BACKEND_OP_FAMILY(Embedding);

TEST_P(Embedding, GatherAndScatterAddMatchFiniteDifferences) {
  const int64_t V = 11, C = 6, B = 2, T = 5;
  const auto table = random_floats(V * C, 81), w = random_floats(B * T * C, 82);
  const std::vector<int64_t> ids = {3, 0, 10, 3, 3, 7, 1, 0, 9, 10};
  DeviceTensor table_dev = upload(HostTensor::of(table, DType::f32, {V, C})),
               ids_dev = upload(HostTensor::ids(ids, DType::i64, {B, T})),
               out = upload(HostTensor::of(std::vector<float>(B * T * C, 5.0f), DType::f32, {B, T, C})),
               acc = upload(HostTensor::of(std::vector<float>(B * T * C, 1.0f), DType::f32, {B * T, C})),
               w_dev = upload(HostTensor::of(w, DType::f32, {B, T, C})),
               dtable = upload(HostTensor::of(std::vector<float>(V * C, 0.25f), DType::f32, {V, C}));
  backend().embedding_gather(table_dev.view(), ids_dev.view(), out.view(), false);
  const auto forward = [&](const std::vector<double>& tab) {
    std::vector<double> o(B * T * C);
    for (int64_t i = 0; i < B * T; ++i)
      for (int64_t c = 0; c < C; ++c) o[i * C + c] = tab[ids[i] * C + c];
    return o;
  };
  const auto td = to_double(table);
  expect_close(read(out), forward(td), kExact, "gather");
  backend().embedding_gather(table_dev.view(), ids_dev.view(), acc.view(), true);
  expect_close(read(acc), plus(forward(td), 1.0), kOneAdditionAgainstFloat64, "gather accumulated onto 1");
  backend().embedding_scatter_add(w_dev.view(), ids_dev.view(), dtable.view());
  const auto expected = numeric_gradient([&](const auto& v) { return weighted_sum(forward(v), w); }, td);
  expect_close(read(dtable), plus(expected, 0.25), kShortSumAgainstFloat64, "scatter-add (id 3 three times)");
}

TEST_P(Embedding, AnIdOutsideTheTableIsAnErrorNamingIt) {
  // A device backend may report it at its next synchronisation (backend.hpp), once.
  const int64_t V = 4, C = 3;
  const auto table = random_floats(V * C, 83);
  DeviceTensor table_dev = upload(HostTensor::of(table, DType::f32, {V, C})),
               bad_ids = upload(HostTensor::ids({1, 4}, DType::i32, {2})),
               out = upload_zeros(DType::f32, {2, C});
  expect_error_naming(
      [&] {
        backend().embedding_gather(table_dev.view(), bad_ids.view(), out.view(), false);
        backend().synchronize();
      },
      {"embedding_gather", "ids[1] = 4 is outside [0, 4)"});
  DeviceTensor ids = upload(HostTensor::ids({1, 2}, DType::i32, {2}));
  backend().embedding_gather(table_dev.view(), ids.view(), out.view(), false);
  EXPECT_EQ(read(out)[3], table[2 * C]);
}

TEST_P(Embedding, GatherOverwriteAndAccumulateAreTheReferencesBits) {
  const int64_t vocab = 1000, cols = 771, n = 131;
  HostTensor table = HostTensor::of(random_floats(vocab * cols, 1), DType::f32, {vocab, cols});
  DeviceTensor table_dev = upload(table);
  for (DType id_type : {DType::i32, DType::i64})
    for (bool accumulate : {false, true}) {
      HostTensor ids = HostTensor::ids(random_ids(n, vocab, 2), id_type, {n});
      HostTensor out = HostTensor::of(random_floats(n * cols, 3), DType::f32, {n, cols});
      DeviceTensor ids_dev = upload(ids), out_dev = upload(out);
      reference().embedding_gather(table.view(), ids.view(), out.view(), accumulate);
      backend().embedding_gather(table_dev.view(), ids_dev.view(), out_dev.view(), accumulate);
      expect_equal(read(out_dev), out.floats(),
                   std::string(loom::dtype_name(id_type)) + (accumulate ? " gather +=" : " gather"));
    }
}

TEST_P(Embedding, ScatterAddIsTheReferencesOrderWithRepeatedIds) {
  const int64_t vocab = 50, cols = 771, n = 1031;  // ~20 repeats per id
  for (DType id_type : {DType::i32, DType::i64}) {
    HostTensor ids = HostTensor::ids(random_ids(n, vocab, 4), id_type, {n});
    HostTensor dout = HostTensor::of(random_floats(n * cols, 5), DType::f32, {n, cols});
    HostTensor dtable = HostTensor::of(random_floats(vocab * cols, 6), DType::f32, {vocab, cols});
    DeviceTensor ids_dev = upload(ids), dout_dev = upload(dout), dtable_dev = upload(dtable);
    reference().embedding_scatter_add(dout.view(), ids.view(), dtable.view());
    backend().embedding_scatter_add(dout_dev.view(), ids_dev.view(), dtable_dev.view());
    expect_equal(read(dtable_dev), dtable.floats(), std::string("scatter_add ") + loom::dtype_name(id_type));
  }
}

TEST_P(Embedding, ScatterAddAddsLongRunsOfOneIdInTheDocumentedOrder) {
  // Three ids over 1,000 rows (~333 each: the first R rows one by one, then a full run of R and a
  // shorter one, each summed from zero): the table rows bit for bit as that order gives them.
  constexpr int64_t R = loom_backend::kScatterAddChunkRows;
  const int64_t vocab = 3, cols = 37, n = 1000;
  const std::vector<int64_t> values = random_ids(n, vocab, 21);
  const std::vector<float> dout = random_floats(n * cols, 22), table = random_floats(vocab * cols, 23);
  std::vector<float> expected = table;
  for (int64_t id = 0; id < vocab; ++id)
    for (int64_t c = 0; c < cols; ++c) {
      float& target = expected[id * cols + c];
      float run = 0.0f;
      int64_t seen = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (values[i] != id) continue;
        const float v = dout[i * cols + c];
        if (seen < R) {
          target += v;
        } else {
          if (seen % R == 0) run = 0.0f;
          run += v;
          if (seen % R == R - 1) target += run;
        }
        ++seen;
      }
      if (seen > R && seen % R != 0) target += run;  // the id's last run, shorter than R
    }
  DeviceTensor ids_dev = upload(HostTensor::ids(values, DType::i64, {n}));
  DeviceTensor dout_dev = upload(HostTensor::of(dout, DType::f32, {n, cols}));
  DeviceTensor dtable_dev = upload(HostTensor::of(table, DType::f32, {vocab, cols}));
  backend().embedding_scatter_add(dout_dev.view(), ids_dev.view(), dtable_dev.view());
  expect_equal(read(dtable_dev), expected, "scatter_add, ~333 rows per id");
}

TEST_P(Embedding, ScatterAddOverTheBertVocabularyIsTheReferencesOrder) {
  // BERT's vocabulary and a batch of 256 × 128 ids, a third of them the padding id 0: one id groups
  // ~11,000 rows (a device backend's sort takes several passes).
  const int64_t vocab = 30522, cols = 40, n = 32768;
  std::vector<int64_t> values = random_ids(n, vocab, 7);
  for (size_t i = 0; i < values.size(); i += 3) values[i] = 0;
  HostTensor ids = HostTensor::ids(values, DType::i32, {n});
  HostTensor dout = HostTensor::of(random_floats(n * cols, 8), DType::f32, {n, cols});
  HostTensor dtable = HostTensor::of(random_floats(vocab * cols, 9), DType::f32, {vocab, cols});
  DeviceTensor ids_dev = upload(ids), dout_dev = upload(dout), dtable_dev = upload(dtable);
  reference().embedding_scatter_add(dout.view(), ids.view(), dtable.view());
  backend().embedding_scatter_add(dout_dev.view(), ids_dev.view(), dtable_dev.view());
  expect_equal(read(dtable_dev), dtable.floats(), "scatter_add, 32768 ids over 30522 rows");
}

}  // namespace
}  // namespace loom_backend_ops
