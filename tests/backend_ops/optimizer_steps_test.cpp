// The optimizer passes (loom::OptimizerSteps, on backends that offer them) against the reference's
// (backend/cpu's, itself bit-identical to the host optimizers: plugins/optimizers/tests): NVLAMB, AdamW
// and SGD trajectories at odd sizes (empty, 1-element and ragged segments, gaps, blocks that end
// mid-warp on a GPU) and at production sizes (several million elements in hundreds of segments),
// with clipping, trust-ratio and plain segments, loss-scaled gradients and a skipped step (the
// non-finite flag); a second run repeating the first bit for bit; an update without a gradient
// pass and overlapping segments refused. The element arithmetic is the reference's operation for
// operation; only the order of the float64 reductions may differ, so weights and moments agree to
// f32 rounding and norms to float64 rounding. Where the backend offers OptimizerWorkingCopy, the
// bf16/f16 working copy the updates write is Backend::cast of the new weights bit for bit inside
// the segments and untouched outside them, with weights and state unchanged by writing it; an
// unset copy, a skipped step and an update on non-finite gradients write nothing; a copy of the
// wrong dtype or size, or one aliasing the weights, is refused.
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>

#include "backend_op_case.hpp"
#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom/sdk/ops/optimizer_working_copy.hpp"

namespace loom_backend_ops {
namespace {

LOOM_BACKEND_OP_FAMILY(OptimizerSteps);

enum class Kind { lamb, adamw, sgd };

struct Layout {
  std::vector<loom::OptimizerSegment> segments;
  size_t total = 0;
};

struct Result {
  std::vector<float> weights, first_state, second_state;
  std::vector<int32_t> flags;
  std::vector<loom::OptimizerStepReport> reports;
  HostTensor working;  // the working copy after the run (when one was given)
};

/// A run's working copy: set on the plan through `copy` before the first step (and unset again
/// right after, with `unset`), starting as working_copy_sentinel(dtype).
struct WorkingCopyRun {
  loom::OptimizerWorkingCopy* copy;
  loom::DType dtype;
  bool unset = false;
};

/// A 16-bit copy of `n` elements that no cast of the test's weights gives (0x1234 in every element).
HostTensor working_copy_sentinel(loom::DType dtype, size_t n) {
  HostTensor t = HostTensor::zeros(dtype, {static_cast<int64_t>(n)});
  for (size_t i = 0; i < t.bytes.size(); i += 2) t.bytes[i] = 0x34, t.bytes[i + 1] = 0x12;
  return t;
}

// A flat buffer on `backend` holding `values`.
struct Flat {
  Flat(loom::Backend& backend, const std::vector<float>& values)
      : buffer(backend, values.size() * sizeof(float)),
        view(buffer.view(loom::DType::f32, {static_cast<int64_t>(values.size())})) {
    backend.copy_from_host(buffer.data(), values.data(), values.size() * sizeof(float));
  }
  std::vector<float> read(loom::Backend& backend) const {
    std::vector<float> out(static_cast<size_t>(view.numel()));
    backend.copy_to_host(out.data(), buffer.data(), out.size() * sizeof(float));
    return out;
  }
  loom::Buffer buffer;
  loom::Tensor view;
};

// `steps` updates of `kind` through `passes` on `backend`; step `bad_step` gets an inf gradient.
// With `working`, the plan writes a working copy from the first step on.
Result run(loom::Backend& backend, loom::OptimizerSteps& passes, const Layout& layout, Kind kind,
           const loom::GradientScaling& scaling, int steps, int bad_step,
           const WorkingCopyRun* working = nullptr) {
  const std::vector<float> initial = random_floats(layout.total, 11, -0.05f, 0.05f);
  Flat w(backend, initial), m(backend, std::vector<float>(layout.total, 0.0f)),
      v(backend, std::vector<float>(layout.total, 0.0f));
  loom::Buffer flag_buffer(backend, sizeof(int32_t));
  const loom::Tensor flag = flag_buffer.view(loom::DType::i32, {1});
  loom::OptimizerPlan* plan =
      passes.create_plan(layout.segments.data(), layout.segments.size(), layout.total);
  std::optional<DeviceTensor> copy;
  if (working != nullptr) {
    copy.emplace(backend, working_copy_sentinel(working->dtype, layout.total));
    working->copy->set_working_copy(*plan, copy->view());
    if (working->unset) working->copy->set_working_copy(*plan, loom::Tensor{});
  }
  Result r;
  uint64_t applied = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<float> g = random_floats(layout.total, 100 + static_cast<uint32_t>(step), -1.0f, 1.0f);
    for (float& x : g) x *= static_cast<float>(1.0 / scaling.grad_scale) * 1e-3f;  // loss-scaled
    if (step == bad_step && !layout.segments.empty()) {
      const loom::OptimizerSegment& last = layout.segments.back();
      g[last.offset + last.count / 2] = std::numeric_limits<float>::quiet_NaN();
    }
    Flat grads(backend, g);
    passes.gradient_norm(*plan, grads.view, flag);
    int32_t host_flag = -1;
    backend.copy_to_host(&host_flag, flag_buffer.data(), sizeof host_flag);
    r.flags.push_back(host_flag);
    if (host_flag != 0) continue;
    ++applied;
    const double lr = 1e-2 / static_cast<double>(step + 1);
    const loom::AdamConstants adam{0.9f,
                                   0.1f,
                                   0.999f,
                                   0.001f,
                                   static_cast<float>(1.0 - std::pow(0.9, applied)),
                                   static_cast<float>(1.0 - std::pow(0.999, applied)),
                                   1e-6f};
    switch (kind) {
      case Kind::lamb:
        passes.lamb_step(*plan, w.view, grads.view, m.view, v.view, scaling, adam, lr);
        break;
      case Kind::adamw:
        passes.adamw_step(*plan, w.view, grads.view, m.view, v.view, scaling, adam, lr);
        break;
      case Kind::sgd:
        passes.sgd_step(*plan, w.view, grads.view, m.view, scaling, {0.9f, 1.0f, 1, applied == 1 ? 1 : 0},
                        lr);
        break;
    }
    r.reports.push_back(passes.read_report(*plan));
  }
  r.weights = w.read(backend);
  r.first_state = m.read(backend);
  r.second_state = v.read(backend);
  if (copy) r.working = copy->download();
  passes.destroy_plan(plan);
  return r;
}

/// A run on the backend under test against the reference's run.
void expect_agree(const Result& actual, const Result& expected, const std::string& what) {
  EXPECT_EQ(actual.flags, expected.flags) << what;
  ASSERT_EQ(actual.reports.size(), expected.reports.size()) << what;
  for (size_t i = 0; i < actual.reports.size(); ++i) {
    expect_close(std::vector<double>{actual.reports[i].grad_norm},
                 std::vector<double>{expected.reports[i].grad_norm}, kFloat64Norms, what + ": gradient norm");
    expect_close(std::vector<double>{actual.reports[i].clip_divisor},
                 std::vector<double>{expected.reports[i].clip_divisor}, kFloat64Norms,
                 what + ": clip divisor");
  }
  expect_close(actual.weights, expected.weights, kUpdatedWeights, what + ": weights");
  expect_close(actual.first_state, expected.first_state, kFirstMoments, what + ": first state tensor");
  expect_close(actual.second_state, expected.second_state, kSecondMoments, what + ": second state tensor");
}

// Odd sizes: empty and 1-element segments, blocks ending mid-warp, gaps between segments.
Layout odd_layout() {
  Layout l;
  const uint64_t counts[] = {1, 37, 0, 32769, 255, 100003, 7};
  uint64_t offset = 3;
  for (size_t i = 0; i < std::size(counts); ++i) {
    l.segments.push_back({offset, counts[i], i % 2 == 0 ? 0.01f : 0.0f, i % 2 == 0 ? 1 : 0});
    offset += counts[i] + 5;
  }
  l.total = offset;
  return l;
}

// Production sizes: 6.3M elements in 300 segments shaped like a BERT layer stack (weights with
// decay and trust ratio, biases and LayerNorms without).
Layout production_layout() {
  Layout l;
  uint64_t offset = 0;
  for (int layer = 0; layer < 75; ++layer) {
    const uint64_t counts[] = {256 * 256, 256, 1024 * 20, 256};
    for (int k = 0; k < 4; ++k) {
      const bool weight = k == 0 || k == 2;
      l.segments.push_back({offset, counts[k], weight ? 0.01f : 0.0f, weight ? 1 : 0});
      offset += counts[k];
    }
  }
  l.segments.push_back({offset, 1'000'003, 0.01f, 1});  // an embedding table
  l.total = offset + 1'000'003;
  return l;
}

/// `layout` updated by `kind` on the backend under test and on the reference, compared; then a
/// second run on the backend under test, which must repeat the first bit for bit.
void compare(loom::Backend& backend, loom::OptimizerSteps& passes, const Layout& layout, Kind kind,
             const loom::GradientScaling& scaling, const std::string& what) {
  loom::Backend& reference = reference_backend().backend();
  loom::OptimizerSteps* const reference_passes = reference_backend().component.find<loom::OptimizerSteps>();
  ASSERT_NE(reference_passes, nullptr);
  const Result expected = run(reference, *reference_passes, layout, kind, scaling, 4, 2);
  const Result first = run(backend, passes, layout, kind, scaling, 4, 2);
  expect_agree(first, expected, what);
  const Result second = run(backend, passes, layout, kind, scaling, 4, 2);
  expect_equal(second.weights, first.weights, what + ": rerun");
  EXPECT_EQ(second.reports.back().grad_norm, first.reports.back().grad_norm) << what << ": rerun";
}

TEST_P(OptimizerSteps, LambAtOddSizesWithClippingAndPlainSegments) {
  LOOM_OFFERED_OR_SKIP(loom::OptimizerSteps, passes);
  compare(backend(), *passes, odd_layout(), Kind::lamb, {1.0 / 1024, 1.0, loom::ClipRule::above_max},
          "lamb odd");
  compare(backend(), *passes, odd_layout(), Kind::lamb, {1.0, 0.0, loom::ClipRule::none},
          "lamb odd unclipped");
}

TEST_P(OptimizerSteps, AdamWAndSgdAtOddSizes) {
  LOOM_OFFERED_OR_SKIP(loom::OptimizerSteps, passes);
  compare(backend(), *passes, odd_layout(), Kind::adamw, {1.0 / 8, 1e-3, loom::ClipRule::torch_rule},
          "adamw odd");
  compare(backend(), *passes, odd_layout(), Kind::sgd, {1.0, 1e-3, loom::ClipRule::torch_rule}, "sgd odd");
}

TEST_P(OptimizerSteps, EveryOptimizerAtProductionSizes) {
  LOOM_SKIP_WHERE_REFERENCE_CODE_RUNS();
  LOOM_OFFERED_OR_SKIP(loom::OptimizerSteps, passes);
  const Layout layout = production_layout();
  compare(backend(), *passes, layout, Kind::lamb, {1.0 / 65536, 1.0, loom::ClipRule::above_max},
          "lamb production");
  compare(backend(), *passes, layout, Kind::adamw, {1.0, 1.0, loom::ClipRule::torch_rule},
          "adamw production");
  compare(backend(), *passes, layout, Kind::sgd, {1.0, 0.0, loom::ClipRule::none}, "sgd production");
}

TEST_P(OptimizerSteps, RefusesAnUpdateWithoutAGradientPassAndOverlappingSegments) {
  LOOM_OFFERED_OR_SKIP(loom::OptimizerSteps, passes);
  const Layout layout = odd_layout();
  loom::OptimizerPlan* plan =
      passes->create_plan(layout.segments.data(), layout.segments.size(), layout.total);
  Flat w(backend(), std::vector<float>(layout.total, 1.0f)),
      g(backend(), std::vector<float>(layout.total, 1.0f)),
      m(backend(), std::vector<float>(layout.total, 0.0f)),
      v(backend(), std::vector<float>(layout.total, 0.0f));
  const loom::AdamConstants adam{0.9f, 0.1f, 0.999f, 0.001f, 1.0f, 1.0f, 1e-6f};
  EXPECT_THROW(
      passes->adamw_step(*plan, w.view, g.view, m.view, v.view, {1.0, 0.0, loom::ClipRule::none}, adam, 1e-3),
      loom::Error);
  passes->destroy_plan(plan);
  const loom::OptimizerSegment overlapping[] = {{0, 10, 0.0f, 0}, {9, 10, 0.0f, 0}};
  EXPECT_THROW(passes->create_plan(overlapping, 2, 100), loom::Error);
}

const char* kind_name(Kind kind) {
  return kind == Kind::lamb ? "lamb" : kind == Kind::adamw ? "adamw" : "sgd";
}

/// `r.working` against Backend::cast of `r.weights` on `backend`: the same bits inside every
/// segment of `layout` (in offset order), the sentinel outside them.
void expect_cast_of_weights(loom::Backend& backend, const Layout& layout, const Result& r, const std::string& what) {
  const auto n = static_cast<int64_t>(layout.total);
  const DeviceTensor weights(backend, HostTensor::of(r.weights, loom::DType::f32, {n}));
  const DeviceTensor cast(backend, HostTensor::zeros(r.working.dtype, {n}));
  backend.cast(weights.view(), cast.view());
  const HostTensor expected = cast.download();
  const HostTensor sentinel = working_copy_sentinel(r.working.dtype, layout.total);
  int64_t at = 0;
  for (size_t i = 0; i < layout.segments.size(); ++i) {
    const auto offset = static_cast<int64_t>(layout.segments[i].offset);
    const auto count = static_cast<int64_t>(layout.segments[i].count);
    expect_same_bits(r.working, at, sentinel, at, offset - at, what + ": before segment " + std::to_string(i));
    expect_same_bits(r.working, offset, expected, offset, count, what + ": segment " + std::to_string(i));
    at = offset + count;
  }
  expect_same_bits(r.working, at, sentinel, at, n - at, what + ": after the last segment");
}

TEST_P(OptimizerSteps, UpdatesWriteTheWorkingCopyAsCastWould) {
  LOOM_OFFERED_OR_SKIP(loom::OptimizerSteps, passes);
  LOOM_OFFERED_OR_SKIP(loom::OptimizerWorkingCopy, copy);
  const Layout layout = odd_layout();
  const loom::GradientScaling scaling{1.0 / 1024, 1.0, loom::ClipRule::above_max};
  for (Kind kind : {Kind::lamb, Kind::adamw, Kind::sgd}) {
    const Result plain = run(backend(), *passes, layout, kind, scaling, 4, 2);
    for (loom::DType dtype : {loom::DType::bf16, loom::DType::f16}) {
      const std::string what = std::string(kind_name(kind)) + " " + loom::dtype_name(dtype);
      const WorkingCopyRun written_run{copy, dtype};
      const Result written = run(backend(), *passes, layout, kind, scaling, 4, 2, &written_run);
      EXPECT_EQ(written.flags, plain.flags) << what;
      expect_equal(written.weights, plain.weights, what + ": weights");
      expect_equal(written.first_state, plain.first_state, what + ": first state tensor");
      expect_equal(written.second_state, plain.second_state, what + ": second state tensor");
      expect_cast_of_weights(backend(), layout, written, what + ": working copy");
      const WorkingCopyRun unset_run{copy, dtype, true};
      const Result unset = run(backend(), *passes, layout, kind, scaling, 4, 2, &unset_run);
      expect_equal(unset.weights, plain.weights, what + ": weights with the copy unset");
      expect_same_bits(unset.working, working_copy_sentinel(dtype, layout.total),
                       what + ": a copy set and unset again");
    }
  }
}

TEST_P(OptimizerSteps, WritesNoWorkingCopyOnNonFiniteGradientsAndRefusesABadOne) {
  LOOM_OFFERED_OR_SKIP(loom::OptimizerSteps, passes);
  LOOM_OFFERED_OR_SKIP(loom::OptimizerWorkingCopy, copy);
  const Layout layout = odd_layout();
  const auto n = static_cast<int64_t>(layout.total);
  loom::OptimizerPlan* plan =
      passes->create_plan(layout.segments.data(), layout.segments.size(), layout.total);
  std::vector<float> nan_grads(layout.total, 1e-3f);
  nan_grads[layout.segments[3].offset + 5] = std::numeric_limits<float>::quiet_NaN();
  Flat w(backend(), random_floats(layout.total, 5, -0.05f, 0.05f)), g(backend(), nan_grads),
      m(backend(), std::vector<float>(layout.total, 0.0f)), v(backend(), std::vector<float>(layout.total, 0.0f));
  loom::Buffer flag(backend(), sizeof(int32_t));
  const DeviceTensor working(backend(), working_copy_sentinel(loom::DType::bf16, layout.total));
  const DeviceTensor f32_copy(backend(), HostTensor::zeros(loom::DType::f32, {n}));
  const DeviceTensor short_copy(backend(), HostTensor::zeros(loom::DType::f16, {n - 1}));
  expect_error_naming([&] { copy->set_working_copy(*plan, f32_copy.view()); }, {"working"});
  expect_error_naming([&] { copy->set_working_copy(*plan, short_copy.view()); }, {"working"});

  // An update the precision policy should have skipped changes nothing, the copy included.
  copy->set_working_copy(*plan, working.view());
  const loom::AdamConstants adam{0.9f, 0.1f, 0.999f, 0.001f, 1.0f, 1.0f, 1e-6f};
  const loom::GradientScaling scaling{1.0, 0.0, loom::ClipRule::none};
  passes->gradient_norm(*plan, g.view, flag.view(loom::DType::i32, {1}));
  passes->adamw_step(*plan, w.view, g.view, m.view, v.view, scaling, adam, 1e-3);
  passes->gradient_norm(*plan, g.view, flag.view(loom::DType::i32, {1}));
  passes->lamb_step(*plan, w.view, g.view, m.view, v.view, scaling, adam, 1e-3);
  passes->gradient_norm(*plan, g.view, flag.view(loom::DType::i32, {1}));
  passes->sgd_step(*plan, w.view, g.view, m.view, scaling, {0.9f, 1.0f, 0, 1}, 1e-3);
  expect_same_bits(working.download(), working_copy_sentinel(loom::DType::bf16, layout.total),
                   "the working copy after updates on non-finite gradients");

  // A copy inside the weights' memory is refused when an update would write both.
  loom::Tensor inside_weights = w.view;
  inside_weights.dtype = loom::DType::bf16;
  copy->set_working_copy(*plan, inside_weights);
  passes->gradient_norm(*plan, g.view, flag.view(loom::DType::i32, {1}));
  expect_error_naming(
      [&] { passes->adamw_step(*plan, w.view, g.view, m.view, v.view, scaling, adam, 1e-3); }, {"working"});
  passes->destroy_plan(plan);
}

}  // namespace
}  // namespace loom_backend_ops
