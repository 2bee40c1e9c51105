// libFuzzer target for the readers of a training checkpoint's small files: MANIFEST
// (CheckpointStore::verify and resolve), state.json (run_state_from_json, parsed as read_run_state
// does) and config.json (read_bert_config). The input holds up to four parts separated by lines
// "%%": MANIFEST, state.json, config.json and checkpoints/latest, written as
// checkpoints/step-000001/... in a scratch directory. Properties:
// - MANIFEST: verify returns "" or a problem and never throws; "" means every listed file exists
//   and hashes to its recorded sha256; resolve throws std::runtime_error or names a checkpoint that
//   verifies;
// - state.json: refused with std::runtime_error, or a state within the documented ranges;
// - config.json: refused with BertConfigError, or a config whose activation is supported, whose
//   heads divide the hidden size, and which survives a to_json/from_json round trip unchanged.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_store.hpp"
#include "files/sha256.hpp"
#include "fuzz_support.hpp"
#include "model/bert_config.hpp"
#include "train/run_checkpoint.hpp"

namespace fs = std::filesystem;
using loom_fuzz::require;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void check_manifest(const fs::path& store_directory, const fs::path& checkpoint) {
  const std::string problem = loom::host::CheckpointStore::verify(checkpoint);
  if (problem.empty()) {
    // Independently of read_manifest: every "<sha256>  <name>" line names a file with that hash.
    std::istringstream manifest(read_text(checkpoint / "MANIFEST"));
    std::string line;
    bool any = false;
    while (std::getline(manifest, line)) {
      if (line.empty()) continue;
      require(line.size() > 66 && line.compare(64, 2, "  ") == 0, "a verified MANIFEST line is well formed");
      const fs::path file = checkpoint / line.substr(66);
      require(fs::exists(file), "a verified MANIFEST names existing files");
      require(loom::host::sha256_file_hex(file) == line.substr(0, 64), "a verified file has its sha256");
      any = true;
    }
    require(any, "a verified MANIFEST lists a file");
  }
  const loom::host::CheckpointStore store(store_directory, 1);
  try {
    const auto chosen = store.resolve("auto");
    require(!chosen || loom::host::CheckpointStore::verify(*chosen).empty(), "resolve names an intact checkpoint");
  } catch (const std::runtime_error&) {
  }
}

void check_state(const fs::path& path) {
  std::ifstream in(path);
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return;  // read_run_state refuses it as "not valid JSON"
  loom::host::RunState state;
  try {
    state = loom::host::run_state_from_json(json, path.string());
  } catch (const std::runtime_error&) {
    return;
  }
  constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 53;
  require(state.step <= kMaxCount && state.successful_steps <= state.step, "steps in range");
  require(std::isfinite(state.scaler.loss_scale) && state.scaler.loss_scale > 0, "loss scale finite, above 0");
  require(state.scaler.clean_steps <= state.step && state.scaler.skipped_steps <= state.step &&
              state.scaler.consecutive_skips <= state.scaler.skipped_steps,
          "scaler counts in range");
  require(state.cursor.epoch <= kMaxCount && state.cursor.position <= kMaxCount, "cursor in range");
}

void check_config(const fs::path& path) {
  loom::host::BertConfig config;
  try {
    config = loom::host::read_bert_config(path);
  } catch (const loom::host::BertConfigError&) {
    return;
  }
  (void)config.gelu_variant();
  require(config.num_attention_heads > 0 && config.hidden_size % config.num_attention_heads == 0,
          "heads divide the hidden size");
  const nlohmann::json written = loom::host::bert_config_to_json(config);
  const loom::host::BertConfig again =
      loom::host::bert_config_from_json(nlohmann::json::parse(written.dump(2)), "round trip");
  require(loom::host::bert_config_to_json(again) == written, "config round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = loom_fuzz::split_parts(std::string_view(reinterpret_cast<const char*>(data), size), "%%");
  const fs::path store = loom_fuzz::scratch_directory() / "checkpoints";
  const fs::path checkpoint = store / "step-000001";
  fs::remove_all(store);
  fs::create_directories(checkpoint);
  const char* names[] = {"step-000001/MANIFEST", "step-000001/state.json", "step-000001/config.json", "latest"};
  for (std::size_t i = 0; i < parts.size() && i < std::size(names); ++i) {
    std::ofstream out(store / names[i], std::ios::binary);
    out.write(parts[i].data(), static_cast<std::streamsize>(parts[i].size()));
  }
  check_manifest(store, checkpoint);
  check_state(checkpoint / "state.json");
  check_config(checkpoint / "config.json");
  return 0;
}
