// libFuzzer target for the ELF check the host makes before it dlopens a plugin
// (host/plugin_loading/plugin_file_check.hpp). The input is a plugin file's bytes. Properties:
// (a) elf_image_problem accepts the image exactly when an independent reading of the ELF header here
//     finds what dlopen relies on: every loaded byte inside the file, a PT_LOAD, sane table entry
//     sizes (no false refusal of a sound file, no sound verdict for a damaged one);
// (b) plugin_file_problem on the same bytes written to a file, which reads only the prefix the
//     program header table needs, gives the same verdict and message as the whole image;
// (c) any prefix of the file, with the file's size, is judged without reading past the prefix.
#include <elf.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "fuzz_support.hpp"
#include "plugin_loading/plugin_file_check.hpp"

using loom_fuzz::require;

namespace {

using Wide = unsigned __int128;

// The ELF structure dlopen maps, checked in 128-bit arithmetic, independently of the host's code.
bool sound_elf(const std::uint8_t* data, std::size_t size) {
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(data, ELFMAG, SELFMAG) != 0) return false;
  if (data[EI_CLASS] != ELFCLASS64 || data[EI_DATA] != ELFDATA2LSB || data[EI_VERSION] != EV_CURRENT) return false;
  Elf64_Ehdr header;
  std::memcpy(&header, data, sizeof header);
  if (header.e_type != ET_DYN || header.e_machine != EM_X86_64 || header.e_ehsize < sizeof(Elf64_Ehdr)) return false;
  if (header.e_phnum == 0 || header.e_phentsize != sizeof(Elf64_Phdr)) return false;
  if (Wide{header.e_phoff} + Wide{header.e_phnum} * sizeof(Elf64_Phdr) > size) return false;
  bool loadable = false;
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, data + header.e_phoff + i * sizeof segment, sizeof segment);
    if (Wide{segment.p_offset} + segment.p_filesz > size) return false;
    if (segment.p_type == PT_LOAD && segment.p_filesz > segment.p_memsz) return false;
    loadable = loadable || segment.p_type == PT_LOAD;
  }
  if (header.e_shoff != 0) {
    if (header.e_shentsize != sizeof(Elf64_Shdr)) return false;
    if (Wide{header.e_shoff} + Wide{header.e_shnum} * sizeof(Elf64_Shdr) > size) return false;
  }
  return loadable;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  const std::string whole = loom::host::elf_image_problem(bytes, size);
#if defined(__x86_64__)
  require(whole.empty() == sound_elf(data, size), "elf_image_problem agrees with the independent ELF reading");
#endif
  require(whole.empty() || whole.rfind("cannot be loaded: ", 0) == 0, "every refusal says it cannot be loaded");

  const std::string path =
      loom_fuzz::write_scratch_file("libloom-fuzz.so", std::string_view(reinterpret_cast<const char*>(data), size));
  require(loom::host::plugin_file_problem(path) == whole, "the file check reads what the image check needs");

  // A prefix as the reader may hold it: the verdict never depends on bytes it was not given.
  for (std::size_t cut : {std::size_t{0}, std::size_t{4}, sizeof(Elf64_Ehdr), size / 2})
    if (cut <= size) (void)loom::host::elf_image_problem(bytes.first(cut), size);
  return 0;
}
