// Every way a plugin file can be wrong, and what the host says about it (docs/plugin-abi.md §8).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "loom/sdk/communicator.hpp"
#include "loom/sdk/communicator2.hpp"
#include "loom/sdk/plugin.hpp"
#include "plugin_loading/plugin_test_support.hpp"
#include "recipe/errors.hpp"

namespace loom::host {
namespace {

using testing::fixture_dir;
using testing::fixture_file;
using testing::hermetic;

// Loading `plugin` from `fixture` explicitly must fail; returns the message.
std::string explicit_load_error(const std::string& fixture, const std::string& plugin) {
  try {
    PluginRegistry registry(hermetic({}, {fixture_file(fixture, plugin)}));
  } catch (const PluginLoadError& e) {
    EXPECT_EQ(e.path(), fixture_file(fixture, plugin));
    return e.what();
  }
  ADD_FAILURE() << "loading " << plugin << " did not fail";
  return "";
}

TEST(PluginLoading, GoodPluginLoadsAndListsItsComponent) {
  PluginRegistry registry(hermetic({fixture_dir("good")}));
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0]->name(), "fixture-good");
  EXPECT_EQ(registry.plugins()[0]->version(), "1.2.3");
  EXPECT_TRUE(registry.refused().empty());
  EXPECT_NE(registry.find(LOOM_KIND_COMMUNICATOR, "fixture"), nullptr);
  EXPECT_EQ(registry.find(LOOM_KIND_COMMUNICATOR, "nope"), nullptr);
  EXPECT_EQ(registry.names_of_kind(LOOM_KIND_COMMUNICATOR), std::vector<std::string>{"fixture"});
}

TEST(PluginLoading, ComponentIsCreatedWithOptionsAndWorks) {
  PluginRegistry registry(hermetic({fixture_dir("good")}));
  auto comm = registry.create<loom::Communicator>(*registry.find(LOOM_KIND_COMMUNICATOR, "fixture"),
                                                  testing::config("count = 3\n"), false);
  EXPECT_EQ(comm.name(), "communicator/fixture");
  EXPECT_EQ(comm.call([](loom::Communicator& c) { return c.size(); }), 3);
  float data[2] = {1.0f, 2.0f};
  comm.call([&](loom::Communicator& c) { c.all_reduce_sum(data, 2); });
  EXPECT_FLOAT_EQ(data[1], 6.0f);
}

TEST(PluginLoading, WrongAbiMajorIsRefusedQuotingBothVersions) {
  const std::string message = explicit_load_error("wrong_abi_major", "fixture-abi-major");
  EXPECT_NE(message.find(fmt::format("built for Loom plugin ABI 7.{}", LOOM_PLUGIN_ABI_MINOR)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(fmt::format("this host provides ABI 0.{}", LOOM_PLUGIN_ABI_MINOR)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("rebuild the plugin"), std::string::npos) << message;
}

TEST(PluginLoading, NewerMinorIsRefusedAskingForAnUpgrade) {
  const std::string message = explicit_load_error("newer_minor", "fixture-abi-minor");
  EXPECT_NE(message.find(fmt::format("ABI 0.99, newer than this host's ABI 0.{}", LOOM_PLUGIN_ABI_MINOR)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("upgrade Loom"), std::string::npos) << message;
}

TEST(PluginLoading, BadMagicIsRefusedBeforeAnythingElse) {
  const std::string message = explicit_load_error("bad_magic", "fixture-bad-magic");
  EXPECT_NE(message.find("not a Loom plugin descriptor (magic 0x12345678"), std::string::npos) << message;
}

TEST(PluginLoading, TooSmallDescriptorIsRefused) {
  const std::string message = explicit_load_error("bad_struct_size", "fixture-bad-size");
  EXPECT_NE(message.find("descriptor is 16 bytes"), std::string::npos) << message;
}

TEST(PluginLoading, OtherStandardLibraryIsRefused) {
  const std::string message = explicit_load_error("wrong_toolchain", "fixture-toolchain");
  EXPECT_NE(message.find("incompatible C++ toolchain (libc++"), std::string::npos) << message;
  EXPECT_NE(message.find("this host uses libstdc++"), std::string::npos) << message;
}

TEST(PluginLoading, LibraryWithoutEntryPointIsRefused) {
  const std::string message = explicit_load_error("no_entry", "fixture-no-entry");
  EXPECT_NE(message.find("loom_plugin_query is not exported"), std::string::npos) << message;
}

TEST(PluginLoading, NonElfFileIsRefusedWithLoaderMessage) {
  const std::string message = explicit_load_error("not_a_library", "text");
  EXPECT_NE(message.find("cannot be loaded"), std::string::npos) << message;
  EXPECT_NE(message.find("invalid ELF header"), std::string::npos) << message;
}

TEST(PluginLoading, UnresolvedSymbolFailsAtLoadNotAtFirstCall) {
  const std::string message = explicit_load_error("undefined_ref", "fixture-undefined");
  EXPECT_NE(message.find("undefined symbol: loom_fixture_function_that_does_not_exist"), std::string::npos)
      << message;
}

TEST(PluginLoading, MissingDependencyReportsTheLoadersMessage) {
  const std::string message = explicit_load_error("missing_dep", "fixture-missing-dep");
  EXPECT_NE(message.find("libloom-fixture-dependency.so: cannot open shared object file"), std::string::npos)
      << message;
}

TEST(PluginLoading, ScannedBadFilesAreRefusedNotFatal) {
  PluginRegistry registry(
      hermetic({fixture_dir("wrong_abi_major"), fixture_dir("good"), fixture_dir("not_a_library")}));
  EXPECT_EQ(registry.plugins().size(), 1u);
  ASSERT_EQ(registry.refused().size(), 2u);
  EXPECT_NE(registry.refused()[0].reason.find(fmt::format("ABI 7.{}", LOOM_PLUGIN_ABI_MINOR)),
            std::string::npos);
  EXPECT_NE(registry.refused()[1].reason.find("invalid ELF header"), std::string::npos);
}

TEST(PluginLoading, ThrowingFactoryBecomesPluginErrorNamingPluginAndComponent) {
  PluginRegistry registry(hermetic({fixture_dir("throwing_factory")}));
  const ComponentEntry* entry = registry.find(LOOM_KIND_COMMUNICATOR, "throwing");
  ASSERT_NE(entry, nullptr);
  try {
    registry.create<loom::Communicator>(*entry, testing::config(""), false);
    FAIL() << "create did not fail";
  } catch (const PluginError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("plugin 'throwing-factory', component communicator/throwing"), std::string::npos)
        << message;
    EXPECT_NE(message.find("factory exploded on purpose"), std::string::npos) << message;
  }
  // The process is healthy: the same registry still creates and uses other objects.
  PluginRegistry good(hermetic({fixture_dir("good")}));
  auto comm = good.create<loom::Communicator>(*good.find(LOOM_KIND_COMMUNICATOR, "fixture"),
                                              testing::config(""), false);
  EXPECT_EQ(comm.call([](loom::Communicator& c) { return c.size(); }), 1);
}

TEST(PluginLoading, ThrowingMethodBecomesPluginErrorThroughTheGuard) {
  PluginRegistry registry(hermetic({fixture_dir("throwing_virtual")}));
  auto comm = registry.create<loom::Communicator>(*registry.find(LOOM_KIND_COMMUNICATOR, "throwing"),
                                                  testing::config(""), false);
  try {
    comm.call([](loom::Communicator& c) { c.barrier(); });
    FAIL() << "barrier did not throw";
  } catch (const PluginError& e) {
    const std::string message = e.what();
    EXPECT_NE(
        message.find("plugin 'throwing-virtual', component communicator/throwing: barrier failed on purpose"),
        std::string::npos)
        << message;
  }
  EXPECT_EQ(comm.call([](loom::Communicator& c) { return c.rank(); }), 0);
}

TEST(PluginLoading, DuplicateComponentIsAnErrorNamingBothFiles) {
  PluginRegistry registry(hermetic({fixture_dir("duplicate")}));
  ASSERT_EQ(registry.conflicts().size(), 1u);
  try {
    registry.find(LOOM_KIND_COMMUNICATOR, "dup");
    FAIL() << "find did not report the conflict";
  } catch (const PluginLoadError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("communicator/dup is provided by two plugins"), std::string::npos) << message;
    EXPECT_NE(message.find(fixture_file("duplicate", "fixture-dup-a")), std::string::npos) << message;
    EXPECT_NE(message.find(fixture_file("duplicate", "fixture-dup-b")), std::string::npos) << message;
  }
}

TEST(PluginLoading, ComponentOutlivesTheRegistry) {
  Component<loom::Communicator> comm;
  {
    PluginRegistry registry(hermetic({fixture_dir("good")}));
    comm = registry.create<loom::Communicator>(*registry.find(LOOM_KIND_COMMUNICATOR, "fixture"),
                                               testing::config("count = 4"), false);
  }
  // The registry is gone; the library is still mapped because the object holds it.
  EXPECT_EQ(comm.call([](loom::Communicator& c) { return c.size(); }), 4);
}

TEST(PluginLoading, OptionProblemsComeBackAsRecipeErrorsWithLocations) {
  PluginRegistry registry(hermetic({fixture_dir("good")}));
  const ComponentEntry& entry = *registry.find(LOOM_KIND_COMMUNICATOR, "fixture");
  try {
    registry.create<loom::Communicator>(
        entry,
        testing::config("count = 30\nmode = \"lod\"\ncuont = 1\n",
                        "count\tr.toml:3:1\nmode\tr.toml:4:1\ncuont\tr.toml:5:1\n"),
        true);
    FAIL() << "bad options were accepted";
  } catch (const RecipeError& e) {
    ASSERT_EQ(e.problems().size(), 3u) << e.what();
    EXPECT_EQ(e.problems()[0], "r.toml:3:1: communicator.count: value 30 is out of range [1, 10]");
    EXPECT_EQ(e.problems()[1],
              "r.toml:4:1: communicator.mode: must be one of \"quiet\", \"loud\", got \"lod\"; did you mean "
              "'loud'?");
    EXPECT_NE(e.problems()[2].find("r.toml:5:1: communicator.cuont: unknown key; did you mean 'count'?"),
              std::string::npos)
        << e.problems()[2];
  }
}

// Communicators come in interface versions 1 (communicator/local) and 2 (Communicator2, which
// communicator/mpi and /nccl declare for hosts from before ExtendedCollectives); the host loads
// both, drives both through Communicator and its named interfaces, and refuses any other.
TEST(PluginLoading, CommunicatorInterfaceVersionsOneAndTwoAreAcceptedOthersNamed) {
  auto problem_with = [](uint32_t kind, uint32_t version) {
    loom_component_desc component{
        sizeof(loom_component_desc),
        kind,
        "x",
        "0.1.0",
        version,
        "test",
        [](const loom_create_args*, void**, loom_error_buffer*) noexcept { return LOOM_OK; },
        [](void*) noexcept {},
        nullptr};
    const loom_plugin_desc plugin{LOOM_PLUGIN_MAGIC,
                                  sizeof(loom_plugin_desc),
                                  LOOM_PLUGIN_ABI_MAJOR,
                                  LOOM_PLUGIN_ABI_MINOR,
                                  loom::kSdkVersion,
                                  loom::this_toolchain(),
                                  "p",
                                  "0.1.0",
                                  "test",
                                  1,
                                  &component,
                                  {nullptr, nullptr, nullptr, nullptr}};
    return descriptor_problem(&plugin);
  };
  EXPECT_EQ(problem_with(LOOM_KIND_COMMUNICATOR, loom::Communicator::kInterfaceVersion), "");
  EXPECT_EQ(problem_with(LOOM_KIND_COMMUNICATOR, loom::Communicator2::kInterfaceVersion), "");
  const std::string newer = problem_with(LOOM_KIND_COMMUNICATOR, 3);
  EXPECT_NE(newer.find(fmt::format(
                "interface version 3 (plugin built against Loom SDK {}), newer than this host's version 2",
                loom::kSdkVersion)),
            std::string::npos)
      << newer;
  const std::string dataset = problem_with(LOOM_KIND_DATASET, 2);
  EXPECT_NE(dataset.find(fmt::format(
                "interface version 2 (plugin built against Loom SDK {}), newer than this host's version 1",
                loom::kSdkVersion)),
            std::string::npos)
      << dataset;
  const std::string older = problem_with(LOOM_KIND_COMMUNICATOR, 0);
  EXPECT_NE(older.find("interface version 0, this host supports versions 1 to 2"), std::string::npos)
      << older;
}

}  // namespace
}  // namespace loom::host
