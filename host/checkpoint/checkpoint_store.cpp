// The checkpoints/ directory: atomic commit, MANIFEST verification, latest, pruning.
#include "checkpoint/checkpoint_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "files/atomic_file.hpp"
#include "files/sha256.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

constexpr const char* kManifest = "MANIFEST";
constexpr const char* kLatest = "latest";
constexpr const char* kStagingPrefix = ".partial-";

void fsync_path(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw std::runtime_error(path.string() + ": open for fsync failed");
  const int result = ::fsync(fd);
  ::close(fd);
  if (result != 0) throw std::runtime_error(path.string() + ": fsync failed");
}

// MANIFEST: one line per file, "<sha256>  <relative path>", sorted by path (sha256sum's format,
// so `sha256sum -c MANIFEST` checks a checkpoint by hand).
std::map<std::string, std::string> read_manifest(const fs::path& checkpoint) {
  std::ifstream in(checkpoint / kManifest);
  if (!in) throw std::runtime_error("no MANIFEST");
  std::map<std::string, std::string> entries;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const size_t split = line.find("  ");
    if (split != 64) throw std::runtime_error("MANIFEST line is malformed: " + line);
    entries[line.substr(split + 2)] = line.substr(0, split);
  }
  return entries;
}

// The step a checkpoint directory's name carries ("step-000500" → 500); nullopt for other names.
// Ordering is by this number, not by name: past step 999,999 the names grow a digit and
// "step-1000000" sorts before "step-999999", which would rotate away the newest checkpoint.
std::optional<uint64_t> step_of(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() == 5 || name.size() > 5 + 19) return std::nullopt;
  uint64_t step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    step = step * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return step;
}

bool is_checkpoint_name(const std::string& name) {
  return step_of(name).has_value();
}

}  // namespace

CheckpointStore::CheckpointStore(fs::path directory, int keep)
    : directory_(std::move(directory)), keep_(keep) {
  if (keep_ < 1) throw std::invalid_argument("checkpoint.keep must be at least 1");
}

std::string CheckpointStore::name_for_step(uint64_t step) {
  return fmt::format("step-{:06d}", step);
}

std::vector<fs::path> CheckpointStore::remove_partial() const {
  std::vector<fs::path> removed;
  std::error_code error;
  if (!fs::is_directory(directory_, error)) return removed;
  for (const auto& entry : fs::directory_iterator(directory_))
    if (entry.path().filename().string().rfind(kStagingPrefix, 0) == 0) removed.push_back(entry.path());
  std::sort(removed.begin(), removed.end());
  for (const auto& path : removed) fs::remove_all(path);
  return removed;
}

fs::path CheckpointStore::commit(uint64_t step, const std::function<void(const fs::path&)>& fill) {
  fs::create_directories(directory_);
  const std::string name = name_for_step(step);
  const fs::path staging = directory_ / (kStagingPrefix + name);
  const fs::path final_path = directory_ / name;
  try {
    fs::remove_all(staging);
    fs::create_directories(staging);
    fill(staging);

    std::vector<std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(staging))
      if (entry.is_regular_file()) files.push_back(fs::relative(entry.path(), staging).string());
    std::sort(files.begin(), files.end());
    std::ostringstream manifest;
    for (const auto& file : files) {
      manifest << sha256_file_hex(staging / file) << "  " << file << "\n";
      fsync_path(staging / file, O_RDONLY);
    }
    write_file_atomically(staging / kManifest, manifest.str());
    fsync_path(staging, O_RDONLY | O_DIRECTORY);

    // Fault injection for the crash-safety test: die between filling and publishing this checkpoint.
    if (const char* kill_at = std::getenv("LOOM_FAULT_KILL_IN_CHECKPOINT");
        kill_at != nullptr && name == kill_at)
      std::raise(SIGKILL);

    // A checkpoint of the same step (a re-run after resume) is replaced as a whole.
    if (fs::exists(final_path)) fs::remove_all(final_path);
    fs::rename(staging, final_path);
  } catch (...) {
    // A failed write (full disk, I/O error) must not leave its debris: on a nearly full disk a
    // long run would pile up one partial checkpoint per attempt.
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    if (ignored) spdlog::warn("could not remove {}: {}", staging.string(), ignored.message());
    throw;
  }
  fsync_path(directory_, O_RDONLY | O_DIRECTORY);
  write_file_atomically(directory_ / kLatest, name + "\n");
  prune(final_path);
  return final_path;
}

std::vector<fs::path> CheckpointStore::complete() const {
  std::vector<std::pair<uint64_t, fs::path>> found;
  std::error_code error;
  if (!fs::is_directory(directory_, error)) return {};
  for (const auto& entry : fs::directory_iterator(directory_)) {
    const std::optional<uint64_t> step = step_of(entry.path().filename().string());
    if (entry.is_directory() && step && fs::exists(entry.path() / kManifest))
      found.emplace_back(*step, entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  for (auto& [step, path] : found) paths.push_back(std::move(path));
  return paths;
}

std::optional<fs::path> CheckpointStore::latest() const {
  std::ifstream in(directory_ / kLatest);
  std::string name;
  if (in && std::getline(in, name) && is_checkpoint_name(name) && fs::exists(directory_ / name / kManifest))
    return directory_ / name;
  auto all = complete();
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::string CheckpointStore::verify(const fs::path& checkpoint) {
  return verify(checkpoint, {});
}

std::string CheckpointStore::verify(const fs::path& checkpoint, const std::vector<std::string>& files) {
  std::map<std::string, std::string> entries;
  try {
    entries = read_manifest(checkpoint);
  } catch (const std::exception& e) {
    return e.what();
  }
  if (entries.empty()) return "MANIFEST lists no files";
  for (const auto& [file, expected] : entries) {
    if (!files.empty() && std::find(files.begin(), files.end(), file) == files.end()) continue;
    const fs::path path = checkpoint / file;
    // A name the file system cannot look up (longer than NAME_MAX, a loop of links) is a problem of
    // this checkpoint like a missing file, not an exception out of verify.
    std::error_code error;
    const bool exists = fs::exists(path, error);
    if (error) return file + " cannot be looked up: " + error.message();
    if (!exists) return file + " is missing";
    std::string actual;
    try {
      actual = sha256_file_hex(path);
    } catch (const std::exception& e) {
      return e.what();
    }
    if (actual != expected)
      return file + " does not match its sha256 in MANIFEST (the file was changed or damaged)";
  }
  return "";
}

std::optional<fs::path> CheckpointStore::resolve(const std::string& request) const {
  fs::path chosen;
  if (request == "auto") {
    auto newest = latest();
    if (!newest) return std::nullopt;
    chosen = *newest;
  } else {
    chosen = request;
    if (!fs::is_directory(chosen)) throw std::runtime_error(request + ": no such checkpoint directory");
  }
  const std::string problem = verify(chosen);
  if (problem.empty()) return chosen;
  std::string offer;
  auto all = complete();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (*it == chosen || !verify(*it).empty()) continue;
    offer = fmt::format("; the newest intact checkpoint is {}: resume from it with --resume {}", it->string(),
                        it->string());
    break;
  }
  throw std::runtime_error(fmt::format("checkpoint {} is damaged: {}{}", chosen.string(), problem,
                                       offer.empty() ? "; no intact checkpoint is left" : offer));
}

void CheckpointStore::prune(const fs::path& keep_at_least) const {
  auto all = complete();
  const size_t keep = static_cast<size_t>(keep_);
  if (all.size() <= keep) return;
  for (size_t i = 0; i + keep < all.size(); ++i)
    if (all[i] != keep_at_least) fs::remove_all(all[i]);
}

}  // namespace loom::host
