// The files of one training checkpoint (docs/design.md §6). The directory is also a Hugging Face
// model directory: config.json (BertConfig), model.safetensors (fp32, Hugging Face names) and
// vocab.txt load with `BertForPreTraining.from_pretrained(dir)`. Beside them:
// optimizer.safetensors (the optimizer's flat state tensors, by name), and state.json (step,
// successful steps, loss-scaler state, data cursor, seed, recipe hash, SDK version) — everything
// an exact resume needs. CheckpointStore adds the MANIFEST and makes the directory appear
// atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint/bert_checkpoint.hpp"
#include "model/bert_config.hpp"
#include "model/model.hpp"
#include "loom/sdk/backend_optimizer.hpp"
#include "loom/sdk/dataset.hpp"
#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/precision.hpp"
#include "loom/sdk/tokenizer.hpp"

namespace loom::host {

/// What state.json holds.
struct RunState {
  uint64_t step = 0;              ///< optimizer steps taken (applied + skipped)
  uint64_t successful_steps = 0;  ///< applied steps (the schedule's input)
  loom::LossScalerState scaler{1.0, 0, 0, 0};
  loom::DatasetCursor cursor{0, 0};
  uint64_t seed = 0;
  std::string recipe_sha256;  ///< of the resolved recipe, to warn when a resume changes it
  std::string sdk_version;
};

nlohmann::json run_state_to_json(const RunState& state);
/// Throws std::runtime_error naming `source` and the key on a missing or malformed field, or a
/// value out of its range (run_state_reader.cpp; docs/checkpoints.md "state.json").
RunState run_state_from_json(const nlohmann::json& json, const std::string& source);

/// An optimizer whose state tensors live in backend memory (after BackendOptimizer::attach, the
/// backend path of backend_update.hpp): checkpoints read and write them through host copies, in the
/// same files and bytes as an optimizer on the host, so either path resumes the other's checkpoints.
struct BackendOptimizerState {
  loom::BackendOptimizer& optimizer;
  loom::Backend& backend;
};

/// Writes config.json, model.safetensors, vocab.txt (when `tokenizer`), optimizer.safetensors
/// (when `optimizer`; its state read from the backend when `on_backend`) and state.json into
/// `directory`. Throws NonFiniteState (finite_state.hpp), having written nothing, when a weight
/// or an optimizer state value is NaN or infinite: a checkpoint is always a finite state.
void write_run_checkpoint(const std::filesystem::path& directory, const Model& model,
                          const BertConfig& config, const loom::Tokenizer* tokenizer,
                          loom::Optimizer* optimizer, const RunState& state,
                          const BackendOptimizerState* on_backend = nullptr);

/// Loads model.safetensors of `directory` into the model's master weights (see bert_checkpoint.hpp
/// for `options`) and refreshes its working weights. When the directory has a config.json, it must
/// describe the weights (model/config_weights_check.hpp) before any is loaded.
CheckpointLoadReport load_model_weights(Model& model, const std::filesystem::path& directory,
                                        const CheckpointLoadOptions& options);
/// The same from an open safetensors file of BERT weights (`loom debug-step --weights`): on any
/// backend, parameters the file lacks keep their current values.
CheckpointLoadReport load_model_weights(Model& model, const SafetensorsFile& file,
                                        const CheckpointLoadOptions& options);

/// Restores the optimizer's state tensors from optimizer.safetensors (into backend memory when
/// `on_backend`), each parameter's elements by name into `parameters`' layout
/// (optimizer_state_layout.hpp); throws naming the file when a tensor or a parameter is missing or
/// has another size.
void load_optimizer_state(loom::Optimizer& optimizer, const ParameterTable& parameters,
                          const std::filesystem::path& directory,
                          const BackendOptimizerState* on_backend = nullptr);

/// Reads state.json of `directory`.
RunState read_run_state(const std::filesystem::path& directory);

}  // namespace loom::host
