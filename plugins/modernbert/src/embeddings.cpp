// block/modernbert.embeddings: token embeddings → LayerNorm → dropout; no position table (positions
// enter as rotary embeddings inside attention) and no token types.
//
//   out = dropout(LayerNorm(tok[ids]))     (B, T, H)
// Saved: the gathered rows and the norm's mean/rstd. As in Hugging Face (nn.Embedding padding_idx),
// positions holding the pad token send no gradient to the table, which the MLM decoder shares.
#include "components.hpp"
#include "loom/sdk/plugin.hpp"
#include "modern_block.hpp"

namespace loom_modernbert {
namespace {

class Embeddings final : public ModernBlock {
 public:
  explicit Embeddings(loom::ComponentContext&) : ModernBlock("block/modernbert.embeddings") {}

  loom::BlockRole role() const override { return loom::BlockRole::embeddings; }
  const char* scope() const override { return "model.embeddings"; }

  loom::ActivationBytes activation_bytes(const loom::ActivationShape& shape) const override {
    RegionCarver saved(nullptr, 0, {}, name_.c_str());
    carve_saved(saved, shape.batch * shape.seq);
    RegionCarver scratch(nullptr, 0, {}, name_.c_str());
    carve_norm_scratch(scratch);
    scratch.take(loom::DType::f32, {shape.batch * shape.seq, config_.hidden_size});  // d_rows
    scratch.take(loom::DType::f32, {shape.batch * shape.seq, config_.hidden_size});  // d_words
    return {saved.used(), scratch.used()};
  }

  void forward(const loom::StepArgs& step, const loom::Tensor&, const loom::Tensor& output) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t N = batch.batch * batch.seq, H = config_.hidden_size;
    RegionCarver region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    const Saved s = carve_saved(region, N);
    RegionCarver scratch(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    be().embedding_gather(master(tokens_), batch.input_ids, s.rows, false);
    const loom::Tensor out = output.reshape({N, H});
    norm_forward(norm_, s.rows, out, s.mean, s.rstd, norm_scratch(scratch));
    dropout_forward(step, out, out, modern_.embedding_dropout, 0);
  }

  void backward(const loom::StepArgs& step, const loom::Tensor& d_output, const loom::Tensor&) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t N = batch.batch * batch.seq, H = config_.hidden_size;
    RegionCarver region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    const Saved s = carve_saved(region, N);
    RegionCarver scratch(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const loom::Tensor spare = norm_scratch(scratch);
    const loom::Tensor d_rows = scratch.take(loom::DType::f32, {N, H});
    const loom::Tensor d_out = d_output.reshape({N, H});
    dropout_backward(step, d_out, d_out, modern_.embedding_dropout, 0);
    norm_backward(norm_, d_out, s.rows, s.mean, s.rstd, d_rows, false, spare);
    if (batch.word_rows.defined()) {  // skip pad positions (Hugging Face padding_idx)
      const loom::Tensor d_words = scratch.take(loom::DType::f32, {batch.num_word_rows, H});
      be().embedding_gather(d_rows, batch.word_rows, d_words, false);
      be().embedding_scatter_add(d_words, batch.word_row_ids, grad(tokens_));
    } else if (batch.num_word_rows > 0) {  // no pad token in the batch
      be().embedding_scatter_add(d_rows, batch.input_ids, grad(tokens_));
    }
  }

 private:
  struct Saved {
    loom::Tensor rows, mean, rstd;
  };
  Saved carve_saved(RegionCarver& region, int64_t N) const {
    return Saved{region.take(loom::DType::f32, {N, config_.hidden_size}), region.take(loom::DType::f32, {N}),
                 region.take(loom::DType::f32, {N})};
  }

  void declare_parameters() override {
    tokens_ = params_.weight("tok_embeddings.weight", config_.vocab_size, config_.hidden_size);
    norm_ = declare_norm("norm.weight", "norm.bias");
  }

  size_t tokens_ = 0;
  Norm norm_;
};

}  // namespace

loom_component_desc embeddings_component() {
  return loom::component<loom::Block, Embeddings>("modernbert.embeddings", "0.1.0",
                                                  "token embeddings, LayerNorm, dropout (ModernBERT)");
}

}  // namespace loom_modernbert
