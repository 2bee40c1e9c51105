// Writing and reading the files of a training checkpoint; see run_checkpoint.hpp.
#include "train/run_checkpoint.hpp"

#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "checkpoint/checkpoint_store.hpp"
#include "checkpoint/safetensors.hpp"
#include "files/atomic_file.hpp"
#include "loom_json/json_problem.hpp"
#include "loom/sdk/version.hpp"
#include "model/config_weights_check.hpp"
#include "model/host_mirror.hpp"
#include "train/finite_state.hpp"
#include "train/optimizer_state_layout.hpp"

namespace fs = std::filesystem;

namespace loom::host {

nlohmann::json run_state_to_json(const RunState& s) {
  return {{"step", s.step},
          {"successful_steps", s.successful_steps},
          {"loss_scaler",
           {{"loss_scale", s.scaler.loss_scale},
            {"clean_steps", s.scaler.clean_steps},
            {"skipped_steps", s.scaler.skipped_steps},
            {"consecutive_skips", s.scaler.consecutive_skips}}},
          {"data_cursor", {{"epoch", s.cursor.epoch}, {"position", s.cursor.position}}},
          {"seed", s.seed},
          {"recipe_sha256", s.recipe_sha256},
          {"sdk_version", s.sdk_version}};
}

void write_run_checkpoint(const fs::path& directory, const Model& model, const BertConfig& config,
                          const loom::Tokenizer* tokenizer, loom::Optimizer* optimizer, const RunState& state,
                          const BackendOptimizerState* on_backend) {
  // Host copies of what the checkpoint saves (on a device backend: fresh copies; checkpoints are
  // rare), checked before a byte is written: a non-finite state is never saved (finite_state.hpp).
  HostMirror master(model.backend(), model.master());
  master.pull();
  std::vector<std::string> problems;
  if (auto bad = find_nonfinite(master.data(), master.size(), model.parameters()))
    problems.push_back(describe_nonfinite("weights", *bad));
  // The optimizer's state goes into its writer (which keeps a copy) one tensor at a time, each
  // scanned on the way, so a device backend's tensors are never all on the host twice.
  SafetensorsWriter optimizer_file;
  const size_t state_tensors = optimizer != nullptr ? optimizer->num_state_tensors() : 0;
  for (size_t i = 0; i < state_tensors; ++i) {
    std::unique_ptr<HostMirror> copy;
    std::string name;
    const float* data = nullptr;
    size_t count = 0;
    if (on_backend != nullptr) {
      const loom::BackendStateTensor t = on_backend->optimizer.backend_state(i);
      copy = std::make_unique<HostMirror>(on_backend->backend, t.tensor);
      copy->pull();
      name = t.name, data = copy->data(), count = copy->size();
    } else {
      const loom::OptimizerStateTensor t = optimizer->state_tensor(i);
      name = t.name, data = t.data, count = t.count;
    }
    if (auto bad = find_nonfinite(data, count, model.parameters()))
      problems.push_back(describe_nonfinite("optimizer state '" + name + "'", *bad));
    optimizer_file.add_f32(name, {static_cast<int64_t>(count)}, {data, count});
  }
  if (!problems.empty()) {
    std::string text;
    for (const std::string& problem : problems) text += (text.empty() ? "" : "; ") + problem;
    throw NonFiniteState(text);
  }

  write_bert_config(config, directory / "config.json");
  const auto tensors = model.checkpoint_tensors(master.data());
  const auto aliases = model.checkpoint_aliases();
  save_bert_checkpoint(directory / "model.safetensors", tensors, aliases,
                       {{"step", std::to_string(state.step)}});
  if (tokenizer != nullptr) {
    std::string vocab;
    for (int32_t id = 0; id < tokenizer->vocab_size(); ++id)
      vocab.append(tokenizer->id_to_token(id)).append("\n");
    write_file_atomically(directory / "vocab.txt", vocab);
  }
  if (state_tensors > 0) {
    optimizer_file.set_metadata("successful_steps", std::to_string(optimizer->successful_steps()));
    optimizer_file.set_metadata(kParameterLayoutKey, parameter_layout_record(model.parameters()));
    optimizer_file.write(directory / "optimizer.safetensors");
  }
  write_file_atomically(directory / "state.json", run_state_to_json(state).dump(2) + "\n");
}

CheckpointLoadReport load_model_weights(Model& model, const fs::path& directory,
                                        const CheckpointLoadOptions& options) {
  const fs::path path = directory / "model.safetensors";
  if (!fs::exists(path))
    throw std::runtime_error(path.string() + ": no such file (is " + directory.string() +
                             " a checkpoint directory?)");
  // A Loom checkpoint lists its files' sums: weights changed since (a flipped byte, a hand edit)
  // would answer or train silently wrong. A Hugging Face directory has no MANIFEST and no check.
  if (fs::exists(directory / "MANIFEST")) {
    const std::string problem = CheckpointStore::verify(directory, {"config.json", "model.safetensors"});
    if (!problem.empty())
      throw std::runtime_error(fmt::format(
          "checkpoint {} is damaged: {}; a file changed on purpose needs its new sha256 in MANIFEST",
          directory.string(), problem));
  }
  const SafetensorsFile weights = SafetensorsFile::open(path);
  // The config saved beside the weights must describe them, whatever model they are loaded into.
  const fs::path config = directory / "config.json";
  if (fs::exists(config)) check_config_matches_weights(read_bert_config(config), config.string(), weights);
  return load_model_weights(model, weights, options);
}

CheckpointLoadReport load_model_weights(Model& model, const SafetensorsFile& file,
                                        const CheckpointLoadOptions& options) {
  // Pulled first: parameters the file lacks keep their current values.
  HostMirror master(model.backend(), model.master());
  master.pull();
  const auto tensors = model.checkpoint_tensors(master.data());
  const auto aliases = model.checkpoint_aliases();
  CheckpointLoadReport report = load_bert_checkpoint(file, tensors, aliases, options);
  master.push();
  model.refresh_compute_weights();
  return report;
}

void load_optimizer_state(loom::Optimizer& optimizer, const ParameterTable& parameters,
                          const fs::path& directory, const BackendOptimizerState* on_backend) {
  const fs::path path = directory / "optimizer.safetensors";
  if (optimizer.num_state_tensors() == 0) return;
  const SafetensorsFile file = SafetensorsFile::open(path);
  // Where each parameter's elements are in the file (optimizer_state_layout.hpp).
  const auto record = file.metadata().find(kParameterLayoutKey);
  const std::vector<StoredParameter> layout = record != file.metadata().end()
                                                  ? parse_parameter_layout(record->second, path.string())
                                                  : unrecorded_parameter_layout(parameters);
  for (size_t i = 0; i < optimizer.num_state_tensors(); ++i) {
    // The destination: the host tensor itself, or a host copy of the backend's that is pushed back.
    std::unique_ptr<HostMirror> copy;
    const char* name = nullptr;
    float* data = nullptr;
    size_t count = 0;
    if (on_backend != nullptr) {
      const loom::BackendStateTensor t = on_backend->optimizer.backend_state(i);
      copy = std::make_unique<HostMirror>(on_backend->backend, t.tensor);
      name = t.name, data = copy->data(), count = copy->size();
    } else {
      const loom::OptimizerStateTensor t = optimizer.state_tensor(i);
      name = t.name, data = t.data, count = t.count;
    }
    const SafetensorsTensor* stored = file.find(name);
    if (stored == nullptr)
      throw std::runtime_error(fmt::format("{}: no optimizer state '{}'", path.string(), name));
    if (stored->dtype != SafetensorsDtype::kF32)
      throw std::runtime_error(fmt::format("{}: optimizer state '{}' is not F32", path.string(), name));
    remap_state(stored->data, static_cast<size_t>(stored->element_count()), layout,
                parameters, data, count, path.string() + " ('" + name + "')");
    if (copy) copy->push();
  }
}

RunState read_run_state(const fs::path& directory) {
  const fs::path path = directory / "state.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot be read");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": not valid JSON" + loom_json::json_parse_problem(e));
  }
  return run_state_from_json(json, path.string());
}

}  // namespace loom::host
