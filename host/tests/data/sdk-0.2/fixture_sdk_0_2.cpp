// Frozen source of libloom-fixture-sdk-0.2.so, the committed binary built against Loom SDK 0.2.0
// (plugin ABI 0.2) by build-fixture.sh: a backend of interface version 2 (SDK 0.2's Backend2, the
// fused-attention interface that named interfaces replaced in SDK 0.3). The binary, not this
// file, is the fixture: it must keep loading and serving the version-1 op set in every later host
// (plugin_compatibility_test.cpp). Never rebuild it with a newer SDK; add a new fixture instead.
//
// Host memory; allocate, copies and fill work, every other op throws naming itself.
#include <cstdlib>
#include <cstring>
#include <string>

#include "loom/sdk/backend2.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/plugin.hpp"

namespace {

using loom::Gelu;
using loom::Tensor;

[[noreturn]] void unsupported(const char* op) {
  throw loom::Error(std::string(op) + " is not implemented by the SDK 0.2 fixture backend");
}

class FrozenBackend final : public loom::Backend2 {
 public:
  explicit FrozenBackend(loom::ComponentContext& context)
      : label_(context.options().get<std::string>("label", "plain")) {}
  loom::Device device() const override { return loom::Device{}; }
  int threads() const override { return 1; }
  void* allocate(size_t bytes) override {
    return bytes == 0 ? nullptr
                      : std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  }
  void deallocate(void* data) override { std::free(data); }
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) override {
    std::memcpy(device_dst, host_src, bytes);
  }
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) override {
    std::memcpy(host_dst, device_src, bytes);
  }
  void synchronize() override {}
  void fill(const loom::Tensor& x, double value) override {
    if (x.dtype != loom::DType::f32) unsupported("fill of a non-f32 tensor");
    float* data = static_cast<float*>(x.data);
    for (int64_t i = 0; i < x.numel(); ++i) data[i] = static_cast<float>(value);
  }
  loom::DeviceInfo device_info() const override {
    loom::DeviceInfo info{};
    std::strncpy(info.name, ("SDK 0.2 fixture " + label_).c_str(), sizeof info.name - 1);
    info.multiprocessors = 1;
    return info;
  }
  bool fused_attention(int64_t, int64_t) const override { return false; }
  void zero(const Tensor& /*x*/) override { unsupported("zero"); }
  void copy(const Tensor& /*src*/, const Tensor& /*dst*/) override { unsupported("copy"); }
  void cast(const Tensor& /*src*/, const Tensor& /*dst*/) override { unsupported("cast"); }
  void gemm(const Tensor& /*a*/, bool /*transpose_a*/, const Tensor& /*b*/, bool /*transpose_b*/,
            const Tensor& /*c*/, float /*alpha*/, float /*beta*/) override {
    unsupported("gemm");
  }
  void bias_add(const Tensor& /*x*/, const Tensor& /*bias*/) override { unsupported("bias_add"); }
  void bias_grad(const Tensor& /*dy*/, const Tensor& /*dbias*/) override { unsupported("bias_grad"); }
  void bias_gelu_forward(const Tensor& /*x*/, const Tensor& /*bias*/, const Tensor& /*y*/,
                         Gelu /*variant*/) override {
    unsupported("bias_gelu_forward");
  }
  void bias_gelu_backward(const Tensor& /*dy*/, const Tensor& /*x*/, const Tensor& /*bias*/,
                          const Tensor& /*dx*/, const Tensor& /*dbias*/, Gelu /*variant*/) override {
    unsupported("bias_gelu_backward");
  }
  void tanh_forward(const Tensor& /*x*/, const Tensor& /*y*/) override { unsupported("tanh_forward"); }
  void tanh_backward(const Tensor& /*dy*/, const Tensor& /*y*/, const Tensor& /*dx*/) override {
    unsupported("tanh_backward");
  }
  void add(const Tensor& /*a*/, const Tensor& /*b*/, const Tensor& /*out*/) override { unsupported("add"); }
  void axpby(float /*alpha*/, const Tensor& /*x*/, float /*beta*/, const Tensor& /*y*/) override {
    unsupported("axpby");
  }
  void layernorm_forward(const Tensor& /*x*/, const Tensor& /*gamma*/, const Tensor& /*beta*/, float /*eps*/,
                         const Tensor& /*y*/, const Tensor& /*mean*/, const Tensor& /*rstd*/) override {
    unsupported("layernorm_forward");
  }
  void layernorm_backward(const Tensor& /*dy*/, const Tensor& /*x*/, const Tensor& /*gamma*/,
                          const Tensor& /*mean*/, const Tensor& /*rstd*/, const Tensor& /*dx*/,
                          const Tensor& /*dgamma*/, const Tensor& /*dbeta*/,
                          bool /*accumulate_dx*/) override {
    unsupported("layernorm_backward");
  }
  void additive_key_mask(const Tensor& /*attention_mask*/, const Tensor& /*out*/) override {
    unsupported("additive_key_mask");
  }
  void softmax_forward(const Tensor& /*scores*/, const Tensor& /*key_mask*/, float /*scale*/,
                       const Tensor& /*probs*/) override {
    unsupported("softmax_forward");
  }
  void softmax_backward(const Tensor& /*dprobs*/, const Tensor& /*probs*/, float /*scale*/,
                        const Tensor& /*dscores*/) override {
    unsupported("softmax_backward");
  }
  void dropout_forward(const Tensor& /*x*/, const Tensor& /*y*/, float /*p*/, uint64_t /*seed*/,
                       uint64_t /*offset*/) override {
    unsupported("dropout_forward");
  }
  void dropout_backward(const Tensor& /*dy*/, const Tensor& /*dx*/, float /*p*/, uint64_t /*seed*/,
                        uint64_t /*offset*/) override {
    unsupported("dropout_backward");
  }
  void embedding_gather(const Tensor& /*table*/, const Tensor& /*ids*/, const Tensor& /*out*/,
                        bool /*accumulate*/) override {
    unsupported("embedding_gather");
  }
  void embedding_scatter_add(const Tensor& /*dout*/, const Tensor& /*ids*/,
                             const Tensor& /*dtable*/) override {
    unsupported("embedding_scatter_add");
  }
  void cross_entropy(const Tensor& /*logits*/, const Tensor& /*targets*/, int64_t /*num_classes*/,
                     int64_t /*ignore_index*/, float /*grad_scale*/, const Tensor& /*mean_loss*/,
                     const Tensor& /*dlogits*/, const Tensor& /*row_loss*/,
                     const Tensor& /*row_correct*/) override {
    unsupported("cross_entropy");
  }
  void sum_squares(const Tensor& /*x*/, const int64_t* /*segment_offsets*/, size_t /*num_segments*/,
                   const Tensor& /*out*/) override {
    unsupported("sum_squares");
  }
  void global_norm(const Tensor& /*x*/, const Tensor& /*out*/) override { unsupported("global_norm"); }
  void check_finite(const Tensor& /*x*/, const Tensor& /*flag*/) override { unsupported("check_finite"); }
  void attention_forward(const Tensor& /*q*/, const Tensor& /*k*/, const Tensor& /*v*/,
                         const Tensor& /*key_mask*/, float /*scale*/, float /*p*/, uint64_t /*seed*/,
                         uint64_t /*offset*/, const Tensor& /*ctx*/, const Tensor& /*lse*/) override {
    unsupported("attention_forward");
  }
  void attention_backward(const Tensor& /*d_ctx*/, const Tensor& /*q*/, const Tensor& /*k*/,
                          const Tensor& /*v*/, const Tensor& /*ctx*/, const Tensor& /*lse*/,
                          const Tensor& /*key_mask*/, float /*scale*/, float /*p*/, uint64_t /*seed*/,
                          uint64_t /*offset*/, const Tensor& /*dq*/, const Tensor& /*dk*/,
                          const Tensor& /*dv*/, const Tensor& /*delta*/) override {
    unsupported("attention_backward");
  }

 private:
  std::string label_;
};

}  // namespace

LOOM_PLUGIN("fixture-sdk-0.2", "0.2.0", "committed binary built against Loom SDK 0.2.0",
            loom::component<loom::Backend2, FrozenBackend>("sdk-0.2", "0.2.0", "frozen SDK 0.2 backend"))
