// The OpenMP wait-policy default: set only when the user chose nothing, never overriding a choice.
#include "plugin_loading/openmp_wait_policy.hpp"

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace loom::host {
namespace {

/// Restores both variables as they were when the test started.
class SavedEnvironment {
 public:
  SavedEnvironment() {
    for (int i = 0; i < 2; ++i)
      if (const char* value = std::getenv(kNames[i])) saved_[i] = value, had_[i] = true;
  }
  ~SavedEnvironment() {
    for (int i = 0; i < 2; ++i) had_[i] ? ::setenv(kNames[i], saved_[i].c_str(), 1) : ::unsetenv(kNames[i]);
  }

 private:
  static constexpr const char* kNames[2] = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"};
  std::string saved_[2];
  bool had_[2] = {false, false};
};

TEST(OpenMpWaitPolicy, PassiveWhenTheUserChoseNothing) {
  SavedEnvironment saved;
  ::unsetenv("OMP_WAIT_POLICY");
  ::unsetenv("GOMP_SPINCOUNT");
  EXPECT_TRUE(apply_openmp_wait_default());
  ASSERT_NE(std::getenv("OMP_WAIT_POLICY"), nullptr);
  EXPECT_STREQ(std::getenv("OMP_WAIT_POLICY"), "PASSIVE");
}

TEST(OpenMpWaitPolicy, KeepsTheUsersPolicy) {
  SavedEnvironment saved;
  ::setenv("OMP_WAIT_POLICY", "ACTIVE", 1);
  ::unsetenv("GOMP_SPINCOUNT");
  EXPECT_FALSE(apply_openmp_wait_default());
  EXPECT_STREQ(std::getenv("OMP_WAIT_POLICY"), "ACTIVE");
}

TEST(OpenMpWaitPolicy, AnExplicitSpinCountIsAChoiceToo) {
  SavedEnvironment saved;
  ::unsetenv("OMP_WAIT_POLICY");
  ::setenv("GOMP_SPINCOUNT", "10000", 1);
  EXPECT_FALSE(apply_openmp_wait_default());
  EXPECT_EQ(std::getenv("OMP_WAIT_POLICY"), nullptr);
}

}  // namespace
}  // namespace loom::host
