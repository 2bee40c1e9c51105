// Blocks, flat parameters and the activation arena; see model.hpp.
#include "model/model.hpp"

#include <algorithm>
#include <utility>
#include <stdexcept>

#include <fmt/format.h>

#include "loom/sdk/backward_input.hpp"
#include "loom/sdk/model_architecture.hpp"
#include "loom/sdk/packed_tokens.hpp"
#include "loom/sdk/saved_attention_bytes.hpp"
#include "model/parameter_init.hpp"
#include "recipe/errors.hpp"

namespace loom::host {
namespace {

size_t aligned(size_t bytes) {
  return (bytes + loom::Backend::kAlignment - 1) / loom::Backend::kAlignment * loom::Backend::kAlignment;
}

const char* role_name(loom::BlockRole role) {
  switch (role) {
    case loom::BlockRole::embeddings:
      return "an embeddings block";
    case loom::BlockRole::layer:
      return "a layer";
    case loom::BlockRole::head:
      return "a head";
  }
  return "?";
}

// "bert.encoder.layer.#" with occurrence 3 → "bert.encoder.layer.3."; "" → "".
std::string parameter_prefix(const char* scope, size_t occurrence) {
  std::string prefix = scope != nullptr ? scope : "";
  if (prefix.empty()) return prefix;
  const size_t hash = prefix.find('#');
  if (hash != std::string::npos) prefix.replace(hash, 1, std::to_string(occurrence));
  return prefix + ".";
}

}  // namespace

Model::Model(const PluginRegistry& registry, const std::vector<std::string>& block_names,
             const loom::ModelConfig& config, const Component<loom::Backend>& backend,
             loom::DType compute_dtype, std::string config_json, std::string config_source)
    : config_(config),
      config_json_(std::move(config_json)),
      config_source_(std::move(config_source)),
      backend_(*backend.get()),
      backend_interfaces_(backend.interfaces()),
      compute_dtype_(compute_dtype) {
  if (block_names.size() < 2)
    throw std::invalid_argument("a model needs at least an embeddings block and a head ([model] blocks)");
  if (compute_dtype != loom::DType::f32 && compute_dtype != loom::DType::bf16 &&
      compute_dtype != loom::DType::f16)
    throw std::invalid_argument(
        fmt::format("compute dtype {} is not supported (f32, bf16 or f16)", loom::dtype_name(compute_dtype)));
  std::vector<std::string> seen;
  for (const auto& name : block_names) add_block(registry, name, seen);

  for (size_t i = 0; i < blocks_.size(); ++i) {
    const loom::BlockRole expected = i == 0                    ? loom::BlockRole::embeddings
                                     : i + 1 == blocks_.size() ? loom::BlockRole::head
                                                               : loom::BlockRole::layer;
    if (blocks_[i].role != expected)
      throw std::invalid_argument(fmt::format("[model] blocks: block {} ({}) is {}, but position {} needs {}",
                                              i, blocks_[i].block.name(), role_name(blocks_[i].role), i,
                                              role_name(expected)));
  }

  pair_hidden_copies();

  const size_t total = table_.total_elements();
  master_ = loom::Buffer(backend_, total * sizeof(float));
  grads_ = loom::Buffer(backend_, total * sizeof(float));
  if (compute_dtype_ != loom::DType::f32) compute_ = loom::Buffer(backend_, total * 2);
  backend_.zero(master());
  backend_.zero(grads());
  bind_blocks();
  // After block i's backward, every element from the first parameter of blocks i.. is final.
  std::vector<size_t> first_of_block(blocks_.size() + 1, total);
  for (const auto& entry : table_.entries())
    first_of_block[entry.block] = std::min(first_of_block[entry.block], entry.offset);
  for (size_t i = blocks_.size(); i-- > 0;)
    first_of_block[i] = std::min(first_of_block[i], first_of_block[i + 1]);
  for (size_t k = 0; k < blocks_.size(); ++k)
    grads_final_offsets_.push_back(first_of_block[blocks_.size() - 1 - k]);
  grads_final_offsets_.back() = 0;  // after the first block everything is final, gaps included
}

void Model::add_block(const PluginRegistry& registry, const std::string& name,
                      std::vector<std::string>& seen) {
  const ComponentEntry* entry = registry.find(LOOM_KIND_BLOCK, name);
  if (entry == nullptr) {
    const auto available = registry.names_of_kind(LOOM_KIND_BLOCK);
    throw PluginLoadError(
        "block/" + name,
        fmt::format("no such component (available: {})",
                    available.empty() ? "none" : fmt::format("{}", fmt::join(available, ", "))));
  }
  ComponentConfig options;
  options.table_name = "model";
  options.table_origin = "[model] blocks";
  ModelBlock block;
  block.block = registry.create<loom::Block>(*entry, options, /*dry_run=*/false);
  const size_t occurrence = static_cast<size_t>(std::count(seen.begin(), seen.end(), name));
  seen.push_back(name);

  const loom::BlockSetup setup{&config_,
                               &backend_,
                               compute_dtype_,
                               static_cast<int32_t>(blocks_.size()),
                               nullptr,
                               backend_interfaces_,
                               config_json_.c_str(),
                               config_source_.c_str()};
  const size_t index = blocks_.size();
  std::vector<const ParameterEntry*> parameters;
  block.block.call([&](loom::Block& b) {
    b.setup(setup);
    block.role = b.role();
    const std::string prefix = parameter_prefix(b.scope(), occurrence);
    for (size_t i = 0; i < b.parameter_count(); ++i) {
      const loom::ParameterSpec spec = b.parameter(i);
      if (spec.ndim < 1 || spec.ndim > loom::kMaxParameterDims)
        throw loom::Error(fmt::format("parameter '{}' has {} dimensions", spec.name, spec.ndim));
      std::vector<int64_t> shape(spec.shape, spec.shape + spec.ndim);
      const std::string full = prefix + spec.name;
      if (spec.tied_to != nullptr)
        table_.add_alias(full, spec.tied_to, shape);
      else
        table_.add(full, shape, spec.init, spec.weight_decay != 0, index);
    }
  });
  blocks_.push_back(std::move(block));
  block_names_.push_back(name);
}

void Model::bind_blocks() {
  // Re-walk the declarations in order: the table resolves each name (ties to their target).
  std::vector<std::string> seen;
  for (size_t index = 0; index < blocks_.size(); ++index) {
    const std::string& name = block_names_[index];
    const size_t occurrence = static_cast<size_t>(std::count(seen.begin(), seen.end(), name));
    seen.push_back(name);
    blocks_[index].block.call([&](loom::Block& b) {
      const std::string prefix = parameter_prefix(b.scope(), occurrence);
      std::vector<loom::ParameterView> views;
      for (size_t i = 0; i < b.parameter_count(); ++i) {
        const ParameterEntry* entry = table_.find(prefix + b.parameter(i).name);
        loom::ParameterView view;
        view.master = master(*entry);
        view.grad = grad(*entry);
        if (compute_dtype_ != loom::DType::f32) {
          view.compute = view.master;
          view.compute.dtype = compute_dtype_;
          view.compute.data = static_cast<char*>(compute_.data()) + entry->offset * 2;
        } else {
          view.compute = view.master;
        }
        views.push_back(view);
      }
      b.bind_parameters(views.data(), views.size());
    });
  }
}

loom::Tensor Model::master() const {
  return loom::Tensor::contiguous(master_.data(), loom::DType::f32,
                                  {static_cast<int64_t>(table_.total_elements())}, backend_.device());
}

loom::Tensor Model::grads() const {
  return loom::Tensor::contiguous(grads_.data(), loom::DType::f32,
                                  {static_cast<int64_t>(table_.total_elements())}, backend_.device());
}

loom::Tensor Model::master(const ParameterEntry& entry) const {
  return loom::Tensor::contiguous(static_cast<float*>(master_.data()) + entry.offset, loom::DType::f32,
                                  entry.shape.data(), static_cast<int>(entry.shape.size()),
                                  backend_.device());
}

loom::Tensor Model::grad(const ParameterEntry& entry) const {
  return loom::Tensor::contiguous(static_cast<float*>(grads_.data()) + entry.offset, loom::DType::f32,
                                  entry.shape.data(), static_cast<int>(entry.shape.size()),
                                  backend_.device());
}

void Model::initialize(uint64_t seed) {
  backend_.zero(master());
  std::vector<float> values;
  for (const auto& entry : table_.entries()) {
    values.resize(entry.count);
    initial_values(entry, config_.initializer_range, seed, values);
    backend_.copy_from_host(master(entry).data, values.data(), entry.count * sizeof(float));
  }
  refresh_compute_weights();
}

void Model::refresh_compute_weights() {
  if (compute_dtype_ == loom::DType::f32) return;
  backend_.cast(master(), working_weights());
}

loom::Tensor Model::working_weights() const {
  if (compute_dtype_ == loom::DType::f32) return {};
  return loom::Tensor::contiguous(compute_.data(), compute_dtype_, {static_cast<int64_t>(table_.total_elements())},
                                  backend_.device());
}

void Model::zero_grads() {
  backend_.zero(grads());
}

Model::ArenaLayout Model::arena_layout(const loom::ActivationShape& shape) const {
  if (shape.batch <= 0 || shape.seq <= 0 || shape.max_masked < 0 ||
      shape.max_masked > shape.batch * shape.seq)
    throw std::invalid_argument(fmt::format("activation shape batch {} seq {} max_masked {} is invalid",
                                            shape.batch, shape.seq, shape.max_masked));
  const size_t hidden_bytes = aligned(static_cast<size_t>(shape.batch * shape.seq * config_.hidden_size) * 4);
  ArenaLayout layout;
  size_t offset = 0;
  // Block i's output is block i + 1's input: its own buffer when that block's backward reads it,
  // else one of two buffers used in turn (consecutive boundaries never share one, so no block
  // reads its input from the buffer it writes its output to).
  layout.boundary_offsets.assign(blocks_.size() - 1, 0);
  std::vector<bool> kept(layout.boundary_offsets.size(), true);
  size_t passing = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    kept[i] = backward_reads_input(blocks_[i + 1]);
    passing += kept[i] ? 0 : 1;
  }
  const size_t ring = offset;
  if (passing > 0) offset += (passing > 1 ? 2 : 1) * hidden_bytes;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (kept[i]) {
      layout.boundary_offsets[i] = offset;
      offset += hidden_bytes;
    } else {
      layout.boundary_offsets[i] = ring + (i % 2) * (passing > 1 ? hidden_bytes : 0);
    }
  }
  // Each handed-over copy lives from one block's forward to the next one's backward: its own buffer.
  const size_t copy_bytes =
      aligned(static_cast<size_t>(shape.batch * shape.seq * config_.hidden_size) * loom::dtype_size(compute_dtype_));
  layout.copy_offsets.assign(layout.boundary_offsets.size(), 0);
  for (size_t i = 0; i + 1 < blocks_.size(); ++i)
    if (blocks_[i].output_copy) {
      layout.copy_offsets[i] = offset;
      offset += copy_bytes;
    }
  // Where the two blocks of a boundary run different layouts, the next block's view of it.
  layout.converted_offsets.assign(layout.boundary_offsets.size(), 0);
  for (size_t i = 0; i + 1 < blocks_.size(); ++i)
    if (blocks_[i].packs != blocks_[i + 1].packs) {
      layout.converted_offsets[i] = offset;
      offset += hidden_bytes;
    }
  layout.loss_offset = offset;
  offset += aligned(sizeof(float));
  for (auto& d : layout.d_hidden_offset) {
    d = offset;
    offset += hidden_bytes;
  }
  for (const auto& block : blocks_) {
    const loom::ActivationBytes needs =
        block.block.call([&](loom::Block& b) { return b.activation_bytes(shape); });
    layout.saved_offsets.push_back(offset);
    layout.saved_bytes.push_back(needs.saved);
    offset += aligned(needs.saved);
    layout.scratch_bytes = std::max(layout.scratch_bytes, needs.scratch);
  }
  layout.scratch_offset = offset;
  offset += aligned(layout.scratch_bytes);
  layout.total = offset;
  return layout;
}

void Model::reserve(const loom::ActivationShape& shape) {
  const ArenaLayout layout = arena_layout(shape);
  boundary_offsets_ = layout.boundary_offsets;
  copy_offsets_ = layout.copy_offsets;
  converted_offsets_ = layout.converted_offsets;
  loss_offset_ = layout.loss_offset;
  d_hidden_offset_[0] = layout.d_hidden_offset[0];
  d_hidden_offset_[1] = layout.d_hidden_offset[1];
  for (size_t i = 0; i < blocks_.size(); ++i) {
    blocks_[i].saved_offset = layout.saved_offsets[i];
    blocks_[i].saved_bytes = layout.saved_bytes[i];
  }
  scratch_offset_ = layout.scratch_offset;
  scratch_bytes_ = layout.scratch_bytes;
  if (layout.total > arena_.bytes()) arena_ = loom::Buffer(backend_, layout.total);
  reserved_ = shape;
}

ArenaBytes Model::arena_bytes_for(const loom::ActivationShape& shape) const {
  const ArenaLayout layout = arena_layout(shape);
  ArenaBytes bytes;
  bytes.block_outputs = layout.loss_offset;  // the boundaries come first
  bytes.loss = layout.d_hidden_offset[0] - layout.loss_offset;
  bytes.activation_gradients = layout.saved_offsets.front() - layout.d_hidden_offset[0];
  bytes.saved = layout.scratch_offset - layout.saved_offsets.front();
  bytes.scratch = layout.total - layout.scratch_offset;
  for (const auto& block : blocks_)
    if (auto* attention = block.block.find<loom::SavedAttentionBytes>())
      bytes.saved_attention +=
          block.block.call([&](loom::Block&) { return attention->saved_attention_bytes(shape); });
  return bytes;
}

void Model::pair_hidden_copies() {
  if (compute_dtype_ == loom::DType::f32) return;
  for (auto& block : blocks_) block.hidden_copy = block.block.find<loom::HiddenCopy>();
  const auto offers = [&](const ModelBlock& block, bool output) {
    return block.hidden_copy != nullptr && block.block.call([&](loom::Block&) {
      return output ? block.hidden_copy->writes_output_copy() : block.hidden_copy->reads_input_copy();
    });
  };
  for (size_t i = 0; i + 1 < blocks_.size(); ++i)
    blocks_[i].output_copy = blocks_[i + 1].input_copy =
        blocks_[i].packs == blocks_[i + 1].packs && offers(blocks_[i], true) && offers(blocks_[i + 1], false);
  for (auto& block : blocks_)
    if (block.hidden_copy != nullptr)
      block.block.call(
          [&](loom::Block&) { block.hidden_copy->use_hidden_copies(block.input_copy, block.output_copy); });
}

void Model::set_hidden_copies(size_t i, const loom::BatchView& batch) const {
  const ModelBlock& block = blocks_[i];
  if (!block.input_copy && !block.output_copy) return;
  const auto view = [&](size_t boundary) {
    return loom::Tensor::contiguous(static_cast<char*>(arena_.data()) + copy_offsets_[boundary], compute_dtype_,
                                    {batch.batch, batch.seq, config_.hidden_size}, backend_.device());
  };
  block.block.call([&](loom::Block&) {
    block.hidden_copy->set_hidden_copies(block.input_copy ? view(i - 1) : loom::Tensor{},
                                         block.output_copy ? view(i) : loom::Tensor{});
  });
}

bool Model::backward_reads_input(const ModelBlock& block) const {
  const auto* input = block.block.find<loom::BackwardInput>();
  return input == nullptr || block.block.call([&](loom::Block&) { return input->backward_reads_input(); });
}

loom::Tensor Model::hidden(size_t offset, const loom::BatchView& batch) const {
  return loom::Tensor::contiguous(static_cast<char*>(arena_.data()) + offset, loom::DType::f32,
                                  {batch.batch, batch.seq, config_.hidden_size}, backend_.device());
}

loom::StepArgs Model::step_args(size_t i, float loss_scale) const {
  const ModelBlock& block = blocks_[i];
  loom::StepArgs args{};
  args.batch = &view_of(i);
  args.saved = static_cast<char*>(arena_.data()) + block.saved_offset;
  args.saved_bytes = block.saved_bytes;
  args.scratch = static_cast<char*>(arena_.data()) + scratch_offset_;
  args.scratch_bytes = scratch_bytes_;
  args.training = settings_.training ? 1 : 0;
  args.dropout_seed = settings_.dropout_seed;
  args.loss_scale = loss_scale;
  return args;
}

void Model::set_unpadded(bool unpadded) {
  for (auto& block : blocks_) {
    const auto* packed = block.block.find<loom::PackedTokens>();
    block.packs = unpadded && block.role == loom::BlockRole::layer && packed != nullptr &&
                  block.block.call([&](loom::Block&) { return packed->accepts_packed_tokens(); });
  }
  pair_hidden_copies();
  if (reserved_.batch > 0) reserve(reserved_);
}

bool Model::runs_unpadded() const {
  return std::any_of(blocks_.begin(), blocks_.end(), [](const ModelBlock& block) { return block.packs; });
}

const loom::BatchView& Model::view_of(size_t i) const {
  return packed_ != nullptr && blocks_[i].packs ? packed_->view : *batch_;
}

bool Model::converts_after(size_t i) const {
  return packed_ != nullptr && blocks_[i].packs != blocks_[i + 1].packs;
}

void Model::convert(const loom::Tensor& from, size_t from_block, const loom::Tensor& to) const {
  const int64_t H = config_.hidden_size, rows = batch_->batch * batch_->seq, tokens = packed_->view.seq;
  if (blocks_[from_block].packs) {  // packed → padded: real rows back in place, zeros at padding
    const loom::Tensor padded = to.reshape({rows, H});
    backend_.zero(padded);
    backend_.embedding_scatter_add(from.reshape({tokens, H}), packed_->token_rows, padded);
  } else {  // padded → packed: the real rows
    backend_.embedding_gather(from.reshape({rows, H}), packed_->token_rows, to.reshape({tokens, H}), false);
  }
}

void Model::forward(const loom::BatchView& batch, const StepSettings& settings, const PackedBatch* packed) {
  if (batch.batch > reserved_.batch || batch.seq > reserved_.seq || batch.num_masked > reserved_.max_masked)
    throw std::invalid_argument(fmt::format(
        "batch {}×{} with {} labelled positions does not fit the arena reserved for {}×{} with {}",
        batch.batch, batch.seq, batch.num_masked, reserved_.batch, reserved_.seq, reserved_.max_masked));
  batch_ = &batch;
  packed_ = packed != nullptr && runs_unpadded() ? packed : nullptr;
  settings_ = settings;
  const loom::Tensor loss_out = loss_tensor();
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const loom::BatchView& view = view_of(i);
    const loom::StepArgs args = step_args(i, 1.0f);
    loom::Tensor input;
    if (i > 0 && converts_after(i - 1)) {
      input = hidden(converted_offsets_[i - 1], view);
      convert(hidden(boundary_offsets_[i - 1], view_of(i - 1)), i - 1, input);
    } else if (i > 0) {
      input = hidden(boundary_offsets_[i - 1], view);
    }
    const loom::Tensor output = i + 1 == blocks_.size() ? loss_out : hidden(boundary_offsets_[i], view);
    set_hidden_copies(i, view);
    blocks_[i].block.call([&](loom::Block& b) { b.forward(args, input, output); });
  }
}

loom::Tensor Model::loss_tensor() const {
  return loom::Tensor::contiguous(static_cast<char*>(arena_.data()) + loss_offset_, loom::DType::f32, {1},
                                  backend_.device());
}

float Model::loss() const {
  float value = 0.0f;
  backend_.copy_to_host(&value, static_cast<char*>(arena_.data()) + loss_offset_, sizeof(float));
  return value;
}

void Model::backward(float loss_scale, const std::function<void(size_t)>& grads_final_from) {
  if (batch_ == nullptr) throw std::logic_error("Model::backward called before forward");
  loom::Tensor d_output;
  for (size_t k = 0; k < blocks_.size(); ++k) {
    const size_t i = blocks_.size() - 1 - k;
    const loom::StepArgs args = step_args(i, loss_scale);
    const loom::Tensor d_input = i == 0 ? loom::Tensor{} : hidden(d_hidden_offset_[k % 2], view_of(i));
    blocks_[i].block.call([&](loom::Block& b) { b.backward(args, d_output, d_input); });
    d_output = d_input;
    // Block i − 1 takes its gradient in its own layout; boundary i − 1's converted view is free
    // once block i's backward has read it.
    if (i > 0 && converts_after(i - 1)) {
      d_output = hidden(converted_offsets_[i - 1], view_of(i - 1));
      convert(d_input, i, d_output);
    }
    if (grads_final_from) grads_final_from(grads_final_offsets_[k]);
  }
}

std::string Model::architecture() const {
  const auto* named = blocks_.back().block.find<loom::ModelArchitecture>();
  const char* name = named != nullptr ? blocks_.back().block.call([&](loom::Block&) { return named->architecture(); })
                                      : nullptr;
  return name != nullptr ? name : "";
}

loom::Tensor Model::output(const std::string& name) const {
  for (const auto& block : blocks_) {
    const loom::Tensor found = block.block.call([&](loom::Block& b) {
      for (size_t i = 0; i < b.output_count(); ++i) {
        const loom::BlockOutput out = b.output(i);
        if (name == out.name) return out.value;
      }
      return loom::Tensor{};
    });
    if (found.defined() || found.ndim > 0) return found;
  }
  return loom::Tensor{};
}

std::vector<loom::BlockOutput> Model::head_outputs() const {
  return blocks_.back().block.call([](loom::Block& head) {
    std::vector<loom::BlockOutput> outputs;
    for (size_t i = 0; i < head.output_count(); ++i) {
      const loom::BlockOutput out = head.output(i);
      if (out.value.defined()) outputs.push_back(out);
    }
    return outputs;
  });
}

std::vector<CheckpointTensor> Model::checkpoint_tensors(float* host_master) const {
  std::vector<CheckpointTensor> tensors;
  for (const auto& entry : table_.entries())
    tensors.push_back(CheckpointTensor{entry.name, entry.shape, host_master + entry.offset});
  return tensors;
}

std::vector<CheckpointAlias> Model::checkpoint_aliases() const {
  std::vector<CheckpointAlias> aliases;
  for (const auto& alias : table_.aliases()) aliases.push_back(CheckpointAlias{alias.name, alias.target});
  return aliases;
}

}  // namespace loom::host
