// embedding gather (overwrite/accumulate) and scatter-add (repeated ids accumulate), checked by
// finite differences; a bad id is an error naming it.
#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;

TEST(Embedding, GatherAndScatterAddMatchFiniteDifferences) {
  const int64_t V = 11, C = 6, B = 2, T = 5;
  auto table = random_floats(V * C, 81), w = random_floats(B * T * C, 82);
  std::vector<int64_t> ids = {3, 0, 10, 3, 3, 7, 1, 0, 9, 10};
  std::vector<float> out(B * T * C, 5.0f);
  backend().embedding_gather(view(table, {V, C}), view(ids, {B, T}), view(out, {B, T, C}), false);
  const auto forward = [&](const std::vector<double>& tab) {
    std::vector<double> o(B * T * C);
    for (int64_t i = 0; i < B * T; ++i)
      for (int64_t c = 0; c < C; ++c) o[i * C + c] = tab[ids[i] * C + c];
    return o;
  };
  const auto td = to_double(table);
  expect_close(out, forward(td), 0, 0, "gather");
  std::vector<float> acc(B * T * C, 1.0f);
  backend().embedding_gather(view(table, {V, C}), view(ids, {B, T}), view(acc, {B * T, C}), true);
  auto acc_expected = forward(td);
  for (auto& v : acc_expected) v += 1.0;
  expect_close(acc, acc_expected, 1e-7, 1e-7, "gather accumulate");
  std::vector<float> dtable(V * C, 0.25f);
  backend().embedding_scatter_add(view(w, {B, T, C}), view(ids, {B, T}), view(dtable, {V, C}));
  auto expected = numeric_gradient([&](const auto& v) { return weighted_sum(forward(v), w); }, td);
  for (auto& v : expected) v += 0.25;
  expect_close(dtable, expected, 1e-6, 1e-6, "scatter-add (id 3 three times)");
}

TEST(Embedding, I32IdsAndOutOfRangeIdIsAnError) {
  const int64_t V = 4, C = 3;
  auto table = random_floats(V * C, 83);
  std::vector<int32_t> ids = {1, 4};
  std::vector<float> out(2 * C);
  try {
    backend().embedding_gather(view(table, {V, C}), view(ids, {2}), view(out, {2, C}), false);
    FAIL() << "expected an error";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("ids[1] = 4 is outside [0, 4)"), std::string::npos) << e.what();
  }
  ids[1] = 2;
  backend().embedding_gather(view(table, {V, C}), view(ids, {2}), view(out, {2, C}), false);
  EXPECT_EQ(out[3], table[2 * C]);
}

}  // namespace
