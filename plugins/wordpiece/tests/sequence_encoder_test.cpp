// [CLS]/[SEP] layout, token types, masks, padding and transformers' truncation strategies.
#include <gtest/gtest.h>

#include <numeric>

#include "loom/sdk/error.hpp"
#include "sequence_encoder.hpp"
#include "wordpiece_test_support.hpp"

namespace loom::wordpiece::testing {
namespace {

constexpr LayoutIds kLayout{101, 102, 0};

struct Encoded {
  std::vector<int32_t> ids, types, mask;
  size_t length;
};

Encoded encode(const std::vector<int32_t>& a, const std::vector<int32_t>* b, EncodeOptions options,
               size_t capacity = 64) {
  Encoded e{std::vector<int32_t>(capacity, -7), std::vector<int32_t>(capacity, -7),
            std::vector<int32_t>(capacity, -7), 0};
  e.length = encode_sequences(a.data(), a.size(), b ? b->data() : nullptr, b ? b->size() : 0, options,
                              kLayout, EncodedBuffers{e.ids.data(), e.types.data(), e.mask.data(), capacity});
  const size_t kept = std::min(e.length, capacity);
  e.ids.resize(kept), e.types.resize(kept), e.mask.resize(kept);
  return e;
}

TEST(SequenceEncoder, SingleAndPairLayout) {
  const std::vector<int32_t> a{1, 2, 3}, b{4, 5};
  const Encoded single = encode(a, nullptr, EncodeOptions{});
  EXPECT_EQ(single.ids, (std::vector<int32_t>{101, 1, 2, 3, 102}));
  EXPECT_EQ(single.types, (std::vector<int32_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(single.mask, (std::vector<int32_t>{1, 1, 1, 1, 1}));
  const Encoded pair = encode(a, &b, EncodeOptions{});
  EXPECT_EQ(pair.ids, (std::vector<int32_t>{101, 1, 2, 3, 102, 4, 5, 102}));
  EXPECT_EQ(pair.types, (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1}));
}

TEST(SequenceEncoder, PadsToMaxLengthWithTypeZeroMaskZero) {
  const Encoded e = encode({7, 8}, nullptr, EncodeOptions{8, Truncation::longest_first, true});
  EXPECT_EQ(e.length, 8u);
  EXPECT_EQ(e.ids, (std::vector<int32_t>{101, 7, 8, 102, 0, 0, 0, 0}));
  EXPECT_EQ(e.mask, (std::vector<int32_t>{1, 1, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(e.types, (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(SequenceEncoder, LongestFirstRemovesFromTheLongerSecondOnTies) {
  const std::vector<int32_t> a{1, 2, 3, 4, 5, 6}, b{11, 12, 13};
  // 6 + 3 + 3 = 12 > 9: remove 3, all from a (the longer), leaving 3 and 3.
  EXPECT_EQ(encode(a, &b, EncodeOptions{9}).ids, (std::vector<int32_t>{101, 1, 2, 3, 102, 11, 12, 13, 102}));
  // Remove 4: three from a (now 3 and 3), then the tie goes to b.
  const Encoded e = encode(a, &b, EncodeOptions{8});
  EXPECT_EQ(e.ids, (std::vector<int32_t>{101, 1, 2, 3, 102, 11, 12, 102}));
  // Equal lengths, remove 3: second, first, second.
  const std::vector<int32_t> c{1, 2, 3, 4, 5}, d{11, 12, 13, 14, 15};
  EXPECT_EQ(encode(c, &d, EncodeOptions{10}).ids,
            (std::vector<int32_t>{101, 1, 2, 3, 4, 102, 11, 12, 13, 102}));
  // A single sequence is cut at the end.
  EXPECT_EQ(encode(a, nullptr, EncodeOptions{5}).ids, (std::vector<int32_t>{101, 1, 2, 3, 102}));
}

TEST(SequenceEncoder, OnlyFirstAndOnlySecond) {
  const std::vector<int32_t> a{1, 2, 3, 4}, b{11, 12, 13, 14};
  EXPECT_EQ(encode(a, &b, EncodeOptions{9, Truncation::only_first}).ids,
            (std::vector<int32_t>{101, 1, 2, 102, 11, 12, 13, 14, 102}));
  EXPECT_EQ(encode(a, &b, EncodeOptions{9, Truncation::only_second}).ids,
            (std::vector<int32_t>{101, 1, 2, 3, 4, 102, 11, 12, 102}));
  // Cannot fit: the chosen sequence would have to vanish.
  EXPECT_THROW(encode(a, &b, EncodeOptions{7, Truncation::only_second}), loom::Error);
  EXPECT_THROW(encode(a, nullptr, EncodeOptions{4, Truncation::only_second}), loom::Error);
  EXPECT_THROW(encode(a, nullptr, EncodeOptions{1}), loom::Error);
}

TEST(SequenceEncoder, NoneKeepsEverythingAndReportsTheLengthNeeded) {
  const std::vector<int32_t> a{1, 2, 3, 4, 5, 6};
  const Encoded e = encode(a, nullptr, EncodeOptions{4, Truncation::none}, /*capacity=*/3);
  EXPECT_EQ(e.length, 8u);
  EXPECT_EQ(e.ids, (std::vector<int32_t>{101, 1, 2}));
}

TEST(SequenceEncoder, TokenizerEncodesTextPairs) {
  const auto& t = uncased();
  std::vector<int32_t> ids(16), types(16), mask(16);
  const std::string a = "Hello, world!", b = "hello";
  const size_t n =
      t.encode(a.data(), a.size(), b.data(), b.size(), EncodeOptions{16, Truncation::longest_first, true},
               EncodedBuffers{ids.data(), types.data(), mask.data(), 16});
  EXPECT_EQ(n, 16u);
  EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + 9),
            (std::vector<int32_t>{101, 7592, 1010, 2088, 999, 102, 7592, 102, 0}));
  EXPECT_EQ(std::vector<int32_t>(types.begin(), types.begin() + 9),
            (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(std::accumulate(mask.begin(), mask.end(), 0), 8);
}

}  // namespace
}  // namespace loom::wordpiece::testing
