// The ELF checks made before dlopen; see plugin_file_check.hpp.
#include "plugin_loading/plugin_file_check.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace loom::host {
namespace {

// The machine this host was built for: a plugin for another one cannot be loaded.
#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
constexpr const char* kHostMachineName = "x86-64";
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
constexpr const char* kHostMachineName = "AArch64";
#elif defined(__powerpc64__)
constexpr uint16_t kHostMachine = EM_PPC64;
constexpr const char* kHostMachineName = "PowerPC64";
#else
constexpr uint16_t kHostMachine = EM_NONE;  // unknown here: not checked
constexpr const char* kHostMachineName = "this machine";
#endif

// The program header table can hold at most 65,535 entries; reading more is never needed.
constexpr uint64_t kMaxHeaderBytes = sizeof(Elf64_Ehdr) + 0xffffull * sizeof(Elf64_Phdr);

const char* kWhatToDo = "the file is truncated or damaged: reinstall or rebuild the plugin";

// begin + count × size ≤ limit, without overflow.
bool fits(uint64_t begin, uint64_t count, uint64_t size, uint64_t limit) {
  if (begin > limit) return false;
  if (size != 0 && count > (limit - begin) / size) return false;
  return true;
}

const char* segment_type_name(uint32_t type) {
  switch (type) {
    case PT_LOAD:
      return "PT_LOAD";
    case PT_DYNAMIC:
      return "PT_DYNAMIC";
    case PT_INTERP:
      return "PT_INTERP";
    case PT_NOTE:
      return "PT_NOTE";
    case PT_TLS:
      return "PT_TLS";
    case PT_GNU_EH_FRAME:
      return "PT_GNU_EH_FRAME";
    case PT_GNU_RELRO:
      return "PT_GNU_RELRO";
    default:
      return "segment";
  }
}

std::string too_short(uint64_t file_size) {
  return fmt::format("cannot be loaded: the file is {} bytes, shorter than an ELF header ({} bytes); {}",
                     file_size, sizeof(Elf64_Ehdr), kWhatToDo);
}

}  // namespace

std::string elf_image_problem(std::span<const std::byte> image, uint64_t file_size) {
  if (image.size() > file_size) return "cannot be loaded: more bytes were read than the file holds";
  const auto* ident = reinterpret_cast<const unsigned char*>(image.data());
  if (image.size() < SELFMAG || std::memcmp(ident, ELFMAG, SELFMAG) != 0)
    return image.size() < SELFMAG && file_size < SELFMAG
               ? too_short(file_size)
               : "cannot be loaded: invalid ELF header (the file does not start with \\x7fELF): not a shared "
                 "library";
  if (image.size() < sizeof(Elf64_Ehdr)) {
    if (image.size() > EI_CLASS && ident[EI_CLASS] == ELFCLASS32)
      return "cannot be loaded: a 32-bit ELF file; this host loads 64-bit plugins";
    return too_short(file_size);
  }
  if (ident[EI_CLASS] != ELFCLASS64)
    return ident[EI_CLASS] == ELFCLASS32
               ? "cannot be loaded: a 32-bit ELF file; this host loads 64-bit plugins"
               : fmt::format("cannot be loaded: invalid ELF class {}", ident[EI_CLASS]);
  if (ident[EI_DATA] != ELFDATA2LSB)
    return fmt::format(
        "cannot be loaded: ELF data encoding {} is not little-endian; this host is little-endian",
        ident[EI_DATA]);
  if (ident[EI_VERSION] != EV_CURRENT)
    return fmt::format("cannot be loaded: ELF version {} (expected {})", ident[EI_VERSION], EV_CURRENT);

  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof header);
  if (header.e_type != ET_DYN)
    return fmt::format("cannot be loaded: ELF type {} is not a shared library (ET_DYN = {})", header.e_type,
                       ET_DYN);
  if (kHostMachine != EM_NONE && header.e_machine != kHostMachine)
    return fmt::format(
        "cannot be loaded: built for ELF machine {}, this host is {} (machine {}): rebuild the plugin for "
        "this machine",
        header.e_machine, kHostMachineName, kHostMachine);
  if (header.e_ehsize < sizeof(Elf64_Ehdr))
    return fmt::format("cannot be loaded: ELF header size {} is smaller than {}; {}", header.e_ehsize,
                       sizeof(Elf64_Ehdr), kWhatToDo);
  if (header.e_phnum == 0 || header.e_phentsize != sizeof(Elf64_Phdr))
    return fmt::format(
        "cannot be loaded: malformed program header table ({} entries of {} bytes, expected entries of "
        "{}); {}",
        header.e_phnum, header.e_phentsize, sizeof(Elf64_Phdr), kWhatToDo);
  if (!fits(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), file_size))
    return fmt::format(
        "cannot be loaded: the program header table (offset {}, {} entries) runs past the end of the file "
        "({} bytes); {}",
        header.e_phoff, header.e_phnum, file_size, kWhatToDo);
  if (!fits(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), image.size()))
    return "cannot be loaded: the program header table was not read";

  bool loadable = false;
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, image.data() + header.e_phoff + static_cast<uint64_t>(i) * sizeof segment,
                sizeof segment);
    loadable = loadable || segment.p_type == PT_LOAD;
    if (!fits(segment.p_offset, 1, segment.p_filesz, file_size))
      return fmt::format(
          "cannot be loaded: program header {} ({}) needs file bytes [{}, {}) but the file has {}; {}", i,
          segment_type_name(segment.p_type), segment.p_offset,
          // The end as the header claims it, saturated where the sum overflows.
          segment.p_filesz > UINT64_MAX - segment.p_offset ? UINT64_MAX : segment.p_offset + segment.p_filesz,
          file_size, kWhatToDo);
    if (segment.p_type == PT_LOAD && segment.p_filesz > segment.p_memsz)
      return fmt::format(
          "cannot be loaded: program header {} (PT_LOAD) has more file bytes ({}) than memory bytes ({}); {}",
          i, segment.p_filesz, segment.p_memsz, kWhatToDo);
  }
  // Normally the last bytes of a library: a file cut short anywhere ends before it.
  if (header.e_shoff != 0 && header.e_shentsize != sizeof(Elf64_Shdr))
    return fmt::format(
        "cannot be loaded: malformed section header table (entries of {} bytes, expected {}); {}",
        header.e_shentsize, sizeof(Elf64_Shdr), kWhatToDo);
  if (header.e_shoff != 0 && !fits(header.e_shoff, header.e_shnum, sizeof(Elf64_Shdr), file_size))
    return fmt::format(
        "cannot be loaded: the section header table (offset {}, {} entries) runs past the end of the "
        "file ({} bytes); {}",
        header.e_shoff, header.e_shnum, file_size, kWhatToDo);
  if (!loadable) return fmt::format("cannot be loaded: no loadable segment (PT_LOAD); {}", kWhatToDo);
  return "";
}

std::string plugin_file_problem(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot be loaded: cannot be opened: {}", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) return fmt::format("cannot be loaded: fstat failed: {}", std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return "cannot be loaded: not a regular file";
  const auto file_size = static_cast<uint64_t>(info.st_size);

  // The header first; then as much of the file as the program header table needs.
  auto read_prefix = [&](uint64_t wanted, std::vector<std::byte>& out) -> std::string {
    out.resize(static_cast<size_t>(std::min(wanted, file_size)));
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fmt::format("cannot be loaded: read failed: {}", std::strerror(errno));
      if (n == 0) break;  // shrank while read: checked against what was read
      done += static_cast<size_t>(n);
    }
    out.resize(done);
    return "";
  };
  std::vector<std::byte> image;
  if (std::string problem = read_prefix(sizeof(Elf64_Ehdr), image); !problem.empty()) return problem;
  if (image.size() < sizeof(Elf64_Ehdr)) return elf_image_problem(image, file_size);
  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof header);
  uint64_t table_end = sizeof(Elf64_Ehdr);
  if (fits(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), kMaxHeaderBytes))
    table_end = std::max(table_end, header.e_phoff + uint64_t{header.e_phnum} * sizeof(Elf64_Phdr));
  if (table_end > image.size())
    if (std::string problem = read_prefix(table_end, image); !problem.empty()) return problem;
  return elf_image_problem(image, file_size);
}

}  // namespace loom::host
