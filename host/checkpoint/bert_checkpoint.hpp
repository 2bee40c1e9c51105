// BERT weights ↔ Hugging Face `BertForPreTraining` safetensors (docs/checkpoints.md).
//
// Loom's parameters already carry Hugging Face names (`bert.encoder.layer.3.attention.self.query.weight`,
// `cls.predictions.bias`, ...) and PyTorch shapes, so saving writes each parameter once as F32 under
// its own name; tied aliases (`cls.predictions.decoder.weight`) are left out, exactly as
// `save_pretrained` leaves them out, and `__metadata__` carries {"format": "pt"}, which Hugging
// Face's loader requires.
//
// Loading matches the file against the parameters and reports every difference:
// - recognised Hugging Face extras are accepted and listed in `ignored`: the `position_ids` /
//   `token_type_ids` buffers of the embeddings, a `cls.predictions.decoder.weight` identical to
//   the tied word embeddings, a `cls.predictions.decoder.bias` identical to `cls.predictions.bias`
//   (torch.save writes both names of a tied tensor);
// - older spellings are accepted and listed in `renamed`: `LayerNorm.gamma/beta` for
//   `LayerNorm.weight/bias`, names without the `bert.` prefix (a `BertModel` file), a tied alias
//   standing in for its absent target;
// - a parameter the file lacks is `missing`, a file tensor Loom has no place for is `unexpected`.
// Missing parameters are an error unless they match `may_be_missing_prefixes` (a fine-tuning head
// that starts from its initialiser); unexpected tensors are an error unless `allow_unexpected`
// (fine-tuning from a pre-training checkpoint leaves `cls.*` unused). Shape mismatches, a
// non-float dtype and a tied copy that differs from its target are always errors. All problems of
// one file are reported together in one CheckpointError naming the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint/safetensors.hpp"

namespace loom::host {

/// A checkpoint does not fit the model; the message names the file and lists every problem.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One parameter: Hugging Face name, PyTorch shape, and its fp32 storage (row-major, contiguous).
struct CheckpointTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  float* data = nullptr;  ///< read by save, written by load
};

/// A name that shares another parameter's storage (not saved; accepted on load).
struct CheckpointAlias {
  std::string name;    ///< e.g. "cls.predictions.decoder.weight"
  std::string target;  ///< e.g. "bert.embeddings.word_embeddings.weight"
};

/// The tie every BertForPreTraining has (decoder weight = word embeddings).
inline const CheckpointAlias kBertDecoderTie{"cls.predictions.decoder.weight",
                                             "bert.embeddings.word_embeddings.weight"};

struct CheckpointLoadOptions {
  /// Accept file tensors Loom does not use (still reported in `unexpected`).
  bool allow_unexpected = false;
  /// Parameters whose name starts with one of these may be absent (still reported in `missing`).
  std::vector<std::string> may_be_missing_prefixes;
};

/// What a load did, name by name.
struct CheckpointLoadReport {
  std::vector<std::string> loaded;      ///< parameters filled from the file
  std::vector<std::string> missing;     ///< parameters the file lacks (kept their current values)
  std::vector<std::string> unexpected;  ///< file tensors with no parameter
  std::vector<std::string> ignored;     ///< recognised Hugging Face extras, "name (why)"
  std::vector<std::string> renamed;     ///< "file name -> parameter name"

  /// Multi-line human summary (counts, then every missing/unexpected/ignored/renamed name).
  std::string summary() const;
};

/// Fills `parameters` from `file` (F32, F16, BF16 or F64 tensors; converted to f32). Throws
/// CheckpointError listing every problem; on error no parameter has been modified.
CheckpointLoadReport load_bert_checkpoint(const SafetensorsFile& file,
                                          std::span<const CheckpointTensor> parameters,
                                          std::span<const CheckpointAlias> aliases,
                                          const CheckpointLoadOptions& options = {});

/// Writes `parameters` (minus names listed in `aliases`) as F32 to `path` atomically, with
/// {"format": "pt"} plus `metadata` in `__metadata__`.
void save_bert_checkpoint(const std::filesystem::path& path, std::span<const CheckpointTensor> parameters,
                          std::span<const CheckpointAlias> aliases,
                          const std::map<std::string, std::string>& metadata = {});

}  // namespace loom::host
