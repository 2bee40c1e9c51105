// Option validation of every optimizer and schedule: each problem is reported with the key and
// what is wrong, all at once.
#include <gtest/gtest.h>

#include "component_loader.hpp"
#include "recipe/errors.hpp"
#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/schedule.hpp"

namespace {

using loom_optim_test::load_component;

// The RecipeError message for `toml`, or "" when the component accepted it.
template <typename Interface>
std::string problems_of(const std::string& name, const std::string& toml) {
  try {
    load_component<Interface>(name, toml);
  } catch (const loom::host::RecipeError& e) {
    return e.what();
  }
  return "";
}

void expect_problem(const std::string& message, const std::string& needle) {
  EXPECT_NE(message.find(needle), std::string::npos) << "expected \"" << needle << "\" in:\n" << message;
}

TEST(OptimizerOptions, AcceptsEveryDocumentedOption) {
  EXPECT_EQ(
      problems_of<loom::Optimizer>(
          "nvlamb",
          "lr = 6e-3\nweight_decay = 0.01\nbeta1 = 0.9\nbeta2 = 0.999\neps = 1e-6\nmax_grad_norm = 1.0\n"
          "bias_correction = true\ntrust_ratio_on_no_decay = true\nno_decay = [\"bias\", \"LayerNorm\"]\n"
          "threads = 2\n"),
      "");
  EXPECT_EQ(problems_of<loom::Optimizer>(
                "adamw",
                "lr = 5e-5\nweight_decay = 0.01\nbeta1 = 0.9\nbeta2 = 0.999\neps = 1e-8\n"
                "max_grad_norm = 1.0\nbias_correction = false\nno_decay = []\nthreads = 0\n"),
            "");
  EXPECT_EQ(problems_of<loom::Optimizer>(
                "sgd", "lr = 0.1\nmomentum = 0.9\ndampening = 0.0\nnesterov = true\nweight_decay = 1e-4\n"),
            "");
}

TEST(OptimizerOptions, ReportsEveryBadValueWithItsKey) {
  const std::string m = problems_of<loom::Optimizer>(
      "nvlamb",
      "lr = -1.0\nbeta1 = 1.0\nbeta2 = \"high\"\nweight_decay = -0.1\nno_decay = [\"\"]\nthreads = -2\n");
  expect_problem(m, "test.toml:1:1: optimizer.lr: value -1.0 is out of range");
  expect_problem(m, "optimizer.beta1: value 1.0 is out of range [0, 1)");
  expect_problem(m, "optimizer.beta2: expected a number, got string 'high'");
  expect_problem(m, "optimizer.weight_decay: value -0.1");
  expect_problem(m, "optimizer.no_decay: an empty pattern would match every parameter");
  expect_problem(m, "optimizer.threads: value -2 is out of range [0, 1024]");
}

TEST(OptimizerOptions, EpsMustBePositive) {
  expect_problem(problems_of<loom::Optimizer>("adamw", "eps = 0.0\n"),
                 "optimizer.eps: value 0.0 is out of range (0, 1]");
  expect_problem(problems_of<loom::Optimizer>("nvlamb", "eps = 0\n"),
                 "optimizer.eps: value 0 is out of range (0, 1]");
}

// NaN passes a range check written as `v < min || v > max`; every number option refuses it (and
// ±inf), naming the key and its allowed range, in every optimizer and schedule.
TEST(OptimizerOptions, NonFiniteValuesAreRefusedNamingTheRange) {
  for (const char* optimizer : {"nvlamb", "adamw"}) {
    const std::string m = problems_of<loom::Optimizer>(
        optimizer,
        "lr = nan\nbeta1 = nan\nbeta2 = nan\neps = nan\nweight_decay = inf\nmax_grad_norm = -inf\n");
    expect_problem(m, "optimizer.lr: value nan is not a finite number (allowed: [0, inf))");
    expect_problem(m, "optimizer.beta1: value nan is not a finite number (allowed: [0, 1))");
    expect_problem(m, "optimizer.beta2: value nan is not a finite number (allowed: [0, 1))");
    expect_problem(m, "optimizer.eps: value nan is not a finite number (allowed: (0, 1])");
    expect_problem(m, "optimizer.weight_decay: value inf is not a finite number (allowed: [0, inf))");
    expect_problem(m, "optimizer.max_grad_norm: value -inf is not a finite number (allowed: [0, inf))");
  }
  const std::string sgd = problems_of<loom::Optimizer>("sgd", "momentum = nan\ndampening = nan\n");
  expect_problem(sgd, "optimizer.momentum: value nan is not a finite number (allowed: [0, 1])");
  expect_problem(sgd, "optimizer.dampening: value nan is not a finite number (allowed: [0, 1])");
  for (const char* schedule : {"poly-warmup", "linear-warmup", "constant"})
    expect_problem(problems_of<loom::Schedule>(schedule, "warmup = nan\n"),
                   "schedule.warmup: value nan is not a finite number (allowed: [0, 1])");
  expect_problem(problems_of<loom::Schedule>("poly-warmup", "degree = nan\n"),
                 "schedule.degree: value nan is not a finite number (allowed: [0, 100])");
}

TEST(OptimizerOptions, UnknownKeysGetASuggestion) {
  expect_problem(problems_of<loom::Optimizer>("adamw", "weight_decya = 0.1\n"),
                 "optimizer.weight_decya: unknown key; did you mean 'weight_decay'?");
  expect_problem(problems_of<loom::Optimizer>("sgd", "trust_ratio_on_no_decay = true\n"),
                 "optimizer.trust_ratio_on_no_decay: unknown key");
}

TEST(OptimizerOptions, NesterovNeedsMomentumWithoutDampening) {
  expect_problem(problems_of<loom::Optimizer>("sgd", "nesterov = true\n"),
                 "optimizer.nesterov: Nesterov momentum needs momentum > 0 and dampening = 0");
  expect_problem(problems_of<loom::Optimizer>("sgd", "nesterov = true\nmomentum = 0.9\ndampening = 0.5\n"),
                 "dampening = 0");
  expect_problem(problems_of<loom::Optimizer>("sgd", "momentum = 1.5\n"),
                 "optimizer.momentum: value 1.5 is out of range");
}

TEST(ScheduleOptions, ValidatesWarmupAndDegree) {
  expect_problem(problems_of<loom::Schedule>("poly-warmup", "warmup = 1.5\ndegree = -1.0\n"),
                 "schedule.warmup: value 1.5 is out of range [0, 1]");
  expect_problem(problems_of<loom::Schedule>("poly-warmup", "degree = -1.0\n"), "schedule.degree");
  expect_problem(problems_of<loom::Schedule>("linear-warmup", "degree = 1.0\n"),
                 "schedule.degree: unknown key");
  expect_problem(problems_of<loom::Schedule>("constant", "warmup = \"10%\"\n"),
                 "schedule.warmup: expected a number");
}

}  // namespace
