// rotary_apply (RotaryEmbedding, loom/sdk/ops/rotary_embedding.hpp): each [B, H, T, d] head row of
// x rotated in pairs (i, i + d/2) by the angle of its position t, into y or in place.
//
// The factors are backend/cpu's bits: cos and sin of every (position, pair) come from
// loom_backend::rotary_factors (the angle t·theta^(−2i/d) in double, rounded to f32), computed on
// the host once per (theta, d) and kept on the device (CudaBackend::rotary_factors), since device
// double cos/sin need not round to the same f32 as the host's libm. Every layer then reads the
// same table, [rows][cos of the d/2 pairs | their sines].
//
// One thread per quad of pairs (pairs 4p .. 4p + 3 with their partners d/2 + 4p ..), moved with
// one access per quad of x, y and each factor row (8 bytes for 16-bit storage, 16 for f32) when
// d/2 % 4 == 0 and every row starts aligned, else one thread per pair. A thread reads both halves
// of its pairs before writing them, so y may be x. Each output is two f32 products, each rounded,
// then their rounded sum or difference (no FMA: __fmul_rn, __fadd_rn), rounded once to the
// storage type; the inverse rotation negates the sine. packed_rotary_apply is the same kernel reading
// each row's position from a tensor (checked on the device, index_checks.cuh: a row whose position
// is outside the table is left alone and the error reported at the next wait).
//
// Threads of the kernel do not cooperate (no shared memory, no shuffles): each owns its pairs.
#include "attention_problem.cuh"
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "float_storage.cuh"
#include "index_checks.cuh"
#include "loom_backend/packed_attention_contract.hpp"
#include "loom_backend/rotary_embedding_contract.hpp"
#include "op_preamble.cuh"
#include "row_quads.cuh"

namespace loom_cuda {
namespace {

constexpr int kThreads = 256;
/// Factor tables kept at once (a model uses one or two thetas, local and global layers).
constexpr size_t kMaxRotaryTables = 8;

/// Pair (lo, hi) rotated by (c, s): (lo·c − hi·s, hi·c + lo·s), each product rounded, then the sum.
__device__ __forceinline__ void rotate(float& lo, float& hi, float c, float s) {
  const float new_lo = __fsub_rn(__fmul_rn(lo, c), __fmul_rn(hi, s));
  const float new_hi = __fadd_rn(__fmul_rn(hi, c), __fmul_rn(lo, s));
  lo = new_lo;
  hi = new_hi;
}

/// Item e of B·H·T rows × `per_row` items: the row's (b, h, t) and the item's index in the row.
struct RowItem {
  int64_t b, h, t, index;
};
__device__ __forceinline__ RowItem row_item(int64_t e, int64_t per_row, int64_t heads, int64_t seq) {
  const int64_t row = e / per_row, bh = row / seq;
  return RowItem{bh / heads, bh % heads, row % seq, e - row * per_row};
}

/// kVector: quads of pairs (half % 4 == 0, every row of x and y and the table quad-aligned); else
/// one pair per item.
template <typename S, bool kVector>
__global__ void rotary_kernel(HeadView<const S> x, HeadView<S> y, const float* factors, const int32_t* positions,
                              int64_t table_rows, int64_t heads, int64_t seq, int64_t half, int64_t items,
                              float sine_sign) {
  const int64_t per_row = kVector ? half / 4 : half;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < items;
       e += int64_t{gridDim.x} * blockDim.x) {
    const RowItem item = row_item(e, per_row, heads, seq);
    const S* in = x.row(item.b, item.h, item.t);
    S* out = y.row(item.b, item.h, item.t);
    const int64_t position = positions != nullptr ? positions[item.t] : item.t;
    if (position < 0 || position >= table_rows) continue;  // reported by the position check
    const float* cosines = factors + position * 2 * half;
    const float* sines = cosines + half;
    if constexpr (kVector) {
      float lo[4], hi[4], c[4], s[4];
      load_quad(in, item.index, half, true, lo);
      load_quad(in + half, item.index, half, true, hi);
      load_quad(cosines, item.index, half, true, c);
      load_quad(sines, item.index, half, true, s);
#pragma unroll
      for (int j = 0; j < 4; ++j) rotate(lo[j], hi[j], c[j], sine_sign * s[j]);
      store_quad(out, item.index, half, true, lo);
      store_quad(out + half, item.index, half, true, hi);
    } else {
      const int64_t i = item.index;
      float lo = load(in, i), hi = load(in, i + half);
      rotate(lo, hi, cosines[i], sine_sign * sines[i]);
      store(out, i, lo);
      store(out, i + half, hi);
    }
  }
}

/// Every row of the [B, H, T, d] view t starts quad-aligned (base and outer strides).
template <typename S>
bool rows_quad_aligned(const loom::Tensor& t) {
  return is_quad_aligned<S>(t.data) && t.strides[0] % 4 == 0 && t.strides[1] % 4 == 0 &&
         t.strides[2] % 4 == 0;
}

}  // namespace

const float* CudaBackend::rotary_factors(double theta, int64_t head_dim, int64_t seq) {
  size_t found = rotary_tables_.size();
  for (size_t k = 0; k < rotary_tables_.size(); ++k)
    if (rotary_tables_[k].theta == theta && rotary_tables_[k].head_dim == head_dim) found = k;
  if (found < rotary_tables_.size() && rotary_tables_[found].rows >= seq) return rotary_tables_[found].data;
  if (found == rotary_tables_.size()) {
    if (rotary_tables_.size() == kMaxRotaryTables) {  // the oldest goes (queued kernels may still read it:
      allocator_.deallocate(rotary_tables_.front().data);  // the allocator hands it out to later work only)
      rotary_tables_.erase(rotary_tables_.begin());
      --found;
    }
    rotary_tables_.push_back(RotaryTable{theta, head_dim, 0, nullptr});
  }
  RotaryTable& table = rotary_tables_[found];
  const int64_t half = head_dim / 2;
  const size_t bytes = static_cast<size_t>(seq * head_dim) * sizeof(float);
  auto* staged = static_cast<float*>(staging(bytes));
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const loom_backend::RotaryFactors f = loom_backend::rotary_factors(t, i, head_dim, theta);
      staged[t * head_dim + i] = f.cos;
      staged[t * head_dim + half + i] = f.sin;
    }
  auto* device = static_cast<float*>(allocator_.allocate(bytes));
  cuda_check(cudaMemcpyAsync(device, staged, bytes, cudaMemcpyHostToDevice, stream_), "rotary_apply");
  staging_enqueued();
  if (table.data != nullptr) allocator_.deallocate(table.data);
  table.data = device;
  table.rows = seq;
  return device;
}

namespace {

/// Launches the rotary kernel over the [B, H, T, d] views (positions: i32 [T], or null for t).
template <typename S>
void launch_rotary(const loom::Tensor& x, const loom::Tensor& y, const loom_backend::AttentionDims& n,
                   const float* factors, const int32_t* positions, int64_t table_rows, bool inverse,
                   cudaStream_t stream) {
  const int64_t half = n.head_dim / 2, rows = n.batch * n.heads * n.seq;
  const float sine_sign = inverse ? -1.0f : 1.0f;
  const auto in = head_view<const S>(x);
  const auto out = head_view<S>(y);
  if (half % 4 == 0 && rows_quad_aligned<S>(x) && rows_quad_aligned<S>(y)) {
    const int64_t items = rows * (half / 4);
    rotary_kernel<S, true><<<grid_for(items, kThreads), kThreads, 0, stream>>>(
        in, out, factors, positions, table_rows, n.heads, n.seq, half, items, sine_sign);
  } else {
    const int64_t items = rows * half;
    rotary_kernel<S, false><<<grid_for(items, kThreads), kThreads, 0, stream>>>(
        in, out, factors, positions, table_rows, n.heads, n.seq, half, items, sine_sign);
  }
}

}  // namespace

void CudaBackend::rotary_apply(const loom::Tensor& x, const loom::Tensor& y, double theta, bool inverse) {
  run_op(
      "rotary_apply",
      [&](const ArgumentChecks& check) { return loom_backend::check_rotary_apply(check, x, y, theta); },
      {x.dtype},
      [&](const loom_backend::AttentionDims& n, auto storage) {
        using S = decltype(storage);
        launch_rotary<S>(x, y, n, rotary_factors(theta, n.head_dim, n.seq), nullptr, n.seq, inverse, stream_);
      });
}

void CudaBackend::packed_rotary_apply(const loom::Tensor& x, const loom::Tensor& y, const loom::Tensor& positions,
                                      double theta, bool inverse) {
  run_op(
      "packed_rotary_apply",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_packed_rotary_apply(check, x, y, positions, theta);
      },
      {x.dtype},
      [&](const loom_backend::AttentionDims& n, auto storage) {
        using S = decltype(storage);
        // Positions lie in [0, N) (the header): a table of N rows serves every one.
        check_indices_on_device(*this, CheckedOp::packed_rotary_apply, positions, n.seq, false, 0, nullptr);
        launch_rotary<S>(x, y, n, rotary_factors(theta, n.head_dim, n.seq), positions.data_as<int32_t>(), n.seq,
                         inverse, stream_);
      });
}

}  // namespace loom_cuda
