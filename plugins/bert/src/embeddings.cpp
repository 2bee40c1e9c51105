// block/bert.embeddings, block/roberta.embeddings: word + position + token-type embeddings →
// LayerNorm → dropout.
//
//   sum[b, t]  = word[ids[b, t]] + position[first + t] + token_type[types[b, t]]    (B, T, H)
//   out        = dropout(LayerNorm(sum))
// BERT: first = 0. RoBERTa: first = pad_token_id + 1, Hugging Face's position ids of a row padded on
// the right (create_position_ids_from_input_ids counts the non-padding ids before a token); a padding
// position gets position pad_token_id there and first + t here, which changes nothing that reaches
// a real token (its key is masked) nor any gradient (its output has none). RoBERTa's one token type
// is added to every position, whatever types the data carries (its tokenizer gives none).
// Saved: sum, LayerNorm mean/rstd. Backward scatters d(sum) into the three tables (the word table's
// gradient also receives the tied MLM decoder's share, from the pretraining heads). As in Hugging
// Face (nn.Embedding padding_idx), positions holding [PAD] send no gradient to the word table.
#include "bert_block.hpp"
#include "components.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom_blocks/region_carver.hpp"

namespace loom_bert {
namespace {

template <const Family& kFamily>
class Embeddings final : public BertBlock {
 public:
  explicit Embeddings(loom::ComponentContext&) : BertBlock(kFamily, "embeddings") {}

  loom::BlockRole role() const override { return loom::BlockRole::embeddings; }
  const char* scope() const override { return kFamily.embeddings_scope; }

  loom::ActivationBytes activation_bytes(const loom::ActivationShape& shape) const override {
    RegionCarver saved(nullptr, 0, {}, name_.c_str());
    carve_saved(saved, shape.batch, shape.seq);
    RegionCarver scratch(nullptr, 0, {}, name_.c_str());
    scratch.take(loom::DType::f32, {shape.batch * shape.seq, config_.hidden_size});  // d_sum
    scratch.take(loom::DType::f32, {shape.batch * shape.seq, config_.hidden_size});  // d_words
    return {saved.used(), scratch.used()};
  }

  void forward(const loom::StepArgs& step, const loom::Tensor&, const loom::Tensor& output) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size;
    if (first_position() + T > config_.max_position_embeddings)
      throw loom::Error(name_ + ": sequence length " + std::to_string(T) + " exceeds " +
                        std::to_string(config_.max_position_embeddings - first_position()) +
                        " (max_position_embeddings = " + std::to_string(config_.max_position_embeddings) +
                        (first_position() > 0 ? ", less the " + std::to_string(first_position()) +
                                                    " positions up to pad_token_id"
                                              : std::string()) +
                        ")");
    RegionCarver region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    const Saved s = carve_saved(region, B, T);
    const loom::Tensor sum = s.sum.reshape({B, T, H});
    be().embedding_gather(master(word_), batch.input_ids, sum, false);
    if (one_token_type())
      be().bias_add(sum, master(type_).select(0, 0));
    else
      be().embedding_gather(master(type_), batch.token_type_ids, sum, true);
    be().bias_add(sum, master(position_).narrow(0, first_position(), T));
    be().layernorm_forward(sum, master(gamma_), master(beta_), config_.layer_norm_eps, output, s.mean,
                           s.rstd);
    dropout_forward(step, output, output, config_.hidden_dropout_prob, 0);
  }

  void backward(const loom::StepArgs& step, const loom::Tensor& d_output, const loom::Tensor&) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size;
    RegionCarver region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    const Saved s = carve_saved(region, B, T);
    RegionCarver scratch(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const loom::Tensor d_sum = scratch.take(loom::DType::f32, {B, T, H});
    dropout_backward(step, d_output, d_output, config_.hidden_dropout_prob, 0);
    be().layernorm_backward(d_output, s.sum.reshape({B, T, H}), master(gamma_), s.mean, s.rstd, d_sum,
                            grad(gamma_), grad(beta_), false);
    if (batch.word_rows.defined()) {  // skip [PAD] positions (Hugging Face padding_idx)
      const loom::Tensor d_words = scratch.take(loom::DType::f32, {batch.num_word_rows, H});
      be().embedding_gather(d_sum.reshape({B * T, H}), batch.word_rows, d_words, false);
      be().embedding_scatter_add(d_words, batch.word_row_ids, grad(word_));
    } else if (batch.num_word_rows > 0) {  // no [PAD] in the batch
      be().embedding_scatter_add(d_sum, batch.input_ids, grad(word_));
    }
    if (one_token_type())
      be().bias_grad(d_sum, grad(type_).select(0, 0));
    else
      be().embedding_scatter_add(d_sum, batch.token_type_ids, grad(type_));
    be().bias_grad(d_sum, grad(position_).narrow(0, first_position(), T));
  }

 private:
  /// The position of column 0.
  int64_t first_position() const { return kFamily.positions_after_padding_id ? config_.pad_token_id + 1 : 0; }
  /// RoBERTa with its one token type: row 0 for every token, the data's types unread.
  bool one_token_type() const { return kFamily.positions_after_padding_id && config_.type_vocab_size == 1; }

  struct Saved {
    loom::Tensor sum, mean, rstd;
  };
  Saved carve_saved(RegionCarver& region, int64_t B, int64_t T) const {
    const int64_t N = B * T;
    return Saved{region.take(loom::DType::f32, {N, config_.hidden_size}), region.take(loom::DType::f32, {N}),
                 region.take(loom::DType::f32, {N})};
  }

  void declare_parameters() override {
    const int64_t H = config_.hidden_size;
    word_ = params_.weight("word_embeddings.weight", config_.vocab_size, H);
    position_ = params_.weight("position_embeddings.weight", config_.max_position_embeddings, H);
    type_ = params_.weight("token_type_embeddings.weight", config_.type_vocab_size, H);
    gamma_ = params_.gamma("LayerNorm.weight", H);
    beta_ = params_.bias("LayerNorm.bias", H);
  }

  size_t word_ = 0, position_ = 0, type_ = 0, gamma_ = 0, beta_ = 0;
};

}  // namespace

loom_component_desc embeddings_component() {
  return loom::component<loom::Block, Embeddings<kBert>>(
      "bert.embeddings", "0.1.0", "word + position + token-type embeddings, LayerNorm, dropout");
}

loom_component_desc roberta_embeddings_component() {
  return loom::component<loom::Block, Embeddings<kRoberta>>(
      "roberta.embeddings", "0.1.0",
      "word + position (from pad_token_id + 1) + token-type embeddings, LayerNorm, dropout (RoBERTa)");
}

}  // namespace loom_bert
