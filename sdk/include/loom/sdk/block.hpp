// Block: one piece of a model (embeddings, an encoder layer, a head) that declares its parameters
// and activation needs and runs forward and backward through a Backend.
//
// Contract (docs/design.md §3–§4; the style of llm.c's layer_forward / layer_backward):
// - Life cycle: created by the host from the recipe's [model] `blocks` list (no options of its
//   own) → `setup()` once with the model config (the shared fields and the whole config.json),
//   backend and compute dtype → the host reads the
//   parameter specs, lays every parameter out in one flat fp32 master buffer and one flat fp32
//   gradient buffer, and calls `bind_parameters()` once with views into them → per (batch, seq)
//   the host sizes one activation arena from `activation_bytes()` → per micro-step `forward()` on
//   every block in order, then `backward()` in reverse order.
// - Parameters carry Hugging Face names below the block's `scope()` (the host composes
//   "bert.encoder.layer.3." + "attention.self.query.weight"), shapes as PyTorch stores them
//   (nn.Linear weight = [out, in]), an initialiser, a weight-decay flag, and optionally a tie:
//   a tied parameter has no storage of its own; its views alias the named parameter's, so the
//   gradient of both uses accumulates into one place (the MLM decoder and the word embeddings).
// - The hidden stream between blocks is f32 [batch, seq, hidden]. A block's `input` stays
//   unchanged from its forward to its backward (the host keeps one tensor per block boundary),
//   so a block need not copy it — unless the block offers BackwardInput (backward_input.hpp) and
//   says its backward does not read it. `backward` WRITES `d_input` and ACCUMULATES (+=) into the
//   parameter gradients; it may overwrite `d_output`.
// - Activation memory: `saved` bytes are this block's alone and live from forward to backward;
//   `scratch` bytes are shared by all blocks and valid only during one call. Blocks allocate
//   nothing in forward/backward.
// - Dropout draws from the backend's counter-based generator keyed by `StepArgs::dropout_seed`
//   mixed with the block's index and a per-site number, counter = element index; backward
//   regenerates the same mask from the same key, so masks are not stored and results do not
//   depend on thread count.
// - Numerics: in 16-bit compute (bf16 or f16), GEMM operands are in that dtype (weights from the
//   `compute` working copy the host casts once per step; activations cast just before the GEMM)
//   with f32 accumulation; the hidden stream, LayerNorm, softmax statistics and every gradient
//   stay f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/interfaces.hpp"
#include "loom/sdk/model_config.hpp"
#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class Backend;  // loom/sdk/backend.hpp

/// How a parameter starts before any checkpoint is loaded (Hugging Face `_init_weights`).
enum class ParameterInit : int32_t {
  normal = 0,  ///< N(0, initializer_range²): Linear and Embedding weights
  zeros = 1,   ///< biases, LayerNorm β
  ones = 2,    ///< LayerNorm γ
};

/// Most dimensions a parameter may have.
inline constexpr int kMaxParameterDims = 4;

/// One parameter a block declares. Strings have static storage (or live as long as the block).
struct ParameterSpec {
  const char* name;                  ///< Hugging Face name below the block's scope ("output.dense.bias")
  int32_t ndim;                      ///< 1 or 2 for BERT
  int64_t shape[kMaxParameterDims];  ///< row-major, as PyTorch stores it
  ParameterInit init;                ///< initial values
  int32_t weight_decay;              ///< 1: decayed (matrices), 0: not (biases, LayerNorm)
  const char* tied_to;               ///< nullptr, or the FULL name of an earlier block's parameter
                                     ///< of the same shape whose storage this one shares
};

/// The views of one parameter handed to `bind_parameters`, in declaration order.
struct ParameterView {
  Tensor master;   ///< f32 slice of the flat master buffer, the spec's shape
  Tensor compute;  ///< working copy in the compute dtype (the same memory as `master` in f32)
  Tensor grad;     ///< f32 slice of the flat gradient buffer; backward accumulates into it
};

/// Where a block sits in the model, which fixes what its `input` and `output` are.
enum class BlockRole : int32_t {
  embeddings = 0,  ///< input: none (reads the batch); output: hidden f32 [B, T, H]
  layer = 1,       ///< input: hidden [B, T, H]; output: hidden [B, T, H]
  head = 2,        ///< input: hidden [B, T, H]; output: its loss, f32 [1]
};

/// The batch shape the activation arena is sized for.
struct ActivationShape {
  int64_t batch;       ///< rows B
  int64_t seq;         ///< sequence length T
  int64_t max_masked;  ///< most MLM-labelled positions a batch may hold (≤ B·T)
};

/// What a block needs from the activation arena for one ActivationShape.
struct ActivationBytes {
  size_t saved;    ///< kept from forward to backward, this block's alone
  size_t scratch;  ///< temporary within one call, shared with every other block
};

/// Everything `setup` receives. Pointers stay valid for the block's lifetime.
struct BlockSetup {
  const ModelConfig* config;  ///< the model's hyper-parameters
  Backend* backend;           ///< runs every op; owned by the host
  DType compute_dtype;        ///< f32, bf16 or f16 (GEMM operand dtype)
  int32_t index;              ///< position in the model's block list (keys its dropout streams)
  /// SDK 0.2's fused-attention view of the backend; always nullptr since SDK 0.3, where op
  /// families are named interfaces (`backend_interfaces`). Kept so the layout does not change.
  void* unused_backend2;
  /// The backend's named interfaces (interfaces.hpp; nullptr when it offers none): ask with
  /// `find_backend_interface<I>(setup)`. Added in SDK 0.3 (ABI minor 3).
  loom_query_interface_fn backend_interfaces;
  /// The model's whole Hugging Face `config.json` as UTF-8 JSON text (NUL-terminated), as the host
  /// will write it into checkpoints (with the run's `num_labels`, `id2label`, ... already set).
  /// `config` holds the keys every family shares; a family reads the keys only it has
  /// (ModernBERT's `local_attention`, RoBERTa's ...) from here, with its own parser, and refuses a
  /// config it cannot serve (a wrong `model_type`, an unsupported value) by throwing
  /// loom::ConfigError naming the key. Added in SDK 0.4 (ABI minor 4): a block built against an
  /// earlier SDK never reads it.
  const char* config_json;
  /// Where `config_json` came from (a file name), for error messages.
  const char* config_source;
};

/// `setup.backend`'s implementation of named interface `I` (an op family such as
/// FusedAttention), or nullptr when the backend does not offer it.
template <typename I>
I* find_backend_interface(const BlockSetup& setup) {
  return find_interface<I>(setup.backend_interfaces, static_cast<void*>(setup.backend));
}

/// One batch as blocks see it: device tensors, row-major, i32 unless stated. Absent inputs are
/// undefined views. The host normalises labels: every "no loss here" label (Hugging Face -100,
/// NVIDIA -1) becomes kIgnoreIndex.
struct BatchView {
  int64_t batch;                ///< rows B
  int64_t seq;                  ///< columns T
  Tensor input_ids;             ///< [B, T]
  Tensor token_type_ids;        ///< [B, T] (all 0 when the data has no segments)
  Tensor attention_bias;        ///< f32 [B, T]: 0 for real tokens, kMaskedKey for padding keys
  int64_t num_masked;           ///< MLM-labelled positions in the batch (a host value)
  Tensor masked_rows;           ///< [num_masked]: b·T + t of each labelled position, ascending
  Tensor masked_labels;         ///< [num_masked]: the token id to predict at each of them
  Tensor next_sentence_labels;  ///< [B]: 0 = B follows A, 1 = random, or kIgnoreIndex
  Tensor labels;                ///< [B]: class index, or kIgnoreIndex; f32 targets when the
                                ///< model's num_labels = 1 (regression)
  Tensor start_positions;       ///< [B]: answer start token in [0, T]; T = ignored
  Tensor end_positions;         ///< [B]: answer end token (inclusive) in [0, T]; T = ignored
  /// Positions whose id is not [PAD] (`pad_token_id`), for the word-embedding gradient: as with
  /// Hugging Face's padding_idx, the [PAD] row gets no gradient from the input side. When the
  /// batch holds no [PAD], num_word_rows = B·T and the two views are undefined.
  int64_t num_word_rows;  ///< number of such positions (host value)
  Tensor word_rows;       ///< [num_word_rows]: b·T + t, ascending
  Tensor word_row_ids;    ///< [num_word_rows]: input_ids at those positions

  // The packed layout (SDK 0.5, ABI minor 5; packed_tokens.hpp). A block that offers
  // PackedTokens and accepts them may be handed a view whose hidden stream holds only real tokens:
  // the rows' real tokens back to back, `batch` = 1 and `seq` = N tokens, so [B, T, H] reads
  // [1, N, H]. Then `sequences` > 0, attention stays within each sequence, and `attention_bias`,
  // the labels and the word rows are undefined (the heads and the embeddings, which read them,
  // see the padded view). In every other view `sequences` is 0 and the fields below are unset;
  // a block built against an earlier SDK is never handed a packed view.
  int64_t sequences;                    ///< S sequences packed back to back (0: the padded layout)
  int64_t max_sequence;                 ///< the longest one's length
  Tensor sequence_starts;               ///< i32 [S + 1]: each sequence's first token, then N
  const int32_t* sequence_starts_host;  ///< the same S + 1 values in host memory
  Tensor token_positions;               ///< i32 [N]: each token's position (its column in the padded
                                        ///< batch: position ids, rotary angles, window distances)
};

/// The label value heads skip (the NVIDIA reference's ignore_index).
inline constexpr int32_t kIgnoreIndex = -1;

/// Per-call arguments of forward and backward.
struct StepArgs {
  const BatchView* batch;  ///< the micro-batch
  void* saved;             ///< this block's `saved` region of the arena (device memory)
  size_t saved_bytes;      ///< its size (≥ what activation_bytes asked for)
  void* scratch;           ///< the shared scratch region
  size_t scratch_bytes;    ///< its size
  int32_t training;        ///< 1: dropout active; 0: evaluation (dropout is the identity)
  uint64_t dropout_seed;   ///< key of this micro-step on this rank (from seed, step, micro, rank)
  float loss_scale;        ///< heads: backward yields gradients of loss × loss_scale
};

/// A named result a block exposes after forward (losses, logits), valid until its backward or
/// the next forward.
struct BlockOutput {
  const char* name;  ///< "mlm_loss", "seq_relationship_logits", ...
  Tensor value;      ///< device view (may be strided)
};

class Block {
 public:
  static constexpr loom_component_kind kKind = LOOM_KIND_BLOCK;
  static constexpr unsigned kInterfaceVersion = 1;
  static constexpr const char* kRecipeTable = "model";

  virtual ~Block() = default;

  /// Reads the config and remembers backend and dtype. Throws loom::ConfigError naming the
  /// config key when the block cannot serve this config (e.g. hidden_size not divisible by heads).
  virtual void setup(const BlockSetup& setup) = 0;
  /// What input and output mean for this block.
  virtual BlockRole role() const = 0;
  /// Name prefix of the parameters without the trailing dot ("bert.embeddings"); a '#' is replaced
  /// by the block's occurrence number among blocks of its component ("bert.encoder.layer.#");
  /// "" when parameter names are complete.
  virtual const char* scope() const = 0;

  /// Number of parameters (ties included).
  virtual size_t parameter_count() const = 0;
  /// Parameter `index` (< parameter_count()).
  virtual ParameterSpec parameter(size_t index) const = 0;
  /// The views of every parameter, in declaration order; called once, before any forward.
  virtual void bind_parameters(const ParameterView* views, size_t count) = 0;

  /// Arena needs for one batch shape.
  virtual ActivationBytes activation_bytes(const ActivationShape& shape) const = 0;
  /// Computes `output` from `input` (see BlockRole), saving what backward needs in `step.saved`.
  virtual void forward(const StepArgs& step, const Tensor& input, const Tensor& output) = 0;
  /// Writes `d_input` and accumulates parameter gradients; `step` is the one forward saw.
  virtual void backward(const StepArgs& step, const Tensor& d_output, const Tensor& d_input) = 0;

  /// Number of named outputs.
  virtual size_t output_count() const = 0;
  /// Named output `index`, valid after forward.
  virtual BlockOutput output(size_t index) const = 0;
};

LOOM_SDK_NAMESPACE_END
