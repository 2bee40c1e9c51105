// The parity comparator against the fixtures themselves: a fixture matches itself exactly, and
// each kind of discrepancy (a gradient off by more than its bound, a wrong loss, a missing output,
// a wrong number of masked rows, NaN, an extra gradient) fails with a row naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "parity_comparison.hpp"

namespace loom::parity {
namespace {

const std::string kCase = std::string(LOOM_PARITY_FIXTURE_DIR) + "/h36-heads3-erf-pad";

nlohmann::json expected_json() {
  std::ifstream in(kCase + "/expected.json");
  return nlohmann::json::parse(in);
}

host::SafetensorsFile expected_grads() {
  return host::SafetensorsFile::open(kCase + "/expected_grads.safetensors");
}

// The fixture's gradients with `edit` applied to the named tensor's values.
host::SafetensorsFile edited_grads(const std::string& name, void (*edit)(std::vector<float>&),
                                   const std::string& extra = "") {
  const auto source = expected_grads();
  host::SafetensorsWriter writer;
  for (const auto& tensor : source.tensors()) {
    auto values = source.read_f32(tensor.name);
    if (tensor.name == name) edit(values);
    writer.add_f32(tensor.name, tensor.shape, values);
  }
  if (!extra.empty()) writer.add_f32(extra, {1}, std::vector<float>{0});
  return host::SafetensorsFile::from_bytes(writer.serialize(), "edited");
}

const Row& row(const Report& report, const std::string& quantity) {
  for (const auto& r : report.rows)
    if (r.quantity == quantity) return r;
  throw std::out_of_range(quantity);
}

TEST(ParityComparison, FixtureMatchesItselfExactly) {
  Report report;
  compare_outputs(expected_json(), expected_json(), Tolerances{}, report);
  compare_gradients(expected_grads(), expected_grads(), 1e-3, report);
  EXPECT_TRUE(report.pass()) << report.table();
  EXPECT_EQ(report.rows.size(), 5u + 46u);
  for (const auto& r : report.rows) EXPECT_EQ(r.relative, 0.0) << r.quantity;
  EXPECT_EQ(row(report, "masked_prediction_logits").shape, "[5, 83]");
  EXPECT_EQ(row(report, "seq_relationship_logits").shape, "[3, 2]");
  EXPECT_NE(report.table().find("PASS: 51 quantities, 0 failed"), std::string::npos) << report.table();
}

TEST(ParityComparison, GradientBeyondItsBoundFailsAndIsNamed) {
  Report report;
  const auto name = "bert.encoder.layer.1.attention.self.key.weight";
  compare_gradients(expected_grads(),
                    edited_grads(name,
                                 [](std::vector<float>& v) {
                                   float largest = 0;
                                   for (float x : v) largest = std::max(largest, std::abs(x));
                                   v[3] += 2e-3f * largest;
                                 }),
                    1e-3, report);
  EXPECT_FALSE(report.pass());
  const Row& bad = row(report, std::string("grad ") + name);
  EXPECT_NEAR(bad.relative, 2e-3, 1e-5);
  EXPECT_FALSE(bad.pass());
  EXPECT_TRUE(row(report, "grad bert.embeddings.word_embeddings.weight").pass());
  EXPECT_NE(report.table().find(std::string("FAIL grad ") + name), std::string::npos) << report.table();
  EXPECT_NE(report.table().find("FAIL: 46 quantities, 1 failed"), std::string::npos) << report.table();
}

TEST(ParityComparison, GradientsThatAreZeroInExactArithmeticGetAnAbsoluteBound) {
  // The key bias gradient is float64 round-off (~1e-17); float32 noise of 1e-8 must pass, an error
  // of 0.6% of the model's largest gradient element (0.82) must not.
  const auto name = "bert.encoder.layer.0.attention.self.key.bias";
  Report noise, wrong;
  compare_gradients(expected_grads(), edited_grads(name, [](std::vector<float>& v) { v[1] = 1e-8f; }), 1e-3,
                    noise);
  EXPECT_TRUE(noise.pass()) << noise.table();
  compare_gradients(expected_grads(), edited_grads(name, [](std::vector<float>& v) { v[1] = 0.005f; }), 1e-1,
                    wrong);
  EXPECT_FALSE(row(wrong, std::string("grad ") + name).pass()) << wrong.table();
}

TEST(ParityComparison, LossesAreHeldToTheirBound) {
  auto actual = expected_json();
  actual["mlm_loss"] = actual["mlm_loss"].get<double>() * (1 + 5e-5);
  Report within;
  compare_outputs(expected_json(), actual, Tolerances{}, within);
  EXPECT_TRUE(within.pass()) << within.table();
  actual["loss"] = actual["loss"].get<double>() * (1 + 3e-4);
  Report beyond;
  compare_outputs(expected_json(), actual, Tolerances{}, beyond);
  EXPECT_FALSE(beyond.pass());
  EXPECT_FALSE(row(beyond, "loss").pass());
  EXPECT_NEAR(row(beyond, "loss").relative, 3e-4, 1e-6);
}

TEST(ParityComparison, StructuralDifferencesFail) {
  auto missing = expected_json();
  missing.erase("nsp_loss");
  Report a;
  compare_outputs(expected_json(), missing, Tolerances{}, a);
  EXPECT_EQ(row(a, "nsp_loss").problem, "missing from debug-step output");

  auto fewer_rows = expected_json();
  fewer_rows["masked_prediction_logits"].erase(0);
  Report b;
  compare_outputs(expected_json(), fewer_rows, Tolerances{}, b);
  EXPECT_EQ(row(b, "masked_prediction_logits").problem, "shape [4, 83], expected [5, 83]");

  auto nan = expected_json();
  nan["seq_relationship_logits"][1][0] = nullptr;
  Report c;
  compare_outputs(expected_json(), nan, Tolerances{}, c);
  EXPECT_FALSE(row(c, "seq_relationship_logits").pass());

  Report d;
  compare_gradients(expected_grads(),
                    edited_grads(
                        "cls.predictions.bias", [](std::vector<float>& v) { v[0] = std::nanf(""); },
                        "cls.predictions.decoder.weight"),
                    1e-3, d);
  EXPECT_EQ(row(d, "grad cls.predictions.bias").problem, "non-finite value at flat index 0");
  EXPECT_EQ(row(d, "grad cls.predictions.decoder.weight").problem,
            "in GRADS file but not a BertForPreTraining parameter of the fixture");
  EXPECT_FALSE(d.pass());
}

TEST(ParityComparison, Bfloat16RoundedOutputsPassOnlyTheLooserBounds) {
  // bf16 keeps 8 significant bits: rounding every logit moves it by up to 2^-9 relative.
  auto rounded = expected_json();
  for (auto& logits : rounded["masked_prediction_logits"])
    for (auto& value : logits) {
      const float x = value.get<float>();
      std::uint32_t bits;
      std::memcpy(&bits, &x, 4);
      bits = (bits + 0x8000u) & 0xffff0000u;
      float y;
      std::memcpy(&y, &bits, 4);
      value = y;
    }
  Report strict, loose;
  compare_outputs(expected_json(), rounded, Tolerances{}, strict);
  compare_outputs(expected_json(), rounded, Tolerances{2e-2, 5e-2, 5e-2}, loose);
  EXPECT_FALSE(strict.pass());
  EXPECT_TRUE(loose.pass()) << loose.table();
}

}  // namespace
}  // namespace loom::parity
