// Host batch → device BatchView; see batch_staging.hpp.
#include "model/batch_staging.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace loom::host {
namespace {

enum Slot : size_t {
  kIds,
  kTypes,
  kMask,
  kBias,
  kRows,
  kMaskedLabels,
  kNsp,
  kLabels,
  kStart,
  kEnd,
  kWordRows,
  kWordIds,
  kStarts,
  kPositions,
  kTokenRows,
  kSlots
};

// Byte offsets of the slots for batches up to `limits`, and after them the total.
std::vector<size_t> slot_offsets(const loom::ActivationShape& limits) {
  const size_t tokens = static_cast<size_t>(limits.batch * limits.seq);
  const size_t masked = static_cast<size_t>(std::max<int64_t>(limits.max_masked, 1));
  const size_t rows = static_cast<size_t>(limits.batch);
  const size_t counts[kSlots] = {tokens, tokens, tokens, tokens, masked,   masked, rows,
                                 rows,   rows,   rows,   tokens, tokens, rows + 1, tokens, tokens};
  std::vector<size_t> offsets;
  size_t bytes = 0;
  for (size_t count : counts) {
    offsets.push_back(bytes);
    bytes +=
        (count * 4 + loom::Backend::kAlignment - 1) / loom::Backend::kAlignment * loom::Backend::kAlignment;
  }
  offsets.push_back(bytes);
  return offsets;
}

}  // namespace

size_t BatchStaging::device_bytes(const loom::ActivationShape& limits) {
  return slot_offsets(limits).back();
}

BatchStaging::BatchStaging(loom::Backend& backend, const loom::ActivationShape& limits, int32_t pad_token_id)
    : backend_(backend), limits_(limits), pad_token_id_(pad_token_id) {
  if (limits.batch <= 0 || limits.seq <= 0 || limits.max_masked < 0)
    throw std::invalid_argument(fmt::format("BatchStaging: invalid limits batch {} seq {} max_masked {}",
                                            limits.batch, limits.seq, limits.max_masked));
  const size_t tokens = static_cast<size_t>(limits.batch * limits.seq);
  const size_t masked = static_cast<size_t>(std::max<int64_t>(limits.max_masked, 1));
  const size_t rows = static_cast<size_t>(limits.batch);
  offsets_ = slot_offsets(limits);
  device_ = loom::Buffer(backend, offsets_.back());
  offsets_.pop_back();
  masked_rows_.resize(masked);
  masked_labels_.resize(masked);
  row_values_.resize(rows);
  word_rows_.resize(tokens);
  word_row_ids_.resize(tokens);
  starts_.resize(rows + 1);
  positions_.resize(tokens);
  token_rows_.resize(tokens);
}

loom::Tensor BatchStaging::slot(size_t index, loom::DType dtype, std::initializer_list<int64_t> shape) const {
  return loom::Tensor::contiguous(static_cast<char*>(device_.data()) + offsets_[index], dtype, shape,
                                  backend_.device());
}

void BatchStaging::put(const int32_t* values, const loom::Tensor& view) {
  backend_.copy_from_host(view.data, values, view.nbytes());
}

const loom::BatchView& BatchStaging::upload(const HostBatch& batch) {
  const int64_t B = batch.batch, T = batch.seq;
  if (batch.input_ids == nullptr) throw std::invalid_argument("batch has no input_ids");
  if (B <= 0 || T <= 0 || B > limits_.batch || T > limits_.seq)
    throw std::invalid_argument(
        fmt::format("batch of {}×{} tokens exceeds the prepared {}×{}", B, T, limits_.batch, limits_.seq));
  loom::BatchView& v = view_;
  v = loom::BatchView{};
  v.batch = B;
  v.seq = T;
  v.input_ids = slot(kIds, loom::DType::i32, {B, T});
  put(batch.input_ids, v.input_ids);
  v.token_type_ids = slot(kTypes, loom::DType::i32, {B, T});
  if (batch.token_type_ids != nullptr)
    put(batch.token_type_ids, v.token_type_ids);
  else
    backend_.zero(v.token_type_ids);
  const loom::Tensor mask = slot(kMask, loom::DType::i32, {B, T});
  if (batch.attention_mask != nullptr)
    put(batch.attention_mask, mask);
  else
    backend_.fill(mask, 1.0);
  v.attention_bias = slot(kBias, loom::DType::f32, {B, T});
  backend_.additive_key_mask(mask, v.attention_bias);

  v.num_masked = 0;
  if (batch.mlm_labels != nullptr) {
    for (int64_t i = 0; i < B * T; ++i) {
      if (batch.mlm_labels[i] < 0) continue;
      if (v.num_masked == limits_.max_masked)
        throw std::invalid_argument(
            fmt::format("batch has more than the prepared {} MLM-labelled positions", limits_.max_masked));
      masked_rows_[static_cast<size_t>(v.num_masked)] = static_cast<int32_t>(i);
      masked_labels_[static_cast<size_t>(v.num_masked)] = batch.mlm_labels[i];
      ++v.num_masked;
    }
  }
  if (v.num_masked > 0) {
    v.masked_rows = slot(kRows, loom::DType::i32, {v.num_masked});
    v.masked_labels = slot(kMaskedLabels, loom::DType::i32, {v.num_masked});
    put(masked_rows_.data(), v.masked_rows);
    put(masked_labels_.data(), v.masked_labels);
  }

  v.num_word_rows = 0;
  for (int64_t i = 0; i < B * T; ++i) {
    if (batch.input_ids[i] == pad_token_id_) continue;
    word_rows_[static_cast<size_t>(v.num_word_rows)] = static_cast<int32_t>(i);
    word_row_ids_[static_cast<size_t>(v.num_word_rows)] = batch.input_ids[i];
    ++v.num_word_rows;
  }
  if (v.num_word_rows < B * T && v.num_word_rows > 0) {
    v.word_rows = slot(kWordRows, loom::DType::i32, {v.num_word_rows});
    v.word_row_ids = slot(kWordIds, loom::DType::i32, {v.num_word_rows});
    put(word_rows_.data(), v.word_rows);
    put(word_row_ids_.data(), v.word_row_ids);
  }

  auto per_row = [&](const int32_t* values, size_t index, bool clamp_to_seq) {
    if (values == nullptr) return loom::Tensor{};
    for (int64_t b = 0; b < B; ++b) {
      const int32_t value = values[b];
      row_values_[static_cast<size_t>(b)] = clamp_to_seq
                                                ? static_cast<int32_t>(std::clamp<int64_t>(value, 0, T))
                                                : (value < 0 ? loom::kIgnoreIndex : value);
    }
    const loom::Tensor view = slot(index, loom::DType::i32, {B});
    put(row_values_.data(), view);
    return view;
  };
  v.next_sentence_labels = per_row(batch.next_sentence_labels, kNsp, false);
  if (batch.targets != nullptr) {  // regression: the labels slot holds f32 targets (4 bytes too)
    v.labels = slot(kLabels, loom::DType::f32, {B});
    backend_.copy_from_host(v.labels.data, batch.targets, v.labels.nbytes());
  } else {
    v.labels = per_row(batch.labels, kLabels, false);
  }
  v.start_positions = per_row(batch.start_positions, kStart, true);
  v.end_positions = per_row(batch.end_positions, kEnd, true);
  packed_valid_ = pack(batch);
  return v;
}

bool BatchStaging::pack(const HostBatch& batch) {
  const int64_t B = batch.batch, T = batch.seq;
  if (batch.attention_mask == nullptr) return false;
  int64_t tokens = 0, longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int32_t* row = batch.attention_mask + b * T;
    const int64_t length = std::find(row, row + T, 0) - row;
    if (length == 0 || std::any_of(row + length, row + T, [](int32_t m) { return m != 0; })) return false;
    starts_[static_cast<size_t>(b)] = static_cast<int32_t>(tokens);
    for (int64_t t = 0; t < length; ++t) {
      positions_[static_cast<size_t>(tokens + t)] = static_cast<int32_t>(t);
      token_rows_[static_cast<size_t>(tokens + t)] = static_cast<int32_t>(b * T + t);
    }
    tokens += length;
    longest = std::max(longest, length);
  }
  if (tokens == B * T) return false;
  starts_[static_cast<size_t>(B)] = static_cast<int32_t>(tokens);
  loom::BatchView& p = packed_.view;
  p = loom::BatchView{};
  p.batch = 1;
  p.seq = tokens;
  p.sequences = B;
  p.max_sequence = longest;
  p.sequence_starts = slot(kStarts, loom::DType::i32, {B + 1});
  p.sequence_starts_host = starts_.data();
  p.token_positions = slot(kPositions, loom::DType::i32, {tokens});
  packed_.token_rows = slot(kTokenRows, loom::DType::i32, {tokens});
  put(starts_.data(), p.sequence_starts);
  put(positions_.data(), p.token_positions);
  put(token_rows_.data(), packed_.token_rows);
  return true;
}

}  // namespace loom::host
