// CheckpointStore: the checkpoints/ directory of a run (docs/design.md §6) and its crash safety.
//
//   checkpoints/step-000500/   files of one checkpoint + MANIFEST (sha256 of every other file)
//   checkpoints/latest         the name of the newest complete checkpoint ("step-000500")
//
// `commit` fills a staging directory (.partial-step-000500) through a callback, writes MANIFEST,
// fsyncs every file and the directory, renames it to its final name, fsyncs checkpoints/, and
// only then replaces `latest` (atomically) and prunes beyond `keep`. A crash or kill at any point
// leaves either the previous state or the complete new checkpoint: staging directories are never
// chosen for resume. A commit that fails (full disk) removes its staging directory before the
// error propagates; one left by a killed process is removed by `remove_partial` when the next run
// starts. `resolve` verifies the MANIFEST before a
// checkpoint is used; a damaged one is refused with a message that names the problem and offers
// the newest intact checkpoint.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace loom::host {

class CheckpointStore {
 public:
  /// `directory` is runs/<name>/checkpoints (created on first commit); keeps the newest `keep`.
  CheckpointStore(std::filesystem::path directory, int keep);

  /// "step-000500" for step 500.
  static std::string name_for_step(uint64_t step);

  /// Writes checkpoint `step`: `fill(staging_directory)` writes its files; returns the final path.
  std::filesystem::path commit(uint64_t step, const std::function<void(const std::filesystem::path&)>& fill);

  /// Removes the staging directories (.partial-*) a killed commit left; returns what it removed.
  /// Only the run directory's owner may call it (a live commit of another process would be lost).
  std::vector<std::filesystem::path> remove_partial() const;

  /// Complete checkpoints (those with a MANIFEST, not staging), oldest first: by step number, so
  /// rotation never takes the newest for the oldest when the step names grow a digit.
  std::vector<std::filesystem::path> complete() const;
  /// The checkpoint `latest` names, or the newest complete one when `latest` is missing.
  std::optional<std::filesystem::path> latest() const;

  /// "" when every file listed in `checkpoint`'s MANIFEST exists with the recorded sha256 and no
  /// listed file is missing; otherwise a description of the first problem.
  static std::string verify(const std::filesystem::path& checkpoint);
  /// As `verify`, for the listed `files` of the MANIFEST only (those a reader is about to use;
  /// a file the MANIFEST does not list is not checked).
  static std::string verify(const std::filesystem::path& checkpoint, const std::vector<std::string>& files);

  /// The checkpoint to resume from: `request` is "auto" (the newest; none → nullopt) or a path to
  /// a checkpoint directory. Throws std::runtime_error when it fails verification, naming the
  /// newest intact alternative when there is one.
  std::optional<std::filesystem::path> resolve(const std::string& request) const;

  const std::filesystem::path& directory() const { return directory_; }

 private:
  void prune(const std::filesystem::path& keep_at_least) const;

  std::filesystem::path directory_;
  int keep_;
};

}  // namespace loom::host
