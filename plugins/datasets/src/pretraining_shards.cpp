// dataset/pretraining-shards; see pretraining_shards.hpp.
#include "pretraining_shards.hpp"

#include <glob.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "loom/sdk/tokenizer.hpp"
#include "shard_manifest.hpp"

namespace loom_datasets {
namespace {

std::vector<std::string> expand_glob(const std::string& pattern) {
  glob_t result{};
  const int status = ::glob(pattern.c_str(), GLOB_BRACE | GLOB_TILDE, nullptr, &result);
  std::vector<std::string> files;
  if (status == 0)
    for (size_t i = 0; i < result.gl_pathc; ++i) files.emplace_back(result.gl_pathv[i]);
  globfree(&result);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

PretrainingShards::PretrainingShards(loom::ComponentContext& context) {
  loom::Options& o = context.options();
  pattern_ = o.required<std::string>("files");
  pattern_origin_ = o.where("files");
  batch_size_ = o.get<int32_t>("batch_size", 32, loom::Range{1, 1 << 20});
  shuffle_ = o.get<bool>("shuffle", true);
  drop_last_ = o.get<bool>("drop_last", false);
  budget_ = read_token_budget(o, batch_size_, drop_last_);
  dynamic_ = o.choice("masking", "static", {"static", "dynamic"}) == "dynamic";
  masking_.masked_lm_prob = o.get<double>("masked_lm_prob", 0.15, loom::Range{0, 1});
  masking_.mask_ratio = o.get<double>("mask_ratio", 0.8, loom::Range{0, 1});
  masking_.random_ratio = o.get<double>("random_ratio", 0.1, loom::Range{0, 1});
  max_seq_length_ = o.get<int32_t>("max_seq_length", 0, loom::Range{0, 1 << 16});
  if (masking_.mask_ratio + masking_.random_ratio > 1.0 + 1e-12)
    o.fail("random_ratio", "mask_ratio + random_ratio must be ≤ 1 (the rest keeps the token)");
  if (!dynamic_ && (o.has("masked_lm_prob") || o.has("mask_ratio") || o.has("random_ratio")))
    o.fail("masking",
           "masked_lm_prob/mask_ratio/random_ratio apply to masking = \"dynamic\" only (static masks "
           "were chosen by loom prep)");
}

void PretrainingShards::use_vocabulary_file(const char* path, const char* sha256) {
  vocabulary_file_ = {path != nullptr ? path : "", sha256 != nullptr ? sha256 : ""};
}

void PretrainingShards::open(const loom::DatasetSetup& setup) {
  files_ = expand_glob(pattern_);
  if (files_.empty())
    throw loom::IoError("data.files = \"" + pattern_ +
                        "\" matches no file (run loom prep pretraining first?)");
  std::vector<uint64_t> sizes;
  first_instance_.clear();
  uint64_t total = 0;
  for (size_t f = 0; f < files_.size(); ++f) {
    const ShardShape shape = read_shard_shape(files_[f]);
    if (f == 0) shape_ = shape;
    if (shape.seq_length != shape_.seq_length || shape.predictions != shape_.predictions)
      throw loom::IoError(files_[f] + ": shape [" + std::to_string(shape.seq_length) + ", " +
                          std::to_string(shape.predictions) + "] differs from " + files_[0] + " [" +
                          std::to_string(shape_.seq_length) + ", " + std::to_string(shape_.predictions) +
                          "] (mixing sequence lengths in one run is not supported)");
    first_instance_.push_back(total);
    sizes.push_back(shape.instances);
    total += shape.instances;
  }
  // Shards of a corpus too small for a held-out instance (heldout_00000.hdf5 of a small prep).
  if (total == 0)
    throw loom::IoError(pattern_origin_ + ": " +
                        (files_.size() == 1 ? files_[0] + " holds"
                                            : "the " + std::to_string(files_.size()) + " files matching \"" +
                                                  pattern_ + "\" hold") +
                        " no instance (a corpus too small for this split?)");
  if (max_seq_length_ != 0 && max_seq_length_ != shape_.seq_length)
    throw loom::ConfigError("data.max_seq_length = " + std::to_string(max_seq_length_) + " but " + files_[0] +
                            " holds sequences of " + std::to_string(shape_.seq_length));
  const ManifestVocabulary manifest = check_shard_manifests(files_, setup.tokenizer, vocabulary_file_);
  const std::string vocabulary =
      vocabulary_file_.path.empty() ? "the [tokenizer]'s vocabulary" : vocabulary_file_.path;
  if (setup.tokenizer != nullptr)
    value_limits_ = {setup.tokenizer->vocab_size(), vocabulary};
  else
    value_limits_ = {manifest.size,
                     manifest.size != 0 ? manifest.path + " (from " + manifest.manifest + ")" : ""};
  if (dynamic_) {
    if (setup.tokenizer == nullptr)
      throw loom::ConfigError(
          "data.masking = \"dynamic\" needs a [tokenizer] table (for the [MASK] id and the "
          "vocabulary size)");
    const loom::SpecialTokenIds special = setup.tokenizer->special_token_ids();
    if (special.mask < 0 && masking_.mask_ratio > 0)
      throw loom::ConfigError(
          "data.masking = \"dynamic\" replaces chosen tokens with [MASK], but the vocabulary " + vocabulary +
          " has no [MASK] token: use a vocabulary with one (BERT's have it at "
          "id 103), or set data.mask_ratio = 0 or masking = \"static\"");
    masking_.vocab_size = setup.tokenizer->vocab_size();
    masking_.cls = special.cls;
    masking_.sep = special.sep;
    masking_.pad = special.pad;
    masking_.mask = special.mask;
  }
  loaded_file_ = SIZE_MAX;
  loaded_ = ShardData{};
  loom::BatchLimits limits{};
  limits.task = loom::BatchTask::pretraining;
  limits.batch_size = batch_size_;
  limits.max_seq_length = shape_.seq_length;
  // Dynamic masking has no cap: any real position may be chosen.
  limits.max_predictions = dynamic_ ? shape_.seq_length : shape_.predictions;
  start(setup, sizes, shuffle_, drop_last_, limits, budget_);
}

void PretrainingShards::load_row(uint64_t instance, uint64_t epoch, Row& row) {
  const size_t file =
      static_cast<size_t>(std::upper_bound(first_instance_.begin(), first_instance_.end(), instance) -
                          first_instance_.begin()) -
      1;
  if (file != loaded_file_) {
    loaded_ = ShardData{};  // release the previous shard before reading the next
    loaded_ = read_shard(files_[file]);
    check_shard_values(loaded_, files_[file], value_limits_);
    loaded_file_ = file;
  }
  const size_t r = static_cast<size_t>(instance - first_instance_[file]);
  const auto L = static_cast<size_t>(shape_.seq_length);
  const auto P = static_cast<size_t>(shape_.predictions);
  size_t length = 0;
  for (size_t c = 0; c < L; ++c) length += loaded_.input_mask[r * L + c] != 0 ? 1 : 0;
  row.ids.assign(loaded_.input_ids.begin() + static_cast<ptrdiff_t>(r * L),
                 loaded_.input_ids.begin() + static_cast<ptrdiff_t>(r * L + length));
  row.types.assign(length, 0);
  for (size_t c = 0; c < length; ++c) row.types[c] = loaded_.segment_ids[r * L + c] != 0 ? 1 : 0;
  // Position 0 is [CLS], never masked: a 0 marks the end of the list (NVIDIA's loader rule).
  for (size_t p = 0; p < P; ++p) {
    const int32_t position = loaded_.masked_positions[r * P + p];
    if (position == 0) break;  // positions were range-checked when the shard was read
    row.positions.push_back(position);
    row.masked_ids.push_back(loaded_.masked_ids[r * P + p]);
  }
  row.next_sentence = loaded_.next_sentence[r] != 0 ? 1 : 0;
  if (dynamic_) apply_dynamic_masking(row, masking_, seed(), epoch, instance);
}

size_t PretrainingShards::describe_instance(uint64_t id, char* json, size_t capacity) const {
  const size_t file =
      static_cast<size_t>(std::upper_bound(first_instance_.begin(), first_instance_.end(), id) -
                          first_instance_.begin()) -
      1;
  const nlohmann::json description = {{"file", files_.at(file)}, {"row", id - first_instance_[file]}};
  return copy_text(description.dump(), json, capacity);
}

}  // namespace loom_datasets
