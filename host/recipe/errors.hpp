// The host's error types and the process exit code each maps to (docs/design.md §7):
// 0 ok, 1 runtime failure, 2 usage or recipe error, 3 plugin load error.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace loom::host {

enum ExitCode : int { kExitOk = 0, kExitRuntime = 1, kExitUsage = 2, kExitPluginLoad = 3 };

/// A plugin file could not be used: not loadable, wrong ABI or toolchain, or conflicting.
class PluginLoadError : public std::runtime_error {
 public:
  PluginLoadError(std::string path, const std::string& reason)
      : std::runtime_error(path + ": " + reason), path_(std::move(path)), reason_(reason) {}
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_;
  std::string reason_;
};

/// A plugin's code failed while the host called it; names the plugin and the component.
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Another process owns the run directory (RunDirectoryLock): exit 2, the user chose a directory
/// that is in use; the message names the owner and what to do.
class RunDirectoryInUse : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A data file named on the command line is malformed (e.g. `loom score`'s inputs): exit 2; the
/// message names the file, where in it, and what was expected.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Problems in a recipe or in component options; each line is "file:line:col: key: message".
class RecipeError : public std::runtime_error {
 public:
  explicit RecipeError(std::vector<std::string> problems)
      : std::runtime_error(join(problems)), problems_(std::move(problems)) {}
  explicit RecipeError(const std::string& problem) : RecipeError(std::vector<std::string>{problem}) {}
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  static std::string join(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& line : lines) out += (out.empty() ? "" : "\n") + line;
    return out;
  }
  std::vector<std::string> problems_;
};

/// Rethrows the exception being handled (call it inside a catch block) as the same kind of host
/// error — InputError, PluginError, else std::runtime_error — with `before` and `after` around
/// its message, so a caller can say where it happened without changing the exit code it maps to.
/// A RecipeError, RunDirectoryInUse or PluginLoadError passes unchanged; so does anything not
/// derived from std::exception.
[[noreturn]] inline void rethrow_with_context(const std::string& before, const std::string& after = "") {
  try {
    throw;
  } catch (const RecipeError&) {
    throw;
  } catch (const RunDirectoryInUse&) {
    throw;
  } catch (const PluginLoadError&) {
    throw;
  } catch (const InputError& e) {
    throw InputError(before + e.what() + after);
  } catch (const PluginError& e) {
    throw PluginError(before + e.what() + after);
  } catch (const std::exception& e) {
    throw std::runtime_error(before + e.what() + after);
  }
}

}  // namespace loom::host
