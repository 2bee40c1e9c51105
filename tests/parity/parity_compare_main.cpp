// loom_parity_compare: checks one `loom debug-step` run against a parity fixture and prints a
// per-quantity table. Exit 0 = every quantity within tolerance, 1 = a mismatch, 2 = bad usage or
// unreadable input.
//
//   loom_parity_compare --fixture tests/fixtures/parity/CASE --out OUT.json --grads GRADS.safetensors
//                       [--loss-tol 1e-4] [--logit-tol 1e-4] [--grad-tol 1e-3] [--label fp32]
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "parity_comparison.hpp"

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw std::runtime_error(path + ": not valid JSON (" + error.what() + ")");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Compare a loom debug-step run with a PyTorch parity fixture"};
  std::string fixture, out, grads, label = "run";
  loom::parity::Tolerances tolerances;
  app.add_option("--fixture", fixture, "fixture directory (expected.json, expected_grads.safetensors)")
      ->required();
  app.add_option("--out", out, "OUT.json written by loom debug-step")->required();
  app.add_option("--grads", grads, "GRADS.safetensors written by loom debug-step")->required();
  app.add_option("--loss-tol", tolerances.losses, "relative error bound on losses");
  app.add_option("--logit-tol", tolerances.logits, "relative error bound on logits");
  app.add_option("--grad-tol", tolerances.grads, "relative error bound on each gradient");
  app.add_option("--label", label, "name of this run in the verdict");
  CLI11_PARSE(app, argc, argv);

  loom::parity::Report report;
  try {
    loom::parity::compare_outputs(read_json(fixture + "/expected.json"), read_json(out), tolerances, report);
    const auto expected = loom::host::SafetensorsFile::open(fixture + "/expected_grads.safetensors");
    const auto actual = loom::host::SafetensorsFile::open(grads);
    loom::parity::compare_gradients(expected, actual, tolerances.grads, report);
  } catch (const std::exception& error) {
    std::cerr << "parity " << label << ": " << error.what() << "\n";
    return 2;
  }
  std::cout << "parity " << label << " (" << fixture << ")\n" << report.table();
  return report.pass() ? 0 : 1;
}
