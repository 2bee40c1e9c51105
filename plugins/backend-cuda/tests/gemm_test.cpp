// gemm through cuBLASLt against backend/cpu: transposes, dtypes, beta, batches (merged, looped
// and broadcast), per-head views into a fused QKV buffer, and a weight gradient accumulated over
// K = 32,768 products (a batch of 256 × 128 tokens).
#include <utility>

#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

class GemmTest : public CudaOpTest {
 protected:
  /// Runs c = alpha·op(a)·op(b) + beta·c on both backends from the same data and compares.
  void compare(HostTensor a, bool ta, HostTensor b, bool tb, HostTensor c, float alpha, float beta,
               const std::function<loom::Tensor(const loom::Tensor&)>& a_view,
               const std::function<loom::Tensor(const loom::Tensor&)>& b_view,
               const std::function<loom::Tensor(const loom::Tensor&)>& c_view, double rtol, double atol,
               const std::string& what) {
    DeviceTensor a_gpu = upload(a), b_gpu = upload(b), c_gpu = upload(c);
    cpu.gemm(a_view(a.view()), ta, b_view(b.view()), tb, c_view(c.view()), alpha, beta);
    gpu->gemm(a_view(a_gpu.view()), ta, b_view(b_gpu.view()), tb, c_view(c_gpu.view()), alpha, beta);
    expect_close(c_gpu.download(*gpu).floats(), c.floats(), rtol, atol, what);
  }
  static loom::Tensor whole(const loom::Tensor& t) { return t; }
};

TEST_F(GemmTest, AllTransposesAndDtypes) {
  const int64_t M = 37, K = 771, N = 131;
  struct Case {
    DType in, out;
    double rtol, atol;
  };
  for (const Case& cs : {Case{DType::f32, DType::f32, 1e-4, 1e-4}, Case{DType::bf16, DType::f32, 1e-3, 1e-3},
                         Case{DType::bf16, DType::bf16, 1e-2, 1e-2}, Case{DType::f16, DType::f32, 1e-3, 1e-3},
                         Case{DType::f16, DType::f16, 2e-3, 2e-3}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 0.75f}) {
          HostTensor a = HostTensor::of(random_floats(M * K, 1), cs.in,
                                        ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K});
          HostTensor b = HostTensor::of(random_floats(K * N, 2), cs.in,
                                        tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N});
          HostTensor c = HostTensor::of(random_floats(M * N, 3), cs.out, {M, N});
          compare(a, ta, b, tb, c, 0.5f, beta, whole, whole, whole, cs.rtol, cs.atol * std::sqrt(double(K)),
                  std::string(loom::dtype_name(cs.in)) + "→" + loom::dtype_name(cs.out) + (ta ? " aᵀ" : "") +
                      (tb ? " bᵀ" : "") + " beta " + std::to_string(beta));
        }
}

TEST_F(GemmTest, PerHeadViewsIntoFusedQkvBuffer) {
  // qkv: [B, T, 3, H, d]; per-head q and k views [B, H, T, d] with row stride 3·H·d; scores = q·kᵀ.
  const int64_t B = 2, T = 37, H = 3, d = 16;
  HostTensor qkv = HostTensor::of(random_floats(B * T * 3 * H * d, 4), DType::f32, {B, T, 3, H, d});
  const auto head = [&](int which) {
    return [=](const loom::Tensor& t) {
      loom::Tensor v = t.select(2, which);  // [B, T, H, d]
      return v.permute({0, 2, 1, 3});       // [B, H, T, d]
    };
  };
  HostTensor scores = HostTensor::zeros(DType::f32, {B, H, T, T});
  // a and b are views of one buffer: upload it once per side through compare (two copies).
  compare(qkv, false, qkv, true, scores, 0.25f, 0.0f, head(0), head(1), whole, 1e-5, 1e-5, "q·kᵀ per head");
}

TEST_F(GemmTest, BatchBroadcastAndLoopedOuterBatch) {
  const int64_t B = 3, H = 2, M = 5, K = 37, N = 7;
  // Broadcast b over both batch dims (strides 0).
  HostTensor a = HostTensor::of(random_floats(B * H * M * K, 5), DType::f32, {B, H, M, K});
  HostTensor w = HostTensor::of(random_floats(K * N, 6), DType::f32, {1, 1, K, N});
  HostTensor c = HostTensor::of(random_floats(B * H * M * N, 7), DType::f32, {B, H, M, N});
  const auto broadcast = [&](const loom::Tensor& t) {
    loom::Tensor v = t;
    v.shape[0] = B;
    v.shape[1] = H;
    v.strides[0] = 0;
    v.strides[1] = 0;
    return v;
  };
  compare(a, false, w, false, c, 1.0f, 1.0f, whole, broadcast, whole, 1e-5, 1e-5, "broadcast b");
  // Non-mergeable batch dims: a's batch dims permuted ([H, B] storage seen as [B, H]).
  HostTensor at = HostTensor::of(random_floats(B * H * M * K, 8), DType::f32, {H, B, M, K});
  HostTensor b = HostTensor::of(random_floats(B * H * K * N, 9), DType::f32, {B, H, K, N});
  const auto swap01 = [](const loom::Tensor& t) { return t.permute({1, 0, 2, 3}); };
  compare(at, false, b, false, c, 1.0f, 0.0f, swap01, whole, whole, 1e-5, 1e-5, "looped outer batch");
}

TEST_F(GemmTest, LinearLayerAndWeightGradientAccumulate) {
  const int64_t rows = 131, in = 64, out = 37;
  HostTensor x = HostTensor::of(random_floats(rows * in, 10), DType::f32, {rows, in});
  HostTensor w = HostTensor::of(random_floats(out * in, 11), DType::f32, {out, in});
  HostTensor y = HostTensor::zeros(DType::f32, {rows, out});
  compare(x, false, w, true, y, 1.0f, 0.0f, whole, whole, whole, 1e-5, 1e-5, "y = x·Wᵀ");
  HostTensor dy = HostTensor::of(random_floats(rows * out, 12), DType::f32, {rows, out});
  HostTensor dw = HostTensor::of(random_floats(out * in, 13), DType::f32, {out, in});
  compare(dy, true, x, false, dw, 1.0f, 1.0f, whole, whole, whole, 1e-5, 1e-4, "dW += dyᵀ·x");
}

TEST_F(GemmTest, WeightGradientAccumulatesOverK32768) {
  // The weight gradient of BERT-base's FFN output layer (3,072 → 768) over 256 × 128 tokens:
  // dW[768, 3072] += dyᵀ·x, dy [32768, 768], x [32768, 3072]: 32,768 products per output.
  //
  // Tolerances are absolute: the rounding follows the partial sums, not the result. With inputs
  // uniform in [−1, 1] a product has σ_t = 1/3 and an output σ_out = σ_t·√K ≈ 60. An f32 sum rounded
  // term by term (unit roundoff u = 2^-24) is a random walk of roundings proportional to the
  // growing partial sums: error ≈ 0.3·u·σ_out·√K ≈ 2e-4, the worst of 2.4 M outputs ~5 times that
  // (backend/cpu's oneDNN, summing in blocks, is within 1.2e-4 of f64 on 3,000 sampled outputs).
  // - f32 (no TF32): atol = 8·u·σ_out·√K ≈ 5.2e-3. TF32 (10-bit mantissas) would be off by
  //   ~0.024 rms and fail.
  // - bf16 operands, f32 c: the products are exact in f32, but tensor cores add each block of
  //   products to the accumulator rounding toward zero, a bias that does not cancel: ≈ 0.75·u of
  //   the partial sum per block of 8 products, σ ≈ 0.75·u·σ_t·K^1.5 / (8·√3) ≈ 6e-3 over the whole
  //   sum, the worst output ~0.035: atol 0.1 (σ_out / 600). A result rounded to bf16 (errors up to
  //   0.12 at σ_out) or 16 of the K products left out (σ ≈ 1.3) fails it.
  const int64_t K = 32768, M = 768, N = 3072;
  const double u = std::ldexp(1.0, -24), sigma_out = std::sqrt(K / 9.0);
  const std::vector<float> dy_values = random_floats(K * M, 21), x_values = random_floats(K * N, 22),
                           dw_values = random_floats(M * N, 23);
  for (auto [in, atol] :
       {std::pair{DType::f32, 8 * u * sigma_out * std::sqrt(double(K))}, std::pair{DType::bf16, 0.1}}) {
    HostTensor dy = HostTensor::of(dy_values, in, {K, M});
    HostTensor x = HostTensor::of(x_values, in, {K, N});
    HostTensor dw = HostTensor::of(dw_values, DType::f32, {M, N});
    compare(std::move(dy), true, std::move(x), false, std::move(dw), 1.0f, 1.0f, whole, whole, whole, 0, atol,
            std::string("dW += dyᵀ·x, K = 32768, ") + loom::dtype_name(in) + " operands");
  }
}

TEST_F(GemmTest, EmptyInnerDimensionScalesC) {
  HostTensor a = HostTensor::zeros(DType::f32, {4, 0});
  HostTensor b = HostTensor::zeros(DType::f32, {0, 5});
  HostTensor c = HostTensor::of(random_floats(20, 14), DType::f32, {4, 5});
  DeviceTensor c_gpu = upload(c);
  loom::Tensor a_gpu = a.view(), b_gpu = b.view();
  a_gpu.device = b_gpu.device = gpu->device();
  a_gpu.strides[0] = 1;  // a [4, 0] with a valid (≥ 1) row stride
  gpu->gemm(a_gpu, false, b_gpu, false, c_gpu.view(), 1.0f, 0.5f);
  std::vector<float> expected = c.floats();
  for (float& v : expected) v *= 0.5f;
  expect_close(c_gpu.download(*gpu).floats(), expected, 0, 0, "K = 0, beta = 0.5");
  gpu->gemm(a_gpu, false, b_gpu, false, c_gpu.view(), 1.0f, 0.0f);
  expect_close(c_gpu.download(*gpu).floats(), std::vector<float>(20, 0.0f), 0, 0, "K = 0, beta = 0");
}

TEST_F(GemmTest, Tf32OptionStaysClose) {
  loom_cuda::CudaBackend tf32(0, true);
  const int64_t M = 64, K = 256, N = 64;
  HostTensor a = HostTensor::of(random_floats(M * K, 15), DType::f32, {M, K});
  HostTensor b = HostTensor::of(random_floats(K * N, 16), DType::f32, {K, N});
  HostTensor c = HostTensor::zeros(DType::f32, {M, N});
  DeviceTensor a_gpu(tf32, a), b_gpu(tf32, b), c_gpu(tf32, c);
  cpu.gemm(a.view(), false, b.view(), false, c.view(), 1.0f, 0.0f);
  tf32.gemm(a_gpu.view(), false, b_gpu.view(), false, c_gpu.view(), 1.0f, 0.0f);
  expect_close(c_gpu.download(tf32).floats(), c.floats(), 5e-3, 5e-2, "tf32");
}

TEST_F(GemmTest, RejectsMismatchedShapes) {
  DeviceTensor a = upload(HostTensor::zeros(DType::f32, {4, 5}));
  DeviceTensor b = upload(HostTensor::zeros(DType::f32, {6, 7}));
  DeviceTensor c = upload(HostTensor::zeros(DType::f32, {4, 7}));
  EXPECT_THROW(gpu->gemm(a.view(), false, b.view(), false, c.view(), 1.0f, 0.0f), loom::Error);
}

}  // namespace
}  // namespace loom_cuda_test
