// `loom debug-step`: one forward + backward of a model's pre-training objective (BERT: its
// BertForPreTraining; another family: its `<model_type>.pretraining-heads`, model_family.hpp) with
// dropout off, for parity checks against PyTorch (tests/parity).
//
//   loom debug-step --model-config CONFIG.json --weights MODEL.safetensors --batch BATCH.json
//                   --out OUT.json [--grads GRADS.safetensors] [--precision fp32|bf16-mixed|fp16-mixed]
//
// OUT.json: {"loss", "mlm_loss", "nsp_loss", "seq_relationship_logits": [[a, b], ...] (the last two
// where the family has next-sentence prediction),
// "masked_prediction_logits": [[V floats] per labelled position, (batch, position) row-major]}.
// GRADS.safetensors: the F32 gradient of `loss` for every parameter under its Hugging Face name
// (a tied decoder's share is inside the word embeddings' gradient).
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/bert_checkpoint.hpp"
#include "checkpoint/safetensors.hpp"
#include "cli_context.hpp"
#include "files/atomic_file.hpp"
#include "loom/sdk/component_kind.hpp"
#include "model/batch_json.hpp"
#include "model/batch_staging.hpp"
#include "model/model.hpp"
#include "model/model_family.hpp"
#include "recipe/errors.hpp"
#include "train/run_checkpoint.hpp"

namespace loom::cli {
namespace {

struct DebugStepArguments {
  std::string model_config, weights, batch, out, grads, precision = "fp32", backend = "cpu";
  bool unpadded = false;
};

// A device tensor of rank ≤ 2 whose last dimension is dense, copied to the host row by row.
std::vector<float> read_rows(loom::Backend& backend, const loom::Tensor& t) {
  if (!t.defined()) return {};
  const int64_t rows = t.ndim == 2 ? t.shape[0] : 1;
  const int64_t columns = t.ndim == 0 ? 1 : t.shape[t.ndim - 1];
  const int64_t row_stride = t.ndim == 2 ? t.strides[0] : columns;
  std::vector<float> values(static_cast<size_t>(rows * columns));
  for (int64_t r = 0; r < rows; ++r)
    backend.copy_to_host(values.data() + r * columns, t.data_as<float>() + r * row_stride,
                         static_cast<size_t>(columns) * sizeof(float));
  return values;
}

nlohmann::json as_matrix(const std::vector<float>& values, int64_t columns) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t start = 0; start < values.size(); start += static_cast<size_t>(columns))
    rows.push_back(std::vector<float>(values.begin() + static_cast<std::ptrdiff_t>(start),
                                      values.begin() + static_cast<std::ptrdiff_t>(start + columns)));
  return rows;
}

float read_scalar(loom::Backend& backend, const loom::Tensor& t) {
  float value = 0.0f;
  if (t.defined()) backend.copy_to_host(&value, t.data, sizeof(float));
  return value;
}

void run_debug_step(const GlobalOptions& options, const DebugStepArguments& args) {
  const host::JsonBatch batch = host::read_batch_json(args.batch);

  auto registry = make_registry(options, nullptr);
  const host::ComponentEntry* backend_entry = registry->find(LOOM_KIND_BACKEND, args.backend);
  if (backend_entry == nullptr)
    throw host::PluginLoadError("backend/" + args.backend, "no such component; see `loom plugins`");
  host::ComponentConfig backend_options;
  backend_options.table_name = "backend";
  backend_options.table_origin = "--backend";
  auto backend_component = registry->create<loom::Backend>(*backend_entry, backend_options, false);
  loom::Backend& backend = *backend_component.get();

  const loom::DType dtype = args.precision == "bf16-mixed"   ? loom::DType::bf16
                            : args.precision == "fp16-mixed" ? loom::DType::f16
                                                             : loom::DType::f32;
  const std::unique_ptr<host::Model> family =
      host::family_model(*registry, args.model_config, host::kPretrainingHead, backend_component, dtype);
  host::Model& model = *family;
  const loom::ModelConfig& config = model.config();

  const host::CheckpointLoadReport report =
      host::load_model_weights(model, host::SafetensorsFile::open(args.weights), {});
  if (!report.ignored.empty() || !report.renamed.empty()) std::cerr << report.summary() << "\n";

  const loom::ActivationShape shape{batch.batch, batch.seq, batch.num_masked()};
  model.set_unpadded(args.unpadded);
  model.reserve(shape);
  // [PAD] rows get no word-embedding gradient: the config's padding id (not every family's is 0).
  host::BatchStaging staging(backend, shape, config.pad_token_id);
  const loom::BatchView& view = staging.upload(batch.view());
  if (args.unpadded) {
    const host::PackedBatch* packed = staging.packed();
    std::cerr << fmt::format("debug-step: unpadded: {}\n",
                             !model.runs_unpadded() ? "no layer accepts packed tokens, ran padded"
                             : packed == nullptr    ? "the batch has no padding to remove, ran padded"
                                                    : fmt::format("the layers ran on {} real tokens of {}",
                                                                  packed->view.seq, view.batch * view.seq));
  }
  model.zero_grads();
  model.forward(view, host::StepSettings{false, 0}, staging.packed());

  nlohmann::json out;
  out["loss"] = model.loss();
  out["mlm_loss"] = read_scalar(backend, model.output("mlm_loss"));
  // A family that pre-trains without next-sentence prediction has neither output.
  if (model.output("nsp_loss").defined()) out["nsp_loss"] = read_scalar(backend, model.output("nsp_loss"));
  if (model.output("seq_relationship_logits").defined())
    out["seq_relationship_logits"] = as_matrix(read_rows(backend, model.output("seq_relationship_logits")), 2);
  out["masked_prediction_logits"] =
      batch.num_masked() > 0
          ? as_matrix(read_rows(backend, model.output("masked_prediction_logits")), config.vocab_size)
          : nlohmann::json::array();
  // fp16: a fixed loss scale keeps small gradients representable in the f16 GEMM operands, as the
  // dynamic scaler would in training; the gradients are unscaled before they are written.
  const float loss_scale = dtype == loom::DType::f16 ? 1024.0f : 1.0f;
  model.backward(loss_scale);
  backend.synchronize();

  host::write_file_atomically(args.out, out.dump() + "\n");

  if (!args.grads.empty()) {
    const size_t total = model.parameters().total_elements();
    std::vector<float> unscaled(total);
    backend.copy_to_host(unscaled.data(), model.grads().data, total * sizeof(float));
    for (float& g : unscaled) g /= loss_scale;
    const auto grads = model.checkpoint_tensors(unscaled.data());
    host::save_bert_checkpoint(args.grads, grads, model.checkpoint_aliases(),
                               {{"content", "gradients of loss"}});
  }
}

void register_debug_step(CLI::App& app, GlobalOptions& options) {
  auto args = std::make_shared<DebugStepArguments>();
  auto* verb = app.add_subcommand("debug-step", "one forward+backward (dropout off) for parity checks");
  verb->add_option("--model-config", args->model_config, "Hugging Face config.json")->required();
  verb->add_option("--weights", args->weights, "model weights (safetensors, Hugging Face names)")->required();
  verb->add_option("--batch", args->batch,
                   "batch JSON (input_ids, token_type_ids, attention_mask, labels, "
                   "next_sentence_label)")
      ->required();
  verb->add_option("--out", args->out, "output JSON (losses and logits)")->required();
  verb->add_option("--grads", args->grads, "write every parameter's gradient here (safetensors)");
  verb->add_option("--precision", args->precision, "fp32, bf16-mixed or fp16-mixed")
      ->check(CLI::IsMember({"fp32", "bf16-mixed", "fp16-mixed"}));
  verb->add_option("--backend", args->backend, "backend component (default cpu)");
  verb->add_flag("--unpadded", args->unpadded,
                 "run the layers that accept packed tokens on the real tokens only (as [model] unpadded)");
  add_plugin_flags(*verb, options);
  verb->callback([&options, args] { run_debug_step(options, *args); });
}

const VerbRegistration registration(&register_debug_step);

}  // namespace
}  // namespace loom::cli
