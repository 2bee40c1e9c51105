// The host tables as RunSettings: a run name is one path component, so the run directory
// (output_dir/name) is always a child of output_dir.
#include <gtest/gtest.h>

#include "recipe/errors.hpp"
#include "recipe/run_settings.hpp"

namespace loom::host {
namespace {

std::string data(const std::string& name) {
  return std::string(LOOM_TEST_DATA_DIR) + "/" + name;
}

// The problems of valid.toml with `--set run.name=<name>`; empty when it reads.
std::vector<std::string> name_problems(const std::string& name) {
  try {
    read_run_settings(load_recipe(data("valid.toml"), {"run.name=" + name}));
  } catch (const RecipeError& e) {
    return e.problems();
  }
  return {};
}

TEST(RunSettings, RunNamesThatLeaveOutputDirAreRefusedNamingTheKey) {
  const std::pair<std::string, std::string> cases[] = {
      {"..", "'..' is not allowed: the run directory would be the parent of run.output_dir"},
      {".", "'.' is not allowed: the run directory would be run.output_dir itself"},
      {"a/b", "'a/b' contains '/'"},
      {"../elsewhere", "contains '/'"},
      {"/tmp/x", "contains '/'"},
      {"\"\"", "must not be empty"},
      {"\"a\\nb\"", "\"a\\nb\" contains a control character"},
      {"\"a\\u0000b\"", "contains a control character"},
      {std::string(256, 'n'), "is 256 bytes long"},
  };
  for (const auto& [name, reason] : cases) {
    const std::vector<std::string> problems = name_problems(name);
    ASSERT_EQ(problems.size(), 1u) << name;
    EXPECT_EQ(problems[0].rfind("--set run.name=" + name + ": run.name: ", 0), 0u) << problems[0];
    EXPECT_NE(problems[0].find(reason), std::string::npos) << name << " -> " << problems[0];
    EXPECT_NE(problems[0].find("a run name is one directory name under run.output_dir"), std::string::npos)
        << problems[0];
  }
}

TEST(RunSettings, OrdinaryRunNamesAreAccepted) {
  const std::vector<std::string> names = {
      "bert-tiny", "run.2", "...", ".hidden", "a b", "phase1_seq128", std::string(255, 'n')};
  for (const std::string& name : names) {
    EXPECT_TRUE(name_problems(name).empty()) << name;
    EXPECT_EQ(run_name_problem(name), "") << name;
  }
  RunSettings settings = read_run_settings(load_recipe(data("valid.toml"), {"run.name=phase2"}));
  EXPECT_EQ(settings.run_directory(), std::filesystem::path("runs") / "phase2");
}

}  // namespace
}  // namespace loom::host
