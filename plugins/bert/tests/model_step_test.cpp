// A whole pre-training model step: the initial loss is ln(V) + ln(2) (near-uniform logits), the
// tied word embeddings receive the decoder's gradient (finite differences through the whole
// model), gradients accumulate across backward calls, dropout is reproducible from its seed, and
// a steady-state step allocates nothing: no device memory (a counting Backend) and no host heap in
// the host's model/staging code or in the blocks (a counting global operator new, paused inside
// backend calls — what oneDNN does inside an op is the backend's contract, tested there).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

#include "block_harness.hpp"
#include "model/batch_staging.hpp"
#include "model/model.hpp"

// The replacement operator new/delete below pair malloc with free; GCC 12 flags the inlined free
// at delete sites as a mismatch (a false positive for replaced global operators).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_heap_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) g_heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace loom_bert_test {
namespace {

// While alive, heap allocations count as the backend's, not as the host's or the blocks'.
struct InsideBackend {
  InsideBackend() : was(g_counting.exchange(false)), before(g_heap_allocations.load()) {}
  ~InsideBackend() { g_counting = was; }
  bool was;
  long before;
};

// Forwards every call to backend/cpu and counts allocations.
class CountingBackend final : public loom::Backend {
 public:
  explicit CountingBackend(loom::Backend& inner) : inner_(inner) {}
  long allocations = 0;

  loom::Device device() const override {
    const InsideBackend inside;
    return inner_.device();
  }
  int threads() const override {
    const InsideBackend inside;
    return inner_.threads();
  }
  void* allocate(size_t bytes) override {
    const InsideBackend inside;
    ++allocations;
    return inner_.allocate(bytes);
  }
  void deallocate(void* data) override {
    const InsideBackend inside;
    inner_.deallocate(data);
  }
  void copy_from_host(void* d, const void* s, size_t n) override {
    const InsideBackend inside;
    inner_.copy_from_host(d, s, n);
  }
  void copy_to_host(void* d, const void* s, size_t n) override {
    const InsideBackend inside;
    inner_.copy_to_host(d, s, n);
  }
  void synchronize() override {
    const InsideBackend inside;
    inner_.synchronize();
  }
  void fill(const loom::Tensor& x, double v) override {
    const InsideBackend inside;
    inner_.fill(x, v);
  }
  void zero(const loom::Tensor& x) override {
    const InsideBackend inside;
    inner_.zero(x);
  }
  void copy(const loom::Tensor& s, const loom::Tensor& d) override {
    const InsideBackend inside;
    inner_.copy(s, d);
  }
  void cast(const loom::Tensor& s, const loom::Tensor& d) override {
    const InsideBackend inside;
    inner_.cast(s, d);
  }
  void gemm(const loom::Tensor& a, bool ta, const loom::Tensor& b, bool tb, const loom::Tensor& c,
            float alpha, float beta) override {
    const InsideBackend inside;
    inner_.gemm(a, ta, b, tb, c, alpha, beta);
  }
  void bias_add(const loom::Tensor& x, const loom::Tensor& b) override {
    const InsideBackend inside;
    inner_.bias_add(x, b);
  }
  void bias_grad(const loom::Tensor& dy, const loom::Tensor& db) override {
    const InsideBackend inside;
    inner_.bias_grad(dy, db);
  }
  void bias_gelu_forward(const loom::Tensor& x, const loom::Tensor& b, const loom::Tensor& y,
                         loom::Gelu g) override {
    const InsideBackend inside;
    inner_.bias_gelu_forward(x, b, y, g);
  }
  void bias_gelu_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& b,
                          const loom::Tensor& dx, const loom::Tensor& db, loom::Gelu g) override {
    const InsideBackend inside;
    inner_.bias_gelu_backward(dy, x, b, dx, db, g);
  }
  void tanh_forward(const loom::Tensor& x, const loom::Tensor& y) override {
    const InsideBackend inside;
    inner_.tanh_forward(x, y);
  }
  void tanh_backward(const loom::Tensor& dy, const loom::Tensor& y, const loom::Tensor& dx) override {
    const InsideBackend inside;
    inner_.tanh_backward(dy, y, dx);
  }
  void add(const loom::Tensor& a, const loom::Tensor& b, const loom::Tensor& o) override {
    const InsideBackend inside;
    inner_.add(a, b, o);
  }
  void axpby(float a, const loom::Tensor& x, float b, const loom::Tensor& y) override {
    const InsideBackend inside;
    inner_.axpby(a, x, b, y);
  }
  void layernorm_forward(const loom::Tensor& x, const loom::Tensor& g, const loom::Tensor& b, float eps,
                         const loom::Tensor& y, const loom::Tensor& m, const loom::Tensor& r) override {
    const InsideBackend inside;
    inner_.layernorm_forward(x, g, b, eps, y, m, r);
  }
  void layernorm_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& g,
                          const loom::Tensor& m, const loom::Tensor& r, const loom::Tensor& dx,
                          const loom::Tensor& dg, const loom::Tensor& db, bool acc) override {
    const InsideBackend inside;
    inner_.layernorm_backward(dy, x, g, m, r, dx, dg, db, acc);
  }
  void additive_key_mask(const loom::Tensor& m, const loom::Tensor& o) override {
    const InsideBackend inside;
    inner_.additive_key_mask(m, o);
  }
  void softmax_forward(const loom::Tensor& s, const loom::Tensor& m, float scale,
                       const loom::Tensor& p) override {
    const InsideBackend inside;
    inner_.softmax_forward(s, m, scale, p);
  }
  void softmax_backward(const loom::Tensor& dp, const loom::Tensor& p, float scale,
                        const loom::Tensor& ds) override {
    const InsideBackend inside;
    inner_.softmax_backward(dp, p, scale, ds);
  }
  void dropout_forward(const loom::Tensor& x, const loom::Tensor& y, float p, uint64_t s,
                       uint64_t o) override {
    const InsideBackend inside;
    inner_.dropout_forward(x, y, p, s, o);
  }
  void dropout_backward(const loom::Tensor& dy, const loom::Tensor& dx, float p, uint64_t s,
                        uint64_t o) override {
    const InsideBackend inside;
    inner_.dropout_backward(dy, dx, p, s, o);
  }
  void embedding_gather(const loom::Tensor& t, const loom::Tensor& i, const loom::Tensor& o,
                        bool acc) override {
    const InsideBackend inside;
    inner_.embedding_gather(t, i, o, acc);
  }
  void embedding_scatter_add(const loom::Tensor& d, const loom::Tensor& i, const loom::Tensor& t) override {
    const InsideBackend inside;
    inner_.embedding_scatter_add(d, i, t);
  }
  void cross_entropy(const loom::Tensor& l, const loom::Tensor& t, int64_t n, int64_t ig, float gs,
                     const loom::Tensor& ml, const loom::Tensor& dl, const loom::Tensor& rl,
                     const loom::Tensor& rc) override {
    const InsideBackend inside;
    inner_.cross_entropy(l, t, n, ig, gs, ml, dl, rl, rc);
  }
  void sum_squares(const loom::Tensor& x, const int64_t* o, size_t n, const loom::Tensor& out) override {
    const InsideBackend inside;
    inner_.sum_squares(x, o, n, out);
  }
  void global_norm(const loom::Tensor& x, const loom::Tensor& o) override {
    const InsideBackend inside;
    inner_.global_norm(x, o);
  }
  void check_finite(const loom::Tensor& x, const loom::Tensor& f) override {
    const InsideBackend inside;
    inner_.check_finite(x, f);
  }

 private:
  loom::Backend& inner_;
};

std::vector<std::string> pretraining_blocks(int layers) {
  std::vector<std::string> blocks = {"bert.embeddings"};
  for (int i = 0; i < layers; ++i) blocks.push_back("bert.encoder-layer");
  blocks.push_back("bert.pretraining-heads");
  return blocks;
}

struct SmallModel {
  explicit SmallModel(loom::Backend& backend, loom::DType dtype = loom::DType::f32)
      : config(small_config()),
        batch(small_batch(config)),
        model(registry(), pretraining_blocks(2), config, borrowed_backend(backend), dtype),
        staging(backend, loom::ActivationShape{batch.batch, batch.seq, 4}) {
    model.initialize(42);
    model.reserve(staging.limits());
    view = &staging.upload(batch.view());
  }
  float step(bool training, uint64_t seed = 1) {
    model.forward(*view, loom::host::StepSettings{training, seed});
    const float loss = model.loss();
    model.backward(1.0f);
    return loss;
  }
  loom::ModelConfig config;
  SmallBatch batch;
  loom::host::Model model;
  loom::host::BatchStaging staging;
  const loom::BatchView* view = nullptr;
};

TEST(ModelStep, InitialLossIsUniformCrossEntropy) {
  SmallModel m(cpu_backend());
  m.model.forward(*m.view, {false, 0});
  EXPECT_NEAR(m.model.loss(), std::log(53.0) + std::log(2.0), 0.1);
  float mlm = 0, nsp = 0;
  cpu_backend().copy_to_host(&mlm, m.model.output("mlm_loss").data, 4);
  cpu_backend().copy_to_host(&nsp, m.model.output("nsp_loss").data, 4);
  EXPECT_NEAR(mlm, std::log(53.0), 0.1);
  EXPECT_NEAR(nsp, std::log(2.0), 0.02);
  EXPECT_NEAR(mlm + nsp, m.model.loss(), 1e-6);
  const loom::Tensor logits = m.model.output("masked_prediction_logits");
  EXPECT_EQ(logits.shape[0], 4);
  EXPECT_EQ(logits.shape[1], 53);
  EXPECT_EQ(logits.strides[0], 56) << "logit rows are padded to a multiple of 8";
}

// masked_prediction_correct is 1 exactly where the first arg-max of a row's logits is its label:
// the labels of two of the four rows are set to their rows' arg-max, so both verdicts occur.
TEST(ModelStep, MaskedPredictionCorrectIsTheArgmaxAgainstTheLabel) {
  SmallModel m(cpu_backend());
  const int32_t positions[4] = {1, 4, 6, 9};  // the labelled positions of small_batch, in row order
  const auto argmax_of_rows = [&] {
    const loom::Tensor logits = m.model.output("masked_prediction_logits");
    std::vector<int32_t> best(4, 0);
    for (int64_t r = 0; r < 4; ++r) {
      const float* row = static_cast<const float*>(logits.data) + r * logits.strides[0];
      for (int64_t c = 1; c < logits.shape[1]; ++c)
        if (row[c] > row[best[r]]) best[r] = static_cast<int32_t>(c);
    }
    return best;
  };
  m.model.forward(*m.view, {false, 0});
  const std::vector<int32_t> best = argmax_of_rows();
  m.batch.mlm_labels[positions[0]] = best[0];
  m.batch.mlm_labels[positions[2]] = best[2];
  m.batch.mlm_labels[positions[3]] = (best[3] + 1) % 53;
  m.view = &m.staging.upload(m.batch.view());
  m.model.forward(*m.view, {false, 0});
  ASSERT_EQ(argmax_of_rows(), best) << "the logits do not depend on the labels";
  const loom::Tensor correct = m.model.output("masked_prediction_correct");
  ASSERT_EQ(correct.dtype, loom::DType::i32);
  ASSERT_EQ(correct.shape[0], 4);
  const int32_t* verdicts = static_cast<const int32_t*>(correct.data);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(verdicts[r], best[r] == m.batch.mlm_labels[positions[r]] ? 1 : 0) << "row " << r;
  EXPECT_EQ(verdicts[0], 1);
  EXPECT_EQ(verdicts[2], 1);
  EXPECT_EQ(verdicts[3], 0);
}

TEST(ModelStep, TiedWordEmbeddingsGetTheDecoderGradient) {
  SmallModel m(cpu_backend());
  // Larger weights so every path carries gradient.
  const auto& table = m.model.parameters();
  float* master = m.model.master().data_as<float>();
  for (const auto& e : table.entries())
    if (e.init == loom::ParameterInit::normal)
      for (size_t i = 0; i < e.count; ++i) master[e.offset + i] *= 10.0f;
  m.model.zero_grads();
  m.step(false);
  const auto* word = table.find("bert.embeddings.word_embeddings.weight");
  const float* grads = m.model.grads().data_as<float>();
  const int32_t predicted = m.batch.mlm_labels[1];  // a label: its row feeds the decoder
  const int32_t input = m.batch.ids[0];             // an input token
  for (int32_t row : {predicted, input, 52}) {
    for (int64_t col : {0, 5, 23}) {
      const size_t index = word->offset + static_cast<size_t>(row * 24 + col);
      const float saved = master[index];
      const float h = 1e-2f;
      master[index] = saved + h;
      m.model.forward(*m.view, {false, 0});
      const double plus = m.model.loss();
      master[index] = saved - h;
      m.model.forward(*m.view, {false, 0});
      const double minus = m.model.loss();
      master[index] = saved;
      const double numeric = (plus - minus) / (2 * h);
      EXPECT_NEAR(numeric, grads[index], 2e-3 + 2e-2 * std::fabs(numeric)) << "row " << row << " col " << col;
    }
  }
}

TEST(ModelStep, GradientsAccumulateAcrossBackwardCalls) {
  SmallModel m(cpu_backend());
  m.model.zero_grads();
  m.step(false);
  const loom::Tensor grads = m.model.grads();
  std::vector<float> once(grads.data_as<float>(), grads.data_as<float>() + grads.numel());
  m.step(false);
  double worst = 0;
  for (int64_t i = 0; i < grads.numel(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(grads.data_as<float>()[i]) - 2.0 * once[i]));
  EXPECT_LT(worst, 1e-6);
}

TEST(ModelStep, DropoutIsReproducibleFromItsSeed) {
  SmallModel m(cpu_backend());
  const float eval = m.step(false);
  const float a = m.step(true, 7);
  const float b = m.step(true, 7);
  const float c = m.step(true, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, eval);
}

TEST(ModelStep, SteadyStateStepAllocatesNothing) {
  for (loom::DType dtype : {loom::DType::f32, loom::DType::bf16}) {
    CountingBackend backend(cpu_backend());
    SmallModel m(backend, dtype);
    m.model.zero_grads();
    m.step(true);  // warm-up: library caches (oneDNN primitives) fill here
    const long device_before = backend.allocations;
    g_heap_allocations = 0;
    g_counting = true;
    const loom::BatchView& view = m.staging.upload(m.batch.view());
    m.model.refresh_compute_weights();
    m.model.zero_grads();
    m.model.forward(view, {true, 2});
    const float loss = m.model.loss();
    m.model.backward(1.0f);
    g_counting = false;
    EXPECT_TRUE(std::isfinite(loss));
    EXPECT_EQ(backend.allocations, device_before) << loom::dtype_name(dtype);
    EXPECT_EQ(g_heap_allocations.load(), 0) << loom::dtype_name(dtype);
  }
}

}  // namespace
}  // namespace loom_bert_test
