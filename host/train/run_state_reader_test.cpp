// state.json values out of range or of the wrong type are refused naming the key, never
// converted (a step of -5 used to resume at 18446744073709551611, 1e23 at 0).
#include <gtest/gtest.h>

#include "train/run_checkpoint.hpp"

namespace loom::host {
namespace {

nlohmann::json valid() {
  RunState s;
  s.step = 40;
  s.successful_steps = 38;
  s.scaler = {32768.0, 5, 2, 0};
  s.cursor = {1, 96};
  s.seed = 7;
  s.recipe_sha256 = "ab";
  s.sdk_version = "0.3.0";
  return run_state_to_json(s);
}

std::string error_of(const nlohmann::json& json) {
  try {
    run_state_from_json(json, "ckpt/state.json");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(RunStateReader, AWrittenStateReadsBack) {
  const RunState s = run_state_from_json(valid(), "ckpt/state.json");
  EXPECT_EQ(s.step, 40u);
  EXPECT_EQ(s.successful_steps, 38u);
  EXPECT_EQ(s.scaler.loss_scale, 32768.0);
  EXPECT_EQ(s.scaler.skipped_steps, 2u);
  EXPECT_EQ(s.cursor.position, 96u);
  EXPECT_EQ(s.seed, 7u);
}

TEST(RunStateReader, ValuesThatDoNotFitAreRefusedNamingTheKey) {
  const std::vector<std::tuple<std::string, nlohmann::json, std::string>> cases = {
      {"/step", -5, "ckpt/state.json: step: -5 is negative"},
      {"/step", nlohmann::json::parse("1e23"), "ckpt/state.json: step: 1e+23 is not a whole number"},
      {"/step", 40.5, "step: 40.5 is not a whole number"},
      {"/step", "40", "step: \"40\" is not a whole number"},
      {"/step", uint64_t{1} << 60, "step: 1152921504606846976 is larger than 9007199254740992"},
      {"/successful_steps", 41, "successful_steps: 41 is more than step = 40"},
      {"/loss_scaler/loss_scale", 0, "loss_scaler.loss_scale: 0 is not a finite number above 0"},
      {"/loss_scaler/loss_scale", -1.5, "loss_scaler.loss_scale: -1.5 is not a finite number above 0"},
      {"/loss_scaler/loss_scale", nullptr, "loss_scaler.loss_scale: null is not a finite number"},
      {"/loss_scaler/skipped_steps", 41, "loss_scaler.skipped_steps: 41 is larger than 40"},
      {"/loss_scaler/consecutive_skips", 3, "loss_scaler.consecutive_skips: 3 is larger than 2"},
      {"/data_cursor/position", -1, "data_cursor.position: -1 is negative"},
      {"/data_cursor", 3, "data_cursor: not an object"},
      {"/seed", -7, "seed: -7 is negative"},
      {"/sdk_version", 3, "sdk_version: 3 is not a string"},
  };
  for (const auto& [pointer, value, expected] : cases) {
    nlohmann::json json = valid();
    json[nlohmann::json::json_pointer(pointer)] = value;
    const std::string message = error_of(json);
    EXPECT_NE(message.find(expected), std::string::npos) << pointer << ": " << message;
    EXPECT_NE(message.find("cannot be resumed"), std::string::npos) << message;
  }
  nlohmann::json missing = valid();
  missing.erase("step");
  EXPECT_NE(error_of(missing).find("ckpt/state.json: step: missing"), std::string::npos) << error_of(missing);
}

}  // namespace
}  // namespace loom::host
