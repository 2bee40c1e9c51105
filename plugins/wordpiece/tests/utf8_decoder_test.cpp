// UTF-8 decoding with maximal-subpart U+FFFD substitution (Unicode §3.9 / Python errors="replace").
#include <gtest/gtest.h>

#include "utf8_decoder.hpp"

namespace loom::wordpiece {
namespace {

std::u32string decode_all(const std::string& bytes, uint64_t* replacements) {
  std::u32string out;
  size_t position = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  while (position < bytes.size()) out.push_back(decode_utf8(data, bytes.size(), &position, replacements));
  return out;
}

TEST(Utf8Decoder, DecodesEveryLength) {
  uint64_t r = 0;
  EXPECT_EQ(decode_all("a\u00E9\u20AC\U0001F600", &r), U"a\u00E9\u20AC\U0001F600");
  EXPECT_EQ(r, 0u);
}

TEST(Utf8Decoder, ReplacesMaximalSubpartsLikePython) {
  // Python: b"...".decode("utf-8", "replace") gives exactly these.
  struct Case {
    std::string bytes;
    std::u32string expected;
  } cases[] = {
      {"\x80", U"\uFFFD"},
      {"\xC0\xAF", U"\uFFFD\uFFFD"},                      // overlong: C0 never starts a sequence
      {"\xE0\x80\xAF", U"\uFFFD\uFFFD\uFFFD"},            // overlong 3-byte
      {"\xED\xA0\x80", U"\uFFFD\uFFFD\uFFFD"},            // surrogate
      {"\xF4\x90\x80\x80", U"\uFFFD\uFFFD\uFFFD\uFFFD"},  // above U+10FFFF
      {"\xE2\x82", U"\uFFFD"},                            // truncated: one maximal subpart
      {"\xE2\x82\x41", U"\uFFFDA"},
      {"\xF0\x9F\x98", U"\uFFFD"},
      {"\xF0\x9F\x98\x41\x80", U"\uFFFDA\uFFFD"},
      {"\xFF\xFE", U"\uFFFD\uFFFD"},
  };
  for (const Case& c : cases) {
    uint64_t r = 0;
    EXPECT_EQ(decode_all(c.bytes, &r), c.expected);
    uint64_t expected_count = 0;
    for (char32_t x : c.expected) expected_count += x == 0xFFFD;
    EXPECT_EQ(r, expected_count);
  }
}

}  // namespace
}  // namespace loom::wordpiece
