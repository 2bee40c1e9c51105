// optimizer/lion through its plugin descriptor, the way the host creates it: option checking,
// the update rule against an independent reference, decay rules, untouched gaps, refusing NaN.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/plugin_abi.h"

extern "C" const loom_plugin_desc* loom_plugin_query(void) noexcept;

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

// Creates optimizer/lion from TOML options; returns nullptr and the message on failure.
loom::Optimizer* create(const std::string& toml, std::string& message) {
  const loom_plugin_desc* plugin = loom_plugin_query();
  const loom_component_desc& lion = plugin->components[0];
  loom_create_args args{};
  args.struct_size = sizeof(args);
  args.config_toml = toml.data();
  args.config_length = toml.size();
  args.config_origins = "";
  args.table_origin = "test.toml:1:1";
  args.table_name = "optimizer";
  char text[4096] = {0};
  loom_error_buffer error{text, sizeof(text)};
  void* object = nullptr;
  const loom_status status = lion.create(&args, &object, &error);
  message = text;
  return status == LOOM_OK ? static_cast<loom::Optimizer*>(object) : nullptr;
}

void test_descriptor() {
  const loom_plugin_desc* plugin = loom_plugin_query();
  check(plugin->num_components == 1, "one component");
  check(std::strcmp(plugin->components[0].name, "lion") == 0, "component is named lion");
  check(plugin->components[0].kind == LOOM_KIND_OPTIMIZER, "component is an optimizer");
}

void test_bad_options_are_reported() {
  std::string message;
  check(create("lr = 1e-4\nbeta3 = 0.5\n", message) == nullptr, "unknown key refused");
  check(message.find("beta3") != std::string::npos && message.find("unknown key") != std::string::npos,
        "message names the unknown key: " + message);
  check(create("beta1 = 1.5\n", message) == nullptr, "beta1 out of range refused");
  check(message.find("beta1") != std::string::npos, "message names beta1: " + message);
}

// Two segments with a gap between them: "layer.weight" (decayed by name), "layer.bias" (not).
void test_update_matches_reference() {
  std::string message;
  loom::Optimizer* lion = create("lr = 0.01\nbeta1 = 0.8\nbeta2 = 0.95\nweight_decay = 0.5\n", message);
  check(lion != nullptr, "create: " + message);
  if (lion == nullptr) return;
  const loom::ParameterSegment segments[] = {{"layer.weight", 0, 4, loom::DecayRule::by_name},
                                             {"layer.bias", 6, 2, loom::DecayRule::by_name}};
  lion->setup(segments, 2, 8);
  check(lion->segment_decays(0) && !lion->segment_decays(1), "weight decays, bias does not");
  std::vector<float> w = {0.5f, -0.25f, 1.0f, 0.0f, 7.0f, 7.0f, 0.125f, -2.0f};
  std::vector<double> ref(w.begin(), w.end()), m(8, 0.0);
  const double grad_scale = 0.5, lr = 0.01;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> g = {0.2f, -0.4f, 0.0f, 1.0f, 9.0f, 9.0f, -0.3f, 0.6f};
    for (float& x : g) x *= static_cast<float>(step + 1) * (step == 1 ? -1.0f : 1.0f);
    const loom::OptimizerStepResult result = lion->step(w.data(), g.data(), {lr, grad_scale});
    double squares = 0.0;
    for (int k : {0, 1, 2, 3, 6, 7}) {
      const double gk = g[k] * grad_scale;
      squares += static_cast<double>(g[k]) * g[k];
      const double c = 0.8 * m[k] + 0.2 * gk;
      const double decay = k < 4 ? 0.5 : 0.0;
      ref[k] -= lr * ((c > 0) - (c < 0) + decay * ref[k]);
      m[k] = 0.95 * m[k] + 0.05 * gk;
    }
    check(std::fabs(result.grad_norm - std::sqrt(squares) * grad_scale) < 1e-6, "grad_norm of step");
    check(result.successful_steps == static_cast<uint64_t>(step + 1), "step counter");
  }
  for (int k = 0; k < 8; ++k)
    check(std::fabs(w[k] - ref[k]) < 1e-6, "element " + std::to_string(k) + ": " + std::to_string(w[k]) +
                                               " vs reference " + std::to_string(ref[k]));
  check(w[4] == 7.0f && w[5] == 7.0f, "elements outside every segment are untouched");
  const loom::OptimizerStateTensor state = lion->state_tensor(0);
  check(std::strcmp(state.name, "exp_avg") == 0 && state.count == 8, "exp_avg state tensor");
  check(std::fabs(state.data[0] - m[0]) < 1e-6, "exp_avg holds the momentum");
  lion->reset_state();
  check(lion->successful_steps() == 0 && state.data[0] == 0.0f, "reset_state zeroes state and counter");
  loom_plugin_query()->components[0].destroy(lion);
}

void test_non_finite_gradient_is_refused() {
  std::string message;
  loom::Optimizer* lion = create("", message);
  const loom::ParameterSegment segment{"w", 0, 2, loom::DecayRule::decay};
  lion->setup(&segment, 1, 2);
  std::vector<float> w = {1.0f, 2.0f}, g = {NAN, 0.0f};
  bool threw = false;
  try {
    lion->step(w.data(), g.data(), {1e-3, 1.0});
  } catch (const std::exception& e) {
    threw = std::string(e.what()).find("refusing") != std::string::npos;
  }
  check(threw && w[0] == 1.0f && w[1] == 2.0f, "NaN gradient throws and leaves the weights alone");
  loom_plugin_query()->components[0].destroy(lion);
}

}  // namespace

int main() {
  test_descriptor();
  test_bad_options_are_reported();
  test_update_matches_reference();
  test_non_finite_gradient_is_refused();
  if (failures > 0) return 1;
  std::printf("lion_test: all checks passed\n");
  return 0;
}
