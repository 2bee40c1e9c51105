// A plugin file cut short or damaged is refused with its reason before dlopen, which would otherwise
// map pages past the end of the file and die with SIGBUS on first touch.
#include <elf.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>

#include "plugin_loading/plugin_file_check.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "plugin_loading/plugin_test_support.hpp"
#include "recipe/errors.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

using testing::fixture_file;
using testing::hermetic;

std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

std::string problem_of(const std::vector<std::byte>& bytes) {
  return elf_image_problem(bytes, bytes.size());
}

Elf64_Ehdr header_of(const std::vector<std::byte>& bytes) {
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof header);
  return header;
}

// A scratch directory holding one plugin file written from `bytes`.
class PluginFileCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = read_bytes(fixture_file("good", "fixture-good"));
    ASSERT_GT(good_.size(), 4096u);
    directory_ = fs::temp_directory_path() /
                 ("loom-plugin-check-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                  "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string write_plugin(const std::vector<std::byte>& bytes) {
    const fs::path path = directory_ / "libloom-damaged.so";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path.string();
  }

  std::vector<std::byte> good_;
  fs::path directory_;
};

TEST_F(PluginFileCheck, AWholePluginIsSound) {
  EXPECT_EQ(problem_of(good_), "");
  EXPECT_EQ(plugin_file_problem(fixture_file("good", "fixture-good")), "");
}

TEST_F(PluginFileCheck, EveryTruncationIsRefusedNeverLoaded) {
  // Cut at every 97th byte (and just short of the end): each prefix is refused by the check alone.
  std::vector<size_t> sizes;
  for (size_t size = 0; size < good_.size(); size += 97) sizes.push_back(size);
  sizes.push_back(good_.size() - 1);
  for (size_t size : sizes) {
    const std::vector<std::byte> prefix(good_.begin(), good_.begin() + static_cast<std::ptrdiff_t>(size));
    EXPECT_NE(problem_of(prefix), "") << "a prefix of " << size << " bytes passed";
  }
}

TEST_F(PluginFileCheck, ASegmentPastTheEndIsNamed) {
  // Keep the headers and the section table's claim honest, but cut the file inside a segment.
  const Elf64_Ehdr header = header_of(good_);
  Elf64_Phdr last_load{};
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, good_.data() + header.e_phoff + i * sizeof segment, sizeof segment);
    if (segment.p_type == PT_LOAD) last_load = segment;
  }
  ASSERT_GT(last_load.p_filesz, 0u);
  std::vector<std::byte> cut(good_.begin(),
                             good_.begin() + static_cast<std::ptrdiff_t>(last_load.p_offset + 1));
  Elf64_Ehdr no_sections = header;
  no_sections.e_shoff = 0, no_sections.e_shnum = 0;  // a stripped file has no section table to catch it
  std::memcpy(cut.data(), &no_sections, sizeof no_sections);
  const std::string problem = problem_of(cut);
  EXPECT_NE(problem.find("(PT_LOAD) needs file bytes"), std::string::npos) << problem;
  EXPECT_NE(problem.find("truncated or damaged"), std::string::npos) << problem;
}

TEST_F(PluginFileCheck, MalformedHeadersAreRefusedWithTheirReason) {
  auto with = [&](auto change) {
    std::vector<std::byte> bytes = good_;
    Elf64_Ehdr header = header_of(bytes);
    change(header, bytes);
    std::memcpy(bytes.data(), &header, sizeof header);
    return problem_of(bytes);
  };
  EXPECT_NE(with([](Elf64_Ehdr& h, auto&) { h.e_ident[EI_CLASS] = ELFCLASS32; }).find("32-bit"),
            std::string::npos);
  EXPECT_NE(with([](Elf64_Ehdr& h, auto&) { h.e_ident[EI_DATA] = ELFDATA2MSB; }).find("little-endian"),
            std::string::npos);
  EXPECT_NE(with([](Elf64_Ehdr& h, auto&) { h.e_type = ET_EXEC; }).find("not a shared library"),
            std::string::npos);
  EXPECT_NE(
      with([](Elf64_Ehdr& h, auto&) { h.e_machine = EM_S390; }).find("rebuild the plugin for this machine"),
      std::string::npos);
  EXPECT_NE(with([](Elf64_Ehdr& h, auto&) { h.e_phentsize = 12; }).find("malformed program header table"),
            std::string::npos);
  EXPECT_NE(with([](Elf64_Ehdr& h, auto&) { h.e_phoff = UINT64_MAX - 8; }).find("program header table"),
            std::string::npos);
  EXPECT_NE(with([](Elf64_Ehdr& h, auto&) { h.e_shoff = UINT64_MAX - 8; }).find("section header table"),
            std::string::npos);
  // A segment whose offset + size overflows 64 bits.
  const std::string overflow = with([](Elf64_Ehdr& h, std::vector<std::byte>& bytes) {
    Elf64_Phdr segment;
    std::memcpy(&segment, bytes.data() + h.e_phoff, sizeof segment);
    segment.p_offset = UINT64_MAX - 4, segment.p_filesz = 16;
    std::memcpy(bytes.data() + h.e_phoff, &segment, sizeof segment);
  });
  EXPECT_NE(overflow.find("needs file bytes"), std::string::npos) << overflow;
  EXPECT_NE(problem_of(std::vector<std::byte>(3, std::byte{0x7f})).find("shorter than an ELF header"),
            std::string::npos);
  EXPECT_NE(problem_of({std::byte{'#'}, std::byte{'!'}, std::byte{'/'}, std::byte{'b'}, std::byte{'i'}})
                .find("invalid ELF header"),
            std::string::npos);
}

TEST_F(PluginFileCheck, ATruncatedPluginInASearchedFolderIsRefusedAndTheOthersLoad) {
  // The crash this check prevents: cut inside the code segment, dlopen would die with SIGBUS.
  write_plugin(
      std::vector<std::byte>(good_.begin(), good_.begin() + static_cast<std::ptrdiff_t>(good_.size() / 3)));
  PluginRegistry registry(hermetic({directory_.string(), testing::fixture_dir("good")}));
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0]->name(), "fixture-good");
  ASSERT_EQ(registry.refused().size(), 1u);
  EXPECT_EQ(registry.refused()[0].path, (directory_ / "libloom-damaged.so").string());
  EXPECT_NE(registry.refused()[0].reason.find("truncated or damaged"), std::string::npos)
      << registry.refused()[0].reason;
}

TEST_F(PluginFileCheck, ATruncatedPluginNamedExplicitlyIsAnError) {
  const std::string path = write_plugin(std::vector<std::byte>(good_.begin(), good_.begin() + 2000));
  try {
    PluginRegistry registry(hermetic({}, {path}));
    ADD_FAILURE() << "a truncated explicit plugin loaded";
  } catch (const PluginLoadError& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(e.reason().find("truncated or damaged"), std::string::npos) << e.reason();
  }
}

TEST_F(PluginFileCheck, UnreadableAndSpecialFilesAreRefused) {
  EXPECT_NE(plugin_file_problem((directory_ / "absent.so").string()).find("cannot be opened"),
            std::string::npos);
  EXPECT_NE(plugin_file_problem(directory_.string()).find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace loom::host
