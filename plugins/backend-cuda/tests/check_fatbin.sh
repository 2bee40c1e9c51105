#!/bin/sh
# Usage: check_fatbin.sh CUOBJDUMP PLUGIN.so — the plugin must carry SASS for sm_80 and sm_90 and
# PTX for compute_90 (CUDA_ARCHITECTURES "80-real;90-real;90-virtual").
set -eu
cuobjdump="$1"
plugin="$2"
elf=$("$cuobjdump" --list-elf "$plugin")
ptx=$("$cuobjdump" --list-ptx "$plugin")
status=0
for arch in sm_80 sm_90; do
  echo "$elf" | grep -q "$arch" || { echo "no $arch ELF in $plugin" >&2; status=1; }
done
echo "$ptx" | grep -q compute_90 || { echo "no compute_90 PTX in $plugin" >&2; status=1; }
[ $status -eq 0 ] && echo "ok: sm_80 and sm_90 SASS, compute_90 PTX"
exit $status
