#!/usr/bin/env bash
# Makes an installed Loom tree relocatable and self-contained: copies every shared library that
# bin/loom, lib/loom/plugins/*.so and lib/loom/gpu-check/* load (ldd's transitive closure), except
# glibc's and the C++ runtime's, into lib/loom/lib/, and points the RUNPATHs there relative to
# $ORIGIN:
#   bin/loom                    -> $ORIGIN/../lib/loom/lib
#   lib/loom/plugins/*.so       -> $ORIGIN/../lib
#   lib/loom/gpu-check/*        -> $ORIGIN/../lib  (the GPU check's test programs, when built)
#   lib/loom/lib/*.so*          -> $ORIGIN  (DT_RUNPATH is not inherited by a library's own deps)
# Why glibc and libstdc++/libgcc_s stay out: docs/decisions/sdk-packaging.md.
# Usage: bundle-libraries.sh INSTALL_ROOT   (needs ldd and patchelf)
set -euo pipefail
root=$1
command -v patchelf >/dev/null || { echo "bundle-libraries: patchelf is missing (apt-get install patchelf)" >&2; exit 1; }
bundle=$root/lib/loom/lib
mkdir -p "$bundle"

# Provided by every glibc-based distribution (glibc itself) or kept shared with user plugins
# (the C++ runtime, which plugins must share with the host).
system_library='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libmvec\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so|libnsl\.so|libstdc\+\+\.so|libgcc_s\.so)'

mapfile -t plugins < <(find "$root/lib/loom/plugins" -name 'libloom-*.so' | sort)
# The GPU check's test programs (packaging/gpu_check_kit.cmake), when the build has them.
mapfile -t kit < <(find "$root/lib/loom/gpu-check" -type f 2>/dev/null | sort)
elves=("$root/bin/loom" "${plugins[@]}" "${kit[@]}")
declare -A copied=()
for elf in "${elves[@]}"; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = "not" ]; then echo "bundle-libraries: $elf needs $name, which is not found" >&2; exit 1; fi
    [[ $name =~ $system_library ]] && continue
    [ -n "${copied[$name]:-}" ] && continue
    cp -L "$path" "$bundle/$name"
    chmod 0644 "$bundle/$name"
    copied[$name]=$path
  done < <(ldd "$elf")
done

for lib in "$bundle"/*; do patchelf --set-rpath '$ORIGIN' "$lib"; done
patchelf --set-rpath '$ORIGIN/../lib/loom/lib' "$root/bin/loom"
for elf in "${plugins[@]}" "${kit[@]}"; do patchelf --set-rpath '$ORIGIN/../lib' "$elf"; done
echo "bundle-libraries: ${#copied[@]} libraries into $bundle:"
for name in $(printf '%s\n' "${!copied[@]}" | sort); do echo "  $name (${copied[$name]})"; done
