// Shards written by h5py in NVIDIA's layout (tools/make_h5py_shard_fixture.py; committed fixtures)
// read back: int8/int32 storage, int64 storage, 0-padded masked positions.
#include <gtest/gtest.h>

#include "dataset_test_support.hpp"
#include "hdf5_shard.hpp"

using namespace datasets_test;

namespace {

// The fixture's formula (see the script's docstring).
struct FixtureRow {
  std::vector<int32_t> ids, types, positions, masked;
  int32_t nsp;
};

FixtureRow fixture_row(int r) {
  FixtureRow row;
  const int n = 10 + r, a = 3 + r % 4;
  for (int j = 0; j < n; ++j) row.ids.push_back(1000 + 31 * r + j);
  row.ids[0] = 101;
  row.ids[static_cast<size_t>(a)] = 102;
  row.ids[static_cast<size_t>(n - 1)] = 102;
  for (int j = 0; j < n; ++j) row.types.push_back(j > a ? 1 : 0);
  row.positions = {1, 2, a + 1};
  if (r % 2 == 0) row.positions.push_back(a + 2);
  for (int32_t p : row.positions) {
    row.masked.push_back(row.ids[static_cast<size_t>(p)]);
    row.ids[static_cast<size_t>(p)] = 103;
  }
  row.nsp = r % 2;
  return row;
}

void expect_fixture_batches(const std::string& file) {
  auto dataset = make_dataset("pretraining-shards",
                              "files = \"" + data_file(file) + "\"\nbatch_size = 5\nshuffle = false\n");
  dataset.call([&](loom::Dataset& d) {
    d.open(setup());
    ASSERT_EQ(d.size(), 12u);
    EXPECT_EQ(d.limits().max_seq_length, 32);
    EXPECT_EQ(d.limits().max_predictions, 5);
    Batch batch(d.limits());
    int row_index = 0;
    do {
      batch.shape = d.next_batch(batch.buffers());
      for (int32_t r = 0; r < batch.shape.rows; ++r, ++row_index) {
        const FixtureRow expected = fixture_row(row_index);
        for (int32_t c = 0; c < batch.shape.seq; ++c) {
          const size_t cc = static_cast<size_t>(c);
          const bool real = cc < expected.ids.size();
          EXPECT_EQ(batch.at(batch.input_ids, r, c), real ? expected.ids[cc] : 0);
          EXPECT_EQ(batch.at(batch.token_type_ids, r, c), real ? expected.types[cc] : 0);
          EXPECT_EQ(batch.at(batch.attention_mask, r, c), real ? 1 : 0);
          const auto where = std::find(expected.positions.begin(), expected.positions.end(), c);
          EXPECT_EQ(batch.at(batch.mlm_labels, r, c),
                    where == expected.positions.end()
                        ? -1
                        : expected.masked[static_cast<size_t>(where - expected.positions.begin())]);
        }
        for (size_t p = 0; p < 5; ++p) {
          const size_t at = static_cast<size_t>(r) * 5 + p;
          EXPECT_EQ(batch.masked_positions[at], p < expected.positions.size() ? expected.positions[p] : 0);
          EXPECT_EQ(batch.masked_ids[at], p < expected.masked.size() ? expected.masked[p] : 0);
        }
        EXPECT_EQ(batch.next_sentence_labels[static_cast<size_t>(r)], expected.nsp);
      }
    } while (batch.shape.last_in_epoch == 0);
    EXPECT_EQ(row_index, 12);
  });
}

}  // namespace

TEST(H5pyFixture, NvidiaLayoutShardReadsBack) {
  const loom_datasets::ShardShape shape = loom_datasets::read_shard_shape(data_file("h5py_shard.hdf5"));
  EXPECT_EQ(shape.instances, 12u);
  EXPECT_EQ(shape.seq_length, 32);
  EXPECT_EQ(shape.predictions, 5);
  expect_fixture_batches("h5py_shard.hdf5");
}

TEST(H5pyFixture, Int64StorageReadsBackTheSame) {
  expect_fixture_batches("h5py_shard_int64.hdf5");
}
