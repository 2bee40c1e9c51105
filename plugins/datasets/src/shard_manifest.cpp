// Shard manifests against the run's vocabulary; see shard_manifest.hpp.
#include "shard_manifest.hpp"

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "loom/sdk/error.hpp"

namespace loom_datasets {
namespace {

namespace fs = std::filesystem;

struct Recorded {
  std::string path;
  std::string sha256;
  int64_t size = 0;
};

// The "vocab" record of a Loom manifest; nullopt-like (empty path and size 0) for another file.
bool read_record(const fs::path& manifest, Recorded& out) {
  std::ifstream in(manifest, std::ios::binary);
  if (!in) throw loom::IoError(manifest.string() + ": cannot be read");
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    throw loom::IoError(manifest.string() + ": not a JSON object (a loom prep pretraining manifest?)");
  // Another program's manifest.json — no "format", another one, or one that is not even a string —
  // is not ours: nothing to check.
  const auto format = json.find("format");
  if (format == json.end() || *format != "loom-pretraining-shards") return false;
  const auto bad = [&](const std::string& key, const std::string& expected) {
    throw loom::IoError(manifest.string() + ": key '" + key + "': missing or not " + expected +
                        " (run loom prep pretraining again to rewrite it)");
  };
  const auto vocab = json.find("vocab");
  if (vocab == json.end() || !vocab->is_object()) bad("vocab", "an object");
  const auto path = vocab->find("path");
  const auto sha256 = vocab->find("sha256");
  const auto size = vocab->find("size");
  if (path == vocab->end() || !path->is_string()) bad("vocab.path", "a string");
  if (sha256 == vocab->end() || !sha256->is_string() || sha256->get<std::string>().size() != 64)
    bad("vocab.sha256", "a 64-digit hex string");
  if (size == vocab->end() || !size->is_number_integer() || size->get<int64_t>() < 1 ||
      size->get<int64_t>() > INT32_MAX)
    bad("vocab.size", "a positive 32-bit integer");
  out = {path->get<std::string>(), sha256->get<std::string>(), size->get<int64_t>()};
  return true;
}

}  // namespace

ManifestVocabulary check_shard_manifests(const std::vector<std::string>& files,
                                         const loom::Tokenizer* tokenizer, const RunVocabularyFile& run) {
  std::set<fs::path> directories;
  for (const std::string& file : files) directories.insert(fs::absolute(fs::path(file)).parent_path());
  ManifestVocabulary found;
  for (const fs::path& directory : directories) {
    const fs::path manifest = directory / "manifest.json";
    std::error_code error;
    if (!fs::is_regular_file(manifest, error)) continue;
    Recorded recorded;
    if (!read_record(manifest, recorded)) continue;
    if (found.size != 0 && found.size != recorded.size)
      throw loom::IoError(manifest.string() + ": the shards were prepared with " + recorded.path + " (" +
                          std::to_string(recorded.size) + " tokens), those in " + found.manifest + " with " +
                          found.path + " (" + std::to_string(found.size) +
                          " tokens): one run reads shards of one vocabulary");
    found = {static_cast<int32_t>(recorded.size), recorded.path, manifest.string()};
    if (tokenizer == nullptr) continue;
    const std::string theirs = recorded.path + " (sha256 " + recorded.sha256.substr(0, 12) + "…, " +
                               std::to_string(recorded.size) + " tokens)";
    const bool by_hash = !run.sha256.empty();
    const std::string ours_path = run.path.empty() ? "its vocabulary" : run.path;
    const std::string ours = ours_path + " (" +
                             (by_hash ? "sha256 " + run.sha256.substr(0, 12) + "…, " : "") +
                             std::to_string(tokenizer->vocab_size()) + " tokens)";
    const bool same = by_hash ? recorded.sha256 == run.sha256 : recorded.size == tokenizer->vocab_size();
    if (!same)
      throw loom::IoError(manifest.string() + ": these shards were prepared with the vocabulary " + theirs +
                          ", but the run's [tokenizer] reads " + ours +
                          ": every token id would name another token. Point [tokenizer] vocab at the "
                          "vocabulary the shards were prepared with, or prepare them again with this one "
                          "(loom prep pretraining --vocab " +
                          (run.path.empty() ? std::string("<the [tokenizer]'s vocab file>") : run.path) +
                          ")");
  }
  return found;
}

}  // namespace loom_datasets
