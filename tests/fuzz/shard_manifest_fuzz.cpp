// libFuzzer target for the manifest.json that `loom prep pretraining` writes beside its shards, as
// dataset/pretraining-shards checks it against the run's vocabulary (shard_manifest.hpp). The input
// is the manifest, checked without a tokenizer, against a tokenizer by size, and by SHA-256.
// Properties: every refusal is a loom::IoError; a manifest that is read names a vocabulary of 1 to
// 2^31 - 1 tokens (0: not a Loom manifest); a manifest accepted against a tokenizer agrees with it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "loom/sdk/error.hpp"
#include "shard_manifest.hpp"

using loom_fuzz::require;

namespace {

// What check_shard_manifests asks of a tokenizer: its size.
class SizedTokenizer final : public loom::Tokenizer {
 public:
  explicit SizedTokenizer(std::int32_t size) : size_(size) {}
  std::int32_t vocab_size() const override { return size_; }
  const char* id_to_token(std::int32_t) const override { return nullptr; }
  std::int32_t token_to_id(const char*, std::size_t) const override { return -1; }
  loom::SpecialTokenIds special_token_ids() const override { return {-1, -1, -1, -1, -1}; }
  bool is_continuation(std::int32_t) const override { return false; }
  bool lower_case() const override { return true; }
  std::size_t tokenize(const char*, std::size_t, std::int32_t*, std::size_t) const override { return 0; }
  std::size_t pre_tokenize(const char*, std::size_t, char*, std::size_t) const override { return 0; }
  std::size_t encode(const char*, std::size_t, const char*, std::size_t, const loom::EncodeOptions&,
                     const loom::EncodedBuffers&) const override {
    return 0;
  }
  std::size_t encode_ids(const std::int32_t*, std::size_t, const std::int32_t*, std::size_t,
                         const loom::EncodeOptions&, const loom::EncodedBuffers&) const override {
    return 0;
  }
  std::size_t decode(const std::int32_t*, std::size_t, const loom::DecodeOptions&, char*, std::size_t) const override {
    return 0;
  }
  std::uint64_t invalid_utf8_replacements() const override { return 0; }

 private:
  std::int32_t size_;
};

constexpr const char* kSha256 = "5d41402abc4b2a76b9719d911017c592ae8f2d5d41402abc4b2a76b9719d9110";

void check(const std::vector<std::string>& files, const loom::Tokenizer* tokenizer,
           const loom_datasets::RunVocabularyFile& run) {
  loom_datasets::ManifestVocabulary found;
  try {
    found = loom_datasets::check_shard_manifests(files, tokenizer, run);
  } catch (const loom::IoError&) {
    return;
  }
  require(found.size >= 0, "a vocabulary size is not negative");
  require(found.size == 0 || !found.manifest.empty(), "a recorded vocabulary names its manifest");
  if (tokenizer != nullptr && found.size != 0 && run.sha256.empty())
    require(found.size == tokenizer->vocab_size(), "an accepted manifest has the tokenizer's size");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  loom_fuzz::write_scratch_file("manifest.json", std::string_view(reinterpret_cast<const char*>(data), size));
  const std::vector<std::string> files = {(loom_fuzz::scratch_directory() / "shard_00000.hdf5").string()};
  const SizedTokenizer tokenizer(30522);
  check(files, nullptr, {});
  check(files, &tokenizer, {});
  check(files, &tokenizer, {"vocab.txt", kSha256});
  return 0;
}
