// BlockHarness; see block_harness.hpp.
#include "block_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>

#include "loom/sdk/component_kind.hpp"
#include "loom/sdk/hidden_copy.hpp"

namespace loom_bert_test {

using loom::host::Component;
using loom::host::ComponentConfig;
using loom::host::PluginRegistry;

const PluginRegistry& registry() {
  static const PluginRegistry instance([] {
    loom::host::PluginSearchOptions options;
    options.directories = {LOOM_PLUGIN_DIR};
    options.default_paths = false;
    return options;
  }());
  return instance;
}

const Component<loom::Backend>& cpu_backend_component(int threads, bool fused_attention) {
  static std::map<std::pair<int, bool>, Component<loom::Backend>> backends;
  const std::pair<int, bool> key{threads, fused_attention};
  auto it = backends.find(key);
  if (it == backends.end()) {
    const auto* entry = registry().find(LOOM_KIND_BACKEND, "cpu");
    if (entry == nullptr) throw std::runtime_error("backend/cpu not found in " LOOM_PLUGIN_DIR);
    ComponentConfig config;
    config.table_name = "backend";
    config.toml = "threads = " + std::to_string(threads) +
                  "\nfused_attention = " + (fused_attention ? "true" : "false") + "\n";
    config.table_origin = "test";
    it = backends.emplace(key, registry().create<loom::Backend>(*entry, config, false)).first;
  }
  return it->second;
}

loom::Backend& cpu_backend(int threads, bool fused_attention) {
  return *cpu_backend_component(threads, fused_attention).get();
}

Component<loom::Backend> borrowed_backend(loom::Backend& backend) {
  return Component<loom::Backend>(std::shared_ptr<loom::Backend>(&backend, [](loom::Backend*) {}), "test",
                                  "backend/test");
}

loom::ModelConfig small_config(loom::GeluKind gelu) {
  loom::ModelConfig c = loom::default_model_config();
  c.vocab_size = 53;
  c.hidden_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 3;
  c.intermediate_size = 37;
  c.hidden_act = gelu;
  c.max_position_embeddings = 16;
  c.type_vocab_size = 2;
  c.num_labels = 3;
  return c;
}

SmallBatch small_batch(const loom::ModelConfig& config) {
  SmallBatch b;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> token(1, config.vocab_size - 1);
  const int32_t lengths[2] = {7, 5};  // row 1 ends in two padding positions
  for (int64_t r = 0; r < b.batch; ++r)
    for (int64_t t = 0; t < b.seq; ++t) {
      const bool real = t < lengths[r];
      b.ids.push_back(real ? token(rng) : 0);
      b.types.push_back(real && t >= 3 ? 1 : 0);
      b.mask.push_back(real ? 1 : 0);
      b.mlm_labels.push_back(-100);
    }
  for (int64_t flat : {1, 4, 6, 9}) b.mlm_labels[static_cast<size_t>(flat)] = token(rng);
  b.nsp = {0, 1};
  b.labels = {2, 0};
  b.targets = {1.75f, -0.5f};
  b.start = {1, 2};
  b.end = {3, 4};
  return b;
}

loom::host::HostBatch SmallBatch::view() const {
  loom::host::HostBatch v;
  v.batch = batch;
  v.seq = seq;
  v.input_ids = ids.data();
  v.token_type_ids = types.data();
  v.attention_mask = mask.data();
  v.mlm_labels = mlm_labels.data();
  v.next_sentence_labels = nsp.data();
  if (regression)
    v.targets = targets.data();
  else
    v.labels = labels.data();
  v.start_positions = start.data();
  v.end_positions = end.data();
  return v;
}

BlockHarness::BlockHarness(const std::string& component, const loom::ModelConfig& config, loom::DType compute,
                           const SmallBatch& batch, bool fused_attention, bool named_interfaces,
                           bool flat_parameters, loom_query_interface_fn interfaces,
                           const BlockPlacement& placement)
    : config_(config), placement_(placement), compute_(compute), backend_(cpu_backend(1, fused_attention)) {
  const auto* entry = registry().find(LOOM_KIND_BLOCK, component);
  if (entry == nullptr) throw std::runtime_error("block/" + component + " not found");
  ComponentConfig options;
  options.table_name = "model";
  block_ = registry().create<loom::Block>(*entry, options, false);
  loom_query_interface_fn queried = interfaces;
  if (queried == nullptr && named_interfaces)
    queried = cpu_backend_component(1, fused_attention).interfaces();
  const loom::BlockSetup setup{&config_,
                               &backend_,
                               compute,
                               placement_.index,
                               nullptr,
                               queried,
                               placement_.config_json.empty() ? nullptr : placement_.config_json.c_str(),
                               placement_.config_source.empty() ? nullptr : placement_.config_source.c_str()};
  block().setup(setup);
  std::vector<size_t> offsets;  // in the flat buffers
  size_t total = 0;
  for (size_t i = 0; i < block().parameter_count(); ++i) {
    specs_.push_back(block().parameter(i));
    offsets.push_back(total);
    total = (total + count(i) + 15) / 16 * 16;
  }
  const size_t unit = loom::dtype_size(compute);  // bytes of a working-copy element
  if (flat_parameters) {
    for (size_t i = 0; i < specs_.size(); ++i)
      gaps_.emplace_back(offsets[i] + count(i), i + 1 < offsets.size() ? offsets[i + 1] : total);
    master_.emplace_back(backend_, total * 4);
    grad_.emplace_back(backend_, total * 4);
    working_.emplace_back(backend_, total * unit);
  }
  for (size_t i = 0; i < specs_.size(); ++i) {
    const loom::ParameterSpec& s = specs_[i];
    const size_t n = count(i);
    if (!flat_parameters) {
      master_.emplace_back(backend_, n * 4);
      grad_.emplace_back(backend_, n * 4);
      working_.emplace_back(backend_, n * unit);
    }
    const size_t at = flat_parameters ? offsets[i] : 0;
    const size_t buffer = flat_parameters ? 0 : i;
    loom::ParameterView v;
    v.master = loom::Tensor::contiguous(static_cast<float*>(master_[buffer].data()) + at, loom::DType::f32,
                                        s.shape, s.ndim);
    v.grad = loom::Tensor::contiguous(static_cast<float*>(grad_[buffer].data()) + at, loom::DType::f32,
                                      s.shape, s.ndim);
    v.compute = compute != loom::DType::f32
                    ? loom::Tensor::contiguous(static_cast<char*>(working_[buffer].data()) + at * unit,
                                               compute, s.shape, s.ndim)
                    : v.master;
    views_.push_back(v);
  }
  block().bind_parameters(views_.data(), views_.size());

  int64_t masked = 0;
  for (int32_t label : batch.mlm_labels) masked += label >= 0 ? 1 : 0;
  const loom::ActivationShape shape{batch.batch, batch.seq, masked};
  shape_ = shape;
  staging_ = std::make_unique<loom::host::BatchStaging>(backend_, shape);
  batch_view_ = &staging_->upload(batch.view());
  const size_t hidden = static_cast<size_t>(batch.batch * batch.seq * config.hidden_size);
  input_ = loom::Buffer(backend_, hidden * 4);
  d_input_ = loom::Buffer(backend_, hidden * 4);
  output_ = loom::Buffer(backend_, hidden * 4);
  d_output_ = loom::Buffer(backend_, hidden * 4);
  const loom::ActivationBytes bytes = block().activation_bytes(shape);
  saved_ = loom::Buffer(backend_, bytes.saved);
  scratch_ = loom::Buffer(backend_, bytes.scratch);
  std::memset(input_.data(), 0, hidden * 4);
}

size_t BlockHarness::count(size_t i) const {
  size_t n = 1;
  for (int k = 0; k < specs_[i].ndim; ++k) n *= static_cast<size_t>(specs_[i].shape[k]);
  return n;
}

void BlockHarness::randomize(uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < specs_.size(); ++i) {
    float* v = values(i);
    for (size_t e = 0; e < count(i); ++e) {
      switch (specs_[i].init) {
        case loom::ParameterInit::normal:
          v[e] = scale * normal(rng);
          break;
        case loom::ParameterInit::ones:
          v[e] = 1.0f + 0.1f * normal(rng);
          break;
        case loom::ParameterInit::zeros:
          v[e] = 0.1f * normal(rng);
          break;
      }
    }
  }
  for (int64_t e = 0; e < input_count(); ++e) input()[e] = normal(rng);
  weights_.resize(static_cast<size_t>(input_count()));
  for (float& w : weights_) w = normal(rng);
}

void BlockHarness::sync_compute() {
  if (compute_ == loom::DType::f32) return;
  for (size_t i = 0; i < specs_.size(); ++i) {
    const loom::Tensor m =
        loom::Tensor::contiguous(views_[i].master.data, loom::DType::f32, {static_cast<int64_t>(count(i))});
    const loom::Tensor w =
        loom::Tensor::contiguous(views_[i].compute.data, compute_, {static_cast<int64_t>(count(i))});
    backend_.cast(m, w);
  }
}

double BlockHarness::objective(bool training) {
  sync_compute();
  const loom::BatchView& batch = *batch_view_;
  loom::StepArgs args{&batch,           saved_.data(),    saved_.bytes(), scratch_.data(),
                      scratch_.bytes(), training ? 1 : 0, 12345,          1.0f};
  const loom::Tensor hidden = loom::Tensor::contiguous(input_.data(), loom::DType::f32,
                                                       {batch.batch, batch.seq, config_.hidden_size});
  const loom::Tensor out = loom::Tensor::contiguous(output_.data(), loom::DType::f32,
                                                    {batch.batch, batch.seq, config_.hidden_size});
  const loom::Tensor loss = loom::Tensor::contiguous(output_.data(), loom::DType::f32, {1});
  const loom::BlockRole role = block().role();
  const bool input_copy = input_copy_.data() != nullptr, output_copy = output_copy_.data() != nullptr;
  if (auto* copies = block_.find<loom::HiddenCopy>(); copies != nullptr && (input_copy || output_copy)) {
    if (input_copy && !replaced_input_copy_) backend_.cast(hidden, hidden_view(input_copy_, compute_));
    copies->set_hidden_copies(input_copy ? hidden_view(input_copy_, compute_) : loom::Tensor{},
                              output_copy ? hidden_view(output_copy_, compute_) : loom::Tensor{});
  }
  block().forward(args, role == loom::BlockRole::embeddings ? loom::Tensor{} : hidden,
                  role == loom::BlockRole::head ? loss : out);
  const float* y = static_cast<const float*>(output_.data());
  if (role == loom::BlockRole::head) return y[0];
  double sum = 0.0;
  for (size_t e = 0; e < weights_.size(); ++e) sum += static_cast<double>(y[e]) * weights_[e];
  return sum;
}

double BlockHarness::gradients(bool training) {
  for (auto& g : grad_) std::memset(g.data(), 0, g.bytes());
  for (const auto& [begin, end] : gaps_)
    std::fill(static_cast<float*>(grad_[0].data()) + begin, static_cast<float*>(grad_[0].data()) + end,
              kGapSentinel);
  const double value = objective(training);
  const loom::BatchView& batch = *batch_view_;
  loom::StepArgs args{&batch,           saved_.data(),    saved_.bytes(), scratch_.data(),
                      scratch_.bytes(), training ? 1 : 0, 12345,          1.0f};
  const loom::Tensor d_out = loom::Tensor::contiguous(d_output_.data(), loom::DType::f32,
                                                      {batch.batch, batch.seq, config_.hidden_size});
  const loom::Tensor d_in = loom::Tensor::contiguous(d_input_.data(), loom::DType::f32,
                                                     {batch.batch, batch.seq, config_.hidden_size});
  std::memcpy(d_output_.data(), weights_.data(), weights_.size() * 4);
  const loom::BlockRole role = block().role();
  block().backward(args, role == loom::BlockRole::head ? loom::Tensor{} : d_out,
                   role == loom::BlockRole::embeddings ? loom::Tensor{} : d_in);
  return value;
}

std::vector<float> BlockHarness::gradient_gap(size_t i) const {
  if (i >= gaps_.size()) throw std::runtime_error("gradient_gap: parameters are not flat");
  const float* g = static_cast<const float*>(grad_[0].data());
  return std::vector<float>(g + gaps_[i].first, g + gaps_[i].second);
}

std::vector<float> BlockHarness::output() const {
  const float* y = static_cast<const float*>(output_.data());
  return std::vector<float>(y, y + input_count());
}

loom::Tensor BlockHarness::hidden_view(const loom::Buffer& buffer, loom::DType dtype) const {
  return loom::Tensor::contiguous(buffer.data(), dtype,
                                  {batch_view_->batch, batch_view_->seq, config_.hidden_size});
}

void BlockHarness::use_hidden_copies(bool input, bool output) {
  auto* copies = block_.find<loom::HiddenCopy>();
  if (copies == nullptr) throw std::runtime_error("the block does not offer HiddenCopy");
  copies->use_hidden_copies(input, output);
  const size_t bytes = static_cast<size_t>(input_count()) * loom::dtype_size(compute_);
  input_copy_ = input ? loom::Buffer(backend_, bytes) : loom::Buffer();
  output_copy_ = output ? loom::Buffer(backend_, bytes) : loom::Buffer();
  saved_ = loom::Buffer(backend_, block().activation_bytes(shape_).saved);
}

void BlockHarness::replace_input_copy(float value) {
  backend_.fill(hidden_view(input_copy_, compute_), value);
  replaced_input_copy_ = true;
}

std::vector<float> BlockHarness::output_copy() const {
  std::vector<float> widened(static_cast<size_t>(input_count()));
  loom::Buffer f32(backend_, widened.size() * 4);
  backend_.cast(hidden_view(output_copy_, compute_), hidden_view(f32, loom::DType::f32));
  std::memcpy(widened.data(), f32.data(), widened.size() * 4);
  return widened;
}

double max_relative_difference(const float* a, const float* b, size_t n) {
  double worst = 0, scale = 1e-30;
  for (size_t e = 0; e < n; ++e) scale = std::max(scale, std::fabs(static_cast<double>(b[e])));
  for (size_t e = 0; e < n; ++e) worst = std::max(worst, std::fabs(static_cast<double>(a[e]) - b[e]) / scale);
  return worst;
}

void expect_same_results(const BlockHarness& a, const BlockHarness& b, double bound) {
  const std::vector<float> ya = a.output(), yb = b.output();
  EXPECT_LT(max_relative_difference(ya.data(), yb.data(), ya.size()), bound) << "output";
  for (size_t i = 0; i < a.parameter_count(); ++i) {
    if (std::string(a.spec(i).name).find("key.bias") != std::string::npos) continue;
    EXPECT_LT(max_relative_difference(a.gradient(i), b.gradient(i), a.count(i)), bound) << a.spec(i).name;
  }
  EXPECT_LT(max_relative_difference(a.input_gradient(), b.input_gradient(), a.input_count()), bound)
      << "input gradient";
}

}  // namespace loom_bert_test
