// dataset/jsonl-mlm; see jsonl_mlm.hpp for what it delivers.
#include "jsonl_mlm.hpp"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "loom/sdk/error.hpp"
#include "loom/sdk/philox.hpp"

namespace loom_jsonl {
namespace {

// Independent random streams of one run, so shuffling and masking never share draws.
constexpr uint32_t kShuffleStream = 1, kMaskStream = 2;

// The `draw`-th random word of (stream, epoch, instance) under `seed`.
uint32_t random_word(uint64_t seed, uint32_t stream, uint64_t epoch, uint64_t instance, uint32_t draw) {
  const loom::Philox4x32 counter{{static_cast<uint32_t>(instance), static_cast<uint32_t>(instance >> 32),
                                  static_cast<uint32_t>(epoch), draw}};
  return loom::philox4x32_10(counter, seed ^ (static_cast<uint64_t>(stream) << 56)).word[0];
}

double uniform(uint32_t word) { return word * (1.0 / 4294967296.0); }

}  // namespace

JsonlMlmDataset::JsonlMlmDataset(loom::ComponentContext& context) {
  loom::Options& o = context.options();
  file_ = o.required<std::string>("file");
  text_key_ = o.get<std::string>("text_key", "text");
  max_seq_length_ = o.get<int32_t>("max_seq_length", 128, loom::Range{8, 1 << 16});
  batch_size_ = o.get<int32_t>("batch_size", 32, loom::Range{1, 1 << 20});
  max_predictions_ = o.get<int32_t>("max_predictions", 20, loom::Range{1, 1 << 16});
  masked_lm_prob_ = o.get<double>("masked_lm_prob", 0.15, loom::Range{0.0, 1.0});
  shuffle_ = o.get<bool>("shuffle", true);
  drop_last_ = o.get<bool>("drop_last", false);
  if (text_key_.empty()) o.fail("text_key", "must name a JSON member");
}

void JsonlMlmDataset::open(const loom::DatasetSetup& setup) {
  if (setup.tokenizer == nullptr)
    throw loom::ConfigError("dataset/jsonl-mlm tokenises its text: add a [tokenizer] table to the recipe");
  if (setup.world_size < 1 || setup.rank < 0 || setup.rank >= setup.world_size)
    throw loom::Error("dataset/jsonl-mlm: rank " + std::to_string(setup.rank) + " of " +
                      std::to_string(setup.world_size) + " is not a valid rank");
  tokenizer_ = setup.tokenizer;
  special_ = tokenizer_->special_token_ids();
  if (special_.cls < 0 || special_.sep < 0 || special_.mask < 0)
    throw loom::ConfigError("dataset/jsonl-mlm: the tokenizer's vocabulary lacks [CLS], [SEP] or [MASK]");
  rank_ = setup.rank;
  world_size_ = setup.world_size;
  seed_ = setup.seed;

  std::ifstream in(file_, std::ios::binary);
  if (!in) throw loom::IoError(file_ + ": cannot open the JSON-lines file (check [data] file)");
  texts_.clear();
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = file_ + ":" + std::to_string(number);
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw loom::IoError(where + ": not valid JSON (" + e.what() + ")");
    }
    const auto text = record.is_object() ? record.find(text_key_) : record.end();
    if (!record.is_object() || text == record.end() || !text->is_string())
      throw loom::IoError(where + ": expected an object with a string member \"" + text_key_ +
                          "\" (set [data] text_key to the member holding the text)");
    texts_.push_back({text->get<std::string>(), number});
  }
  if (in.bad()) throw loom::IoError(file_ + ": read error");
  open_ = true;
  if (rank_size() == 0)
    throw loom::IoError(file_ + ": " + std::to_string(texts_.size()) + " instances leave rank " +
                        std::to_string(rank_) + " of " + std::to_string(world_size_) + " nothing to read" +
                        (drop_last_ ? " (batch_size " + std::to_string(batch_size_) + " with drop_last)" : ""));
  cursor_ = {0, 0};
  order_epoch_ = UINT64_MAX;
}

void JsonlMlmDataset::require_open(const char* what) const {
  if (!open_) throw loom::Error(std::string("dataset/jsonl-mlm: ") + what + " before open()");
}

loom::BatchLimits JsonlMlmDataset::limits() const {
  return {loom::BatchTask::pretraining, batch_size_, max_seq_length_, max_predictions_, 0};
}

uint64_t JsonlMlmDataset::rank_size() const {
  const uint64_t n = texts_.size(), w = static_cast<uint64_t>(world_size_), r = static_cast<uint64_t>(rank_);
  uint64_t visits = n > r ? (n - r + w - 1) / w : 0;
  if (drop_last_) visits -= visits % static_cast<uint64_t>(batch_size_);
  return visits;
}

void JsonlMlmDataset::seek(const loom::DatasetCursor& cursor) {
  require_open("seek()");
  if (cursor.position > rank_size())
    throw loom::Error("dataset/jsonl-mlm: cannot seek to position " + std::to_string(cursor.position) +
                      ": this rank has " + std::to_string(rank_size()) + " instances per epoch (was " + file_ +
                      " changed since the checkpoint?)");
  cursor_ = cursor;
}

std::vector<uint64_t> JsonlMlmDataset::epoch_order(uint64_t epoch) const {
  std::vector<uint64_t> all(texts_.size());
  for (uint64_t i = 0; i < all.size(); ++i) all[i] = i;
  if (shuffle_)  // Fisher-Yates; 64 random bits per swap keep the modulo bias negligible.
    for (uint64_t i = all.size(); i > 1; --i) {
      const uint64_t bits = (static_cast<uint64_t>(random_word(seed_, kShuffleStream, epoch, i, 0)) << 32) |
                            random_word(seed_, kShuffleStream, epoch, i, 1);
      std::swap(all[i - 1], all[bits % i]);
    }
  std::vector<uint64_t> mine;
  for (uint64_t p = static_cast<uint64_t>(rank_); p < all.size(); p += static_cast<uint64_t>(world_size_))
    mine.push_back(all[p]);
  mine.resize(rank_size());
  return mine;
}

int32_t JsonlMlmDataset::encode_row(uint64_t id, uint64_t epoch, std::vector<int32_t>& ids,
                                    std::vector<int32_t>& labels) const {
  const std::string& text = texts_[id].text;
  ids.assign(static_cast<size_t>(max_seq_length_), 0);
  loom::EncodeOptions options;
  options.max_length = static_cast<size_t>(max_seq_length_);
  options.truncation = loom::Truncation::only_first;
  const size_t length = tokenizer_->encode(text.data(), text.size(), nullptr, 0, options,
                                           {ids.data(), nullptr, nullptr, ids.size()});
  const int32_t n = static_cast<int32_t>(std::min(length, ids.size()));
  labels.assign(static_cast<size_t>(n), loom::kIgnoreLabel);
  // Positions 1 .. n-2 are the text's tokens ([CLS] first, [SEP] last).
  int32_t masked = 0;
  uint32_t draw = 0;
  for (int32_t p = 1; p + 1 < n && masked < max_predictions_; ++p) {
    const uint32_t w = random_word(seed_, kMaskStream, epoch, id, draw++);
    if (uniform(w) >= masked_lm_prob_) continue;
    labels[static_cast<size_t>(p)] = ids[static_cast<size_t>(p)];
    const double kind = uniform(random_word(seed_, kMaskStream, epoch, id, draw++));
    if (kind < 0.8)
      ids[static_cast<size_t>(p)] = special_.mask;
    else if (kind < 0.9)  // a random vocabulary id
      ids[static_cast<size_t>(p)] = static_cast<int32_t>(random_word(seed_, kMaskStream, epoch, id, draw++) %
                                                         static_cast<uint32_t>(tokenizer_->vocab_size()));
    ++masked;
  }
  return n;
}

loom::BatchShape JsonlMlmDataset::next_batch(const loom::BatchBuffers& out) {
  require_open("next_batch()");
  if (cursor_.position >= rank_size()) cursor_ = {cursor_.epoch + 1, 0};
  if (order_epoch_ != cursor_.epoch) {
    order_ = epoch_order(cursor_.epoch);
    order_epoch_ = cursor_.epoch;
  }
  const int32_t rows =
      static_cast<int32_t>(std::min<uint64_t>(static_cast<uint64_t>(batch_size_), rank_size() - cursor_.position));
  std::vector<std::vector<int32_t>> ids(static_cast<size_t>(rows)), labels(static_cast<size_t>(rows));
  int32_t longest = 0;
  for (int32_t r = 0; r < rows; ++r) {
    const uint64_t id = order_[cursor_.position + static_cast<uint64_t>(r)];
    longest = std::max(longest, encode_row(id, cursor_.epoch, ids[static_cast<size_t>(r)], labels[static_cast<size_t>(r)]));
  }
  const int32_t seq = std::min(max_seq_length_, (longest + 7) / 8 * 8);
  const size_t cells = static_cast<size_t>(rows) * static_cast<size_t>(seq);
  auto fill = [&](int32_t* buffer, int32_t value) {
    if (buffer != nullptr) std::fill(buffer, buffer + cells, value);
  };
  fill(out.input_ids, 0);
  fill(out.token_type_ids, 0);
  fill(out.attention_mask, 0);
  fill(out.mlm_labels, loom::kIgnoreLabel);
  const size_t prediction_cells = static_cast<size_t>(rows) * static_cast<size_t>(max_predictions_);
  if (out.masked_positions != nullptr) std::fill(out.masked_positions, out.masked_positions + prediction_cells, 0);
  if (out.masked_ids != nullptr) std::fill(out.masked_ids, out.masked_ids + prediction_cells, 0);
  for (int32_t r = 0; r < rows; ++r) {
    const std::vector<int32_t>& row_labels = labels[static_cast<size_t>(r)];
    const size_t base = static_cast<size_t>(r) * static_cast<size_t>(seq);
    int32_t predictions = 0;
    for (size_t p = 0; p < row_labels.size(); ++p) {
      if (out.input_ids != nullptr) out.input_ids[base + p] = ids[static_cast<size_t>(r)][p];
      if (out.attention_mask != nullptr) out.attention_mask[base + p] = 1;
      if (row_labels[p] == loom::kIgnoreLabel) continue;
      if (out.mlm_labels != nullptr) out.mlm_labels[base + p] = row_labels[p];
      const size_t slot = static_cast<size_t>(r) * static_cast<size_t>(max_predictions_) + static_cast<size_t>(predictions++);
      if (out.masked_positions != nullptr) out.masked_positions[slot] = static_cast<int32_t>(p);
      if (out.masked_ids != nullptr) out.masked_ids[slot] = row_labels[p];
    }
    if (out.next_sentence_labels != nullptr) out.next_sentence_labels[r] = loom::kIgnoreLabel;
    if (out.instance_ids != nullptr) out.instance_ids[r] = order_[cursor_.position + static_cast<uint64_t>(r)];
  }
  loom::BatchShape shape{rows, seq, max_predictions_, 0, cursor_.epoch};
  cursor_.position += static_cast<uint64_t>(rows);
  shape.last_in_epoch = cursor_.position == rank_size() ? 1 : 0;
  return shape;
}

size_t JsonlMlmDataset::describe_instance(uint64_t id, char* json, size_t capacity) const {
  require_open("describe_instance()");
  if (id >= texts_.size()) throw loom::Error("dataset/jsonl-mlm: no instance " + std::to_string(id));
  const std::string text = nlohmann::json{{"file", file_}, {"line", texts_[id].line}}.dump();
  if (capacity > 0) {
    const size_t n = std::min(text.size(), capacity);
    std::copy(text.data(), text.data() + n, json);
    if (text.size() < capacity) json[text.size()] = '\0';
  }
  return text.size();
}

}  // namespace loom_jsonl
