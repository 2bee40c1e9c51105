// What the fuzz harnesses share: a check that aborts (so libFuzzer records the input as a crash),
// a scratch directory for readers that take a path rather than bytes, and splitting an input into
// the parts a harness feeds to different files or calls.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace loom_fuzz {

/// A property the harness checks: abort() leaves the input as a crash artifact with a stack.
inline void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
  }
}

/// One directory per fuzzer process (several run at once under ctest -j), removed at exit.
inline const std::filesystem::path& scratch_directory() {
  static const std::filesystem::path directory = [] {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/loom-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_directory(), ignored);
    });
    return std::filesystem::path(pattern);
  }();
  return directory;
}

/// Writes `bytes` to `name` in the scratch directory (replacing it) and returns its path.
inline std::string write_scratch_file(const std::string& name, std::string_view bytes) {
  const std::filesystem::path path = scratch_directory() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  require(out.good(), "the scratch file could be written");
  return path.string();
}

/// The parts of `input` between lines that hold only `separator` ("a\n%%\nb" → "a\n", "b"): a
/// harness that feeds several files takes them from one input, and a seed is their concatenation.
inline std::vector<std::string_view> split_parts(std::string_view input, std::string_view separator) {
  std::vector<std::string_view> parts;
  const std::string marker = "\n" + std::string(separator) + "\n";
  size_t start = 0;
  for (;;) {
    const size_t found = input.find(marker, start);
    if (found == std::string_view::npos) {
      parts.push_back(input.substr(start));
      return parts;
    }
    parts.push_back(input.substr(start, found + 1 - start));
    start = found + marker.size();
  }
}

}  // namespace loom_fuzz
