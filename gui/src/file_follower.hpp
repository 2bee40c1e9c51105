// FileFollower (--replay FILE): reads a metrics.jsonl and keeps following it while it grows, like
// `tail -f`; a file that shrinks (a new run in the same directory) is read again from the start.
// A hello is made from recipe.resolved.toml beside the file, so the run panel shows the run's name,
// total steps and recipe.
#pragma once

#include <atomic>
#include <filesystem>
#include <thread>

#include "run_source.hpp"

namespace loom::dash {

class FileFollower final : public RunSource {
 public:
  explicit FileFollower(std::filesystem::path path);
  ~FileFollower() override;
  bool controllable() const override { return false; }
  void send(loom::host::RunCommand) override {}
  bool caught_up() const override { return caught_up_; }

 private:
  void follow();
  std::filesystem::path path_;
  std::atomic<bool> stop_{false}, caught_up_{false};
  std::thread thread_;
};

/// The hello of a replayed run, from the recipe.resolved.toml next to `metrics_file` (a minimal
/// one naming the file when there is none).
nlohmann::json hello_for_replay(const std::filesystem::path& metrics_file);

}  // namespace loom::dash
