// The Tensor-Core kernels' fragment plumbing (flash_tiles.cuh) on the CPU: tiles staged into the
// swizzled shared-memory layout, fragments loaded with the kernels' ldmatrix helpers and
// multiplied with mma.sync as the PTX ISA defines it (lane_emulator), against plain matrix
// products. A wrong lane-to-row mapping, swizzle or operand order fails here without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "flash_tiles.cuh"
#include "lane_emulator.hpp"

namespace loom_cuda::flash {
namespace {

using loom::BFloat16;
using loom::Half;

template <typename S>
S round_to(float v) {
  if constexpr (std::is_same_v<S, BFloat16>)
    return S{loom::f32_to_bf16_bits(v)};
  else
    return S{loom::f32_to_f16_bits(v)};
}

template <typename S>
float value_of(S v) {
  return lane::widen<S>(v.bits);
}

/// A row-major [rows][kD] matrix of small random 16-bit values (exact products in f32).
template <typename S>
std::vector<S> random_matrix(int rows, int cols, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int> dist(-8, 8);
  std::vector<S> m(static_cast<size_t>(rows) * cols);
  for (auto& x : m) x = round_to<S>(static_cast<float>(dist(engine)) / 4.0f);
  return m;
}

template <typename S, int kD>
void expect_products_of_staged_tiles() {
  constexpr int kRows = 32;  // two 16-row blocks, so the row offsets matter
  std::vector<S> x = random_matrix<S>(kRows, kD, 1), y = random_matrix<S>(kRows, kD, 2);
  // Stage both through stage_tile (rows 0..kRows−1 of a head whose rows are kD apart; rows ≥ 29
  // are past the sequence end and must read as zeros).
  constexpr int64_t kSeq = 29;
  alignas(16) S x_tile[kRows * kD], y_tile[kRows * kD];
  const HeadRows<const S> x_rows{x.data(), 0, 0, kD}, y_rows{y.data(), 0, 0, kD};
  std::vector<float> xy(16 * 16 * 2, 0.0f), xty(16 * kD, 0.0f);  // x·yᵀ (rows 16..31 × cols 0..31), (x·yᵀ)·y
  const auto errors = emulation::run_block(32, [&](int thread) {
    stage_tile<S, kD, kRows, 32>(x_tile, x_rows, 0, 0, 0, kSeq, thread);
    stage_tile<S, kD, kRows, 32>(y_tile, y_rows, 0, 0, 0, kSeq, thread);
    lane::cp_async_commit();
    lane::cp_async_wait<0>();
    lane::block_sync();
    // C = X[16..31, :]·Y[0..31, :]ᵀ: 16 × 32, four n-tiles.
    float c[4][4] = {};
    for (int ks = 0; ks < kD / 16; ++ks) {
      uint32_t a[4];
      load_a<S, kD>(a, x_tile, 16, ks, thread);
      for (int np = 0; np < 2; ++np) {
        uint32_t b[2][2];
        load_b_pair_rows_n<S, kD>(b, y_tile, 16 * np, ks, thread);
        mma<S>(c[2 * np], a, b[0]);
        mma<S>(c[2 * np + 1], a, b[1]);
      }
    }
    for (int nt = 0; nt < 4; ++nt)
      for (int r = 0; r < 4; ++r)
        xy[fragment_row(thread, r) * 32 + 8 * nt + fragment_col(thread, r)] = c[nt][r];
    // E = C·Y[0..31, :] (k = the 32 rows of y): C's accumulators become A fragments.
    float e[kD / 8][4] = {};
    for (int kk = 0; kk < 2; ++kk) {
      uint32_t a[4];
      accumulators_to_a<S>(a, c[2 * kk], c[2 * kk + 1]);
      for (int dp = 0; dp < kD / 16; ++dp) {
        uint32_t b[2][2];
        load_b_pair_rows_k<S, kD>(b, y_tile, 16 * kk, 2 * dp, thread);
        mma<S>(e[2 * dp], a, b[0]);
        mma<S>(e[2 * dp + 1], a, b[1]);
      }
    }
    for (int dt = 0; dt < kD / 8; ++dt)
      for (int r = 0; r < 4; ++r)
        xty[fragment_row(thread, r) * kD + 8 * dt + fragment_col(thread, r)] = e[dt][r];
  });
  ASSERT_TRUE(errors.empty()) << errors.front();

  const auto at = [](const std::vector<S>& m, int row, int col) {
    return row < kSeq ? static_cast<double>(value_of(m[row * kD + col])) : 0.0;
  };
  std::vector<double> expected_xy(16 * 32);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 32; ++j) {
      double sum = 0;
      for (int c = 0; c < kD; ++c) sum += at(x, 16 + i, c) * at(y, j, c);
      expected_xy[i * 32 + j] = sum;
      ASSERT_EQ(xy[i * 32 + j], sum) << "x·yᵀ at (" << i << ", " << j << ")";  // exact: small integers / 16
    }
  for (int i = 0; i < 16; ++i)
    for (int c = 0; c < kD; ++c) {
      double sum = 0, magnitude = 0;
      for (int j = 0; j < 32; ++j) {
        const double term =
            static_cast<double>(value_of(round_to<S>(static_cast<float>(expected_xy[i * 32 + j])))) *
            at(y, j, c);
        sum += term;
        magnitude += std::abs(term);
      }
      // The emulated mma sums in double and rounds once: within an f32 rounding of the sum.
      ASSERT_NEAR(xty[i * kD + c], sum, 1e-6 * (1 + magnitude)) << "(x·yᵀ)·y at (" << i << ", " << c << ")";
    }
}

TEST(FlashTilesEmulated, StagedFragmentsMultiplyAsMatricesBf16D64) {
  expect_products_of_staged_tiles<BFloat16, 64>();
}
TEST(FlashTilesEmulated, StagedFragmentsMultiplyAsMatricesF16D128) {
  expect_products_of_staged_tiles<Half, 128>();
}

TEST(FlashTilesEmulated, SwizzleKeepsEachRowsChunksAndSpreadsLdmatrixRowsOverBanks) {
  for (int row = 0; row < 64; ++row) {
    std::vector<bool> seen(16, false);
    for (int chunk = 0; chunk < 16; ++chunk) {
      const int offset = tile_offset<128>(row, chunk);
      ASSERT_EQ(offset / 128, row);
      seen[(offset % 128) / 8] = true;
    }
    for (bool s : seen) ASSERT_TRUE(s) << "row " << row << " loses a chunk";
  }
  // Eight consecutive rows of one logical chunk: eight different 16-byte bank groups (d = 64: a
  // row is 128 bytes, so the bank group is the chunk position).
  for (int first = 0; first < 64; first += 8)
    for (int chunk = 0; chunk < 8; ++chunk) {
      std::vector<bool> group(8, false);
      for (int r = first; r < first + 8; ++r) group[(tile_offset<64>(r, chunk) % 64) / 8] = true;
      for (bool g : group) ASSERT_TRUE(g) << "rows " << first << "+ chunk " << chunk << " conflict";
    }
}

TEST(LaneEmulator, ReportsAWarpWhoseLanesDivergeAroundACollective) {
  const auto errors = emulation::run_block(32, [](int thread) {
    if (thread == 5) return;  // one lane skips the shuffle the others make
    lane::shfl_xor(1.0f, 1);
  });
  EXPECT_FALSE(errors.empty());
}

}  // namespace
}  // namespace loom_cuda::flash
