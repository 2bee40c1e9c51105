// Model: the blocks of a network, its flat parameters and its activation arena (docs/design.md §3–§4).
//
// Construction creates every block through the plugin registry (block/<name>), sets it up, lays
// all parameters out in one ParameterTable — full Hugging Face names composed from each block's
// scope ("bert.encoder.layer.#" → "bert.encoder.layer.3.") — and allocates three flat buffers on
// the backend: the f32 master weights, the f32 gradients (same layout) and, in bf16 compute, the
// bf16 working copy. Every block is bound to its views once.
//
// `reserve(shape)` sizes the activation arena once for the largest batch: one f32 [B, T, H]
// tensor per block boundary whose next block's backward reads it, two used in turn for the other
// boundaries (BackwardInput), a compute-dtype copy of the boundaries where the blocks on both
// sides hand one over (HiddenCopy), two ping-pong gradient tensors, every block's `saved` region
// and one `scratch` region shared by all. Steps with batches up to that shape allocate nothing, on the
// device or on the host. A step: forward (blocks in order) → loss → backward (reverse order),
// gradients accumulating into the flat gradient buffer until `zero_grads()`.
//
// Unpadded (`set_unpadded`): the layers that accept packed tokens (PackedTokens) run on the real
// tokens of each batch that has padding (BatchStaging's PackedBatch); at a boundary between such a
// layer and a block that does not (the embeddings, the head, a block built against an older SDK),
// the model gathers the real rows into the packed layout, or scatters them back with zeros at
// padding, in forward and in backward, through one extra [B, T, H] buffer per such boundary.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/bert_checkpoint.hpp"
#include "loom/sdk/backend.hpp"
#include "loom/sdk/block.hpp"
#include "loom/sdk/hidden_copy.hpp"
#include "model/batch_staging.hpp"
#include "model/parameter_table.hpp"
#include "plugin_loading/component.hpp"
#include "plugin_loading/plugin_registry.hpp"

namespace loom::host {

/// The activation arena for batches up to one shape, by what its bytes hold (each part 64-byte
/// aligned, as laid out).
struct ArenaBytes {
  size_t block_outputs = 0;         ///< f32 [B, T, H] block outputs: one per boundary read again by
                                    ///< backward, two in turn for the others; and their
                                    ///< compute-dtype copies handed from block to block
  size_t saved = 0;                 ///< the blocks' `saved` regions, attention's part included
  size_t saved_attention = 0;       ///< of `saved`, what attention keeps (SavedAttentionBytes)
  size_t activation_gradients = 0;  ///< the two f32 [B, T, H] gradients backward uses in turn
  size_t scratch = 0;               ///< the region the blocks share within one call
  size_t loss = 0;                  ///< the head's f32 loss
  size_t total() const { return block_outputs + saved + activation_gradients + scratch + loss; }
};

/// Per-step switches of forward.
struct StepSettings {
  bool training = true;       ///< dropout on
  uint64_t dropout_seed = 0;  ///< key of this micro-step (mix of run seed, step, micro-step, rank)
};

class Model {
 public:
  /// Creates blocks `block_names` (without the "block/" kind) in order. The first must be an
  /// embeddings block, the last a head, every other a layer. Throws PluginError / loom::Error with
  /// the block's name on any problem. Blocks get `backend` and its named interfaces (op families
  /// such as fused attention), `config` and the whole config.json (`config_json`, read from
  /// `config_source`) for the keys only their family has.
  Model(const PluginRegistry& registry, const std::vector<std::string>& block_names,
        const loom::ModelConfig& config, const Component<loom::Backend>& backend, loom::DType compute_dtype,
        std::string config_json = "{}", std::string config_source = "config.json");

  const loom::ModelConfig& config() const { return config_; }
  loom::DType compute_dtype() const { return compute_dtype_; }
  const ParameterTable& parameters() const { return table_; }
  /// The backend the buffers live on.
  loom::Backend& backend() const { return backend_; }
  /// Flat f32 master weights, [total_elements].
  loom::Tensor master() const;
  /// Flat f32 gradients, [total_elements].
  loom::Tensor grads() const;
  /// Master / gradient view of one parameter (its PyTorch shape).
  loom::Tensor master(const ParameterEntry& entry) const;
  loom::Tensor grad(const ParameterEntry& entry) const;

  /// Sets every parameter to its initial value (parameter_init.hpp) and refreshes working weights.
  void initialize(uint64_t seed);
  /// Casts the master weights into the bf16 working copy (after the master weights are set, and
  /// once per step after the optimizer unless its passes write the copy themselves); nothing in
  /// f32 compute.
  void refresh_compute_weights();
  /// The flat working copy, compute dtype [total_elements] on the backend (the master layout);
  /// undefined in f32 compute, where the blocks compute from the master weights.
  loom::Tensor working_weights() const;
  /// Zeroes the flat gradient buffer.
  void zero_grads();

  /// Runs the layers that accept packed tokens unpadded (above) or not; before reserve().
  void set_unpadded(bool unpadded);
  /// True when set_unpadded(true) found a layer that accepts packed tokens.
  bool runs_unpadded() const;
  /// Sizes the arena for batches up to `shape` (allocates only when it must grow).
  void reserve(const loom::ActivationShape& shape);
  const loom::ActivationShape& reserved() const { return reserved_; }
  /// Bytes of the activation arena.
  size_t arena_bytes() const { return arena_.bytes(); }
  /// The arena reserve(`shape`) lays out, by part, with attention's share of the saved bytes from
  /// the blocks that report it; allocates nothing, so it sizes models too large for this machine.
  ArenaBytes arena_bytes_for(const loom::ActivationShape& shape) const;

  /// Runs every block forward on `batch` (which must fit `reserved()` and outlive backward), the
  /// layers that accept packed tokens on `packed` when the model runs unpadded and it is given
  /// (the same batch's packed form, BatchStaging::packed(); it must outlive backward too).
  void forward(const loom::BatchView& batch, const StepSettings& settings, const PackedBatch* packed = nullptr);
  /// The head's loss of the last forward (copied to the host).
  float loss() const;
  /// The same loss where the head wrote it: an f32 scalar in backend memory (no copy).
  loom::Tensor loss_tensor() const;
  /// Runs backward in reverse; gradients of loss × loss_scale accumulate into grads(). After
  /// each block, `grads_final_from(first)` (when given) says that gradient elements [first,
  /// total) are complete: later blocks write only below `first` (ties point to earlier blocks).
  void backward(float loss_scale, const std::function<void(size_t)>& grads_final_from = {});
  /// The `first` values backward reports, in order (for a rank that has no batch to run but must
  /// issue the same gradient collectives as the others).
  const std::vector<size_t>& grads_final_offsets() const { return grads_final_offsets_; }
  /// A named output of any block after forward ("mlm_loss", "seq_relationship_logits", ...);
  /// an undefined view when no block has it.
  loom::Tensor output(const std::string& name) const;
  /// The Hugging Face class the head names (ModelArchitecture), or "" when it names none.
  std::string architecture() const;
  /// Every named output of the head (the last block) that the last forward defined: what an
  /// inference client reads back ("start_logits" and "end_logits", "logits", ...).
  std::vector<loom::BlockOutput> head_outputs() const;

  /// Every parameter as a view into `host_master`, a HOST array of total_elements() floats in the
  /// master layout (for checkpoints; HostMirror of master() gives one on any backend).
  std::vector<CheckpointTensor> checkpoint_tensors(float* host_master) const;
  /// Every tie as (alias, target).
  std::vector<CheckpointAlias> checkpoint_aliases() const;

 private:
  struct ModelBlock {
    Component<loom::Block> block;
    loom::BlockRole role = loom::BlockRole::layer;
    size_t saved_offset = 0;  // bytes into the arena
    size_t saved_bytes = 0;
    loom::HiddenCopy* hidden_copy = nullptr;  // the block's HiddenCopy, where it gets or writes a copy
    bool input_copy = false, output_copy = false;  // which (output_copy: its boundary holds one)
    bool packs = false;  // runs packed batches (unpadded model, the block accepts them)
  };
  // Where reserve() puts each part of the arena for one shape (byte offsets).
  struct ArenaLayout {
    std::vector<size_t> boundary_offsets;             // output of block i (i < n − 1)
    std::vector<size_t> copy_offsets;                 // its compute-dtype copy, where handed over
    std::vector<size_t> converted_offsets;            // in the next block's layout, where it differs
    size_t loss_offset = 0, d_hidden_offset[2] = {0, 0};
    std::vector<size_t> saved_offsets, saved_bytes;   // per block
    size_t scratch_offset = 0, scratch_bytes = 0, total = 0;
  };
  ArenaLayout arena_layout(const loom::ActivationShape& shape) const;
  void add_block(const PluginRegistry& registry, const std::string& name, std::vector<std::string>& seen);
  void bind_blocks();
  loom::Tensor hidden(size_t offset, const loom::BatchView& batch) const;
  /// Whether the block's backward reads its input (BackwardInput; true when it does not say).
  bool backward_reads_input(const ModelBlock& block) const;
  /// Decides at which boundaries the blocks hand over a compute-dtype copy (HiddenCopy), records it
  /// in each ModelBlock and tells the block, before any activation_bytes.
  void pair_hidden_copies();
  /// Gives block i this forward's copies, where it uses any.
  void set_hidden_copies(size_t i, const loom::BatchView& batch) const;
  loom::StepArgs step_args(size_t i, float loss_scale) const;
  /// The view block i runs on in this step: the packed one or the padded one.
  const loom::BatchView& view_of(size_t i) const;
  /// True when the layouts of blocks i and i + 1 differ in this step.
  bool converts_after(size_t i) const;
  /// `from` in block `from_block`'s layout → `to` in the other layout of the same step.
  void convert(const loom::Tensor& from, size_t from_block, const loom::Tensor& to) const;

  loom::ModelConfig config_;
  std::string config_json_, config_source_;  // handed to every block's setup
  loom::Backend& backend_;
  loom_query_interface_fn backend_interfaces_;
  loom::DType compute_dtype_;
  std::vector<ModelBlock> blocks_;
  std::vector<std::string> block_names_;
  ParameterTable table_;
  std::vector<std::vector<const ParameterEntry*>> block_parameters_;  // per block, per spec
  loom::Buffer master_, grads_, compute_;

  loom::ActivationShape reserved_{0, 0, 0};
  loom::Buffer arena_;
  std::vector<size_t> boundary_offsets_;  // output of block i (i < n − 1)
  std::vector<size_t> copy_offsets_;      // that copy's place in the arena
  std::vector<size_t> converted_offsets_;  // boundary i in block i + 1's layout (unpadded model)
  size_t loss_offset_ = 0, d_hidden_offset_[2] = {0, 0}, scratch_offset_ = 0, scratch_bytes_ = 0;

  std::vector<size_t> grads_final_offsets_;  // per block in backward order
  const loom::BatchView* batch_ = nullptr;   // of the last forward
  const PackedBatch* packed_ = nullptr;      // its packed form, when the layers run on it
  StepSettings settings_{};
};

}  // namespace loom::host
