// Reading state.json with every value type- and range-checked (run_checkpoint.hpp). A resume takes
// its step, schedule position, loss scale and data cursor from here, so a value that does not fit
// is refused rather than converted: nlohmann's get<uint64_t>() turns -5 into 18446744073709551611
// and 1e23 into 0, which resumed at the wrong step (at 0, dropping every metrics.jsonl record
// after it).
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "train/run_checkpoint.hpp"

namespace loom::host {
namespace {

// Counts above 2^53 are beyond any real run, and beyond what JSON readers keep exactly.
constexpr uint64_t kMaxCount = uint64_t{1} << 53;

// A value as the message shows it: floats in their shortest form (1e+23, not 9.999999999999999e+22).
std::string shown(const nlohmann::json& value) {
  return value.is_number_float() ? fmt::format("{}", value.get<double>()) : value.dump();
}

class StateFields {
 public:
  explicit StateFields(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::runtime_error(fmt::format(
        "{}: {}: {}; this checkpoint's state cannot be resumed (resume from another checkpoint, or start "
        "the run afresh with model.init_from)",
        source_, key, what));
  }
  const nlohmann::json& member(const nlohmann::json& object, const std::string& prefix,
                               const char* key) const {
    const std::string name = prefix + key;
    if (!object.is_object())
      fail(prefix.empty() ? "state" : prefix.substr(0, prefix.size() - 1), "not an object");
    const auto found = object.find(key);
    if (found == object.end()) fail(name, "missing");
    return *found;
  }
  uint64_t count(const nlohmann::json& object, const std::string& prefix, const char* key,
                 uint64_t max = kMaxCount) const {
    const nlohmann::json& value = member(object, prefix, key);
    const std::string name = prefix + key;
    if (value.is_number_integer() && !value.is_number_unsigned() && value.get<int64_t>() < 0)
      fail(name, fmt::format("{} is negative; expected a count from 0", value.dump()));
    if (!value.is_number_integer())
      fail(name, fmt::format("{} is not a whole number; expected a count from 0", shown(value)));
    const uint64_t count = value.get<uint64_t>();
    if (count > max) fail(name, fmt::format("{} is larger than {}, which no run reaches", count, max));
    return count;
  }
  std::string text(const nlohmann::json& object, const char* key) const {
    const auto found = object.find(key);
    if (found == object.end()) return "";
    if (!found->is_string()) fail(key, fmt::format("{} is not a string", found->dump()));
    return found->get<std::string>();
  }

 private:
  std::string source_;
};

}  // namespace

RunState run_state_from_json(const nlohmann::json& json, const std::string& source) {
  const StateFields f(source);
  RunState s;
  s.step = f.count(json, "", "step");
  s.successful_steps = f.count(json, "", "successful_steps");
  if (s.successful_steps > s.step)
    f.fail("successful_steps", fmt::format("{} is more than step = {} (steps taken, applied or skipped)",
                                           s.successful_steps, s.step));
  const nlohmann::json& scaler = f.member(json, "", "loss_scaler");
  const nlohmann::json& scale = f.member(scaler, "loss_scaler.", "loss_scale");
  if (!scale.is_number() || !std::isfinite(scale.get<double>()) || scale.get<double>() <= 0)
    f.fail("loss_scaler.loss_scale", fmt::format("{} is not a finite number above 0", shown(scale)));
  s.scaler.loss_scale = scale.get<double>();
  s.scaler.clean_steps = f.count(scaler, "loss_scaler.", "clean_steps", s.step);
  s.scaler.skipped_steps = f.count(scaler, "loss_scaler.", "skipped_steps", s.step);
  s.scaler.consecutive_skips = f.count(scaler, "loss_scaler.", "consecutive_skips", s.scaler.skipped_steps);
  const nlohmann::json& cursor = f.member(json, "", "data_cursor");
  s.cursor.epoch = f.count(cursor, "data_cursor.", "epoch");
  s.cursor.position = f.count(cursor, "data_cursor.", "position");
  s.seed = f.count(json, "", "seed", UINT64_MAX);
  s.recipe_sha256 = f.text(json, "recipe_sha256");
  s.sdk_version = f.text(json, "sdk_version");
  return s;
}

}  // namespace loom::host
