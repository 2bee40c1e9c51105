// The comparisons every case makes, each reporting the worst or first offending element and never
// printing whole tensors: within a tolerance, bit for bit, the same zeros (a dropout mask), and an
// error whose message names what it must.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tensors.hpp"
#include "tolerances.hpp"

namespace loom_backend_ops {

/// Expects |actual − expected| ≤ atol + rtol·|expected| everywhere; names the worst element.
template <typename A, typename E>
void expect_close(const std::vector<A>& actual, const std::vector<E>& expected, Tolerance tolerance,
                  const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double worst = 0;
  size_t worst_index = 0;
  bool ok = true;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]), e = static_cast<double>(expected[i]);
    const double excess = std::abs(a - e) - (tolerance.atol + tolerance.rtol * std::abs(e));
    if (!(excess <= 0)) ok = false;
    if (!(excess <= worst)) {
      worst = std::isnan(excess) ? INFINITY : excess;
      worst_index = i;
    }
  }
  EXPECT_TRUE(ok) << what << ": worst element " << worst_index << " is "
                  << static_cast<double>(actual[worst_index]) << ", expected "
                  << static_cast<double>(expected[worst_index]) << " (excess " << worst << " over atol "
                  << tolerance.atol << " + rtol " << tolerance.rtol << "·|expected|)";
}

/// Expects bit-identical floats; names the first element that differs.
inline void expect_equal(const std::vector<float>& actual, const std::vector<float>& expected,
                         const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    if (std::memcmp(&actual[i], &expected[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected exactly "
                    << expected[i];
      return;
    }
}

/// Expects `count` elements of `actual` from `actual_first` to have exactly the bits of those of
/// `expected` from `expected_first` (any dtype); names the first that differs.
inline void expect_same_bits(const HostTensor& actual, int64_t actual_first, const HostTensor& expected,
                             int64_t expected_first, int64_t count, const std::string& what) {
  ASSERT_EQ(actual.dtype, expected.dtype) << what;
  ASSERT_LE(actual_first + count, actual.numel()) << what;
  ASSERT_LE(expected_first + count, expected.numel()) << what;
  const size_t size = loom::dtype_size(actual.dtype);
  const unsigned char* a = actual.bytes.data() + static_cast<size_t>(actual_first) * size;
  const unsigned char* e = expected.bytes.data() + static_cast<size_t>(expected_first) * size;
  if (std::memcmp(a, e, static_cast<size_t>(count) * size) == 0) return;
  for (int64_t i = 0; i < count; ++i)
    if (std::memcmp(a + static_cast<size_t>(i) * size, e + static_cast<size_t>(i) * size, size) != 0) {
      ADD_FAILURE() << what << ": element " << i << " is " << actual.get(actual_first + i)
                    << ", expected exactly " << expected.get(expected_first + i);
      return;
    }
}
inline void expect_same_bits(const HostTensor& actual, const HostTensor& expected, const std::string& what) {
  ASSERT_EQ(actual.shape, expected.shape) << what;
  expect_same_bits(actual, 0, expected, 0, actual.numel(), what);
}

/// Expects `actual` and `expected` to be exactly 0 at the same elements (a dropout mask).
inline void expect_same_zeros(const std::vector<float>& actual, const std::vector<float>& expected,
                              const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    if ((actual[i] == 0.0f) != (expected[i] == 0.0f)) {
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected " << expected[i]
                    << " (the masks differ)";
      return;
    }
}

/// Expects `call` to throw a loom::Error whose message holds every one of `words`.
template <typename Call>
void expect_error_naming(Call&& call, const std::vector<std::string>& words) {
  try {
    call();
  } catch (const loom::Error& e) {
    const std::string message = e.what();
    for (const std::string& word : words)
      EXPECT_NE(message.find(word), std::string::npos) << "\"" << word << "\" missing from: " << message;
    return;
  }
  ADD_FAILURE() << "no loom::Error was thrown (expected one naming \"" << words.front() << "\")";
}

}  // namespace loom_backend_ops
