// Checks a plugin file's ELF structure before the dynamic loader maps it.
//
// dlopen maps each loadable segment of a shared library straight from the file; a segment that
// claims bytes past the end of the file (a truncated copy, an interrupted download, a disk that
// filled up during `make install`) is mapped anyway, and the first touch of that page kills the
// process with SIGBUS — no exception, no message, in every command that searches the folder. So
// the host reads the ELF header and the program header table itself and refuses a file whose
// header or tables are malformed or whose segments or section header table lie beyond its size.
// What is checked (every bound computed without overflow):
//   - the ELF identification: magic, 64-bit class, little-endian, ELF version 1;
//   - a shared object (ET_DYN) for this host's machine;
//   - the program header table: entry size, inside the file; at least one PT_LOAD;
//   - every segment's file bytes [p_offset, p_offset + p_filesz) inside the file;
//   - the section header table (when there is one) inside the file: it is normally the last thing
//     in a library, so a file cut short anywhere is caught here even when its segments survive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace loom::host {

/// Why `image` cannot be a plugin for this host, or "" when its ELF structure is sound. `image`
/// holds the file's first bytes — at least the ELF header and, when it lies within the file, the
/// program header table — and `file_size` is the whole file's size. Pure: fuzzed on bytes alone.
std::string elf_image_problem(std::span<const std::byte> image, uint64_t file_size);

/// Reads what elf_image_problem needs from the file at `path` and checks it; "" when sound.
/// A file that cannot be read gives its system error.
std::string plugin_file_problem(const std::string& path);

}  // namespace loom::host
