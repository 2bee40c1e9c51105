#!/usr/bin/env python3
"""Lists the GPU code objects embedded in a CUDA host binary by reading its fatbin headers.

Used by the unit test backend_cuda.fatbin_architectures when the toolkit ships no cuobjdump.
Output mirrors `cuobjdump --list-elf/--list-ptx`: one line per entry, "ELF sm_90" or "PTX
compute_90". With --check it requires ELF sm_80, ELF sm_90 and PTX compute_90 and exits 1 otherwise.

Layout (as written by nvcc's fatbinary tool): a blob starts with the header
  u32 magic 0xBA55ED50, u16 version, u16 header_size, u64 entries_size
followed by entries, each
  u16 kind (1 = PTX, 2 = ELF), u16 version, u32 header_size, u64 payload_size, ...,
  u32 arch at byte 28 (e.g. 90), the payload starting header_size bytes after the entry.
"""
import struct
import sys

MAGIC = 0xBA55ED50


def entries(data):
    position = data.find(struct.pack("<I", MAGIC))
    while position >= 0:
        magic, version, header_size, entries_size = struct.unpack_from("<IHHQ", data, position)
        if magic == MAGIC and header_size >= 16 and position + header_size + entries_size <= len(data):
            entry = position + header_size
            end = entry + entries_size
            while entry + 32 <= end:
                kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
                arch = struct.unpack_from("<I", data, entry + 28)[0]
                if kind == 1:
                    yield "PTX compute_%d" % arch
                elif kind == 2:
                    yield "ELF sm_%d" % arch
                if entry_header == 0:
                    break
                entry += entry_header + payload
            position = data.find(struct.pack("<I", MAGIC), max(end, position + 4))
        else:
            position = data.find(struct.pack("<I", MAGIC), position + 4)


def main(argv):
    check = "--check" in argv
    paths = [a for a in argv[1:] if a != "--check"]
    if len(paths) != 1:
        print("usage: list_fatbin.py [--check] BINARY", file=sys.stderr)
        return 2
    with open(paths[0], "rb") as handle:
        found = sorted(set(entries(handle.read())))
    for line in found:
        print(line)
    if check:
        missing = [e for e in ("ELF sm_80", "ELF sm_90", "PTX compute_90") if e not in found]
        if missing:
            print("missing: " + ", ".join(missing), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
