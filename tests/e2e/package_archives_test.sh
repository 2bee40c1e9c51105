#!/usr/bin/env bash
# CPack's two packages (packaging/): the .deb's Depends are generated from the linked libraries
# and it holds the install layout under /usr; the .tar.gz carries every non-glibc library it needs
# in lib/loom/lib with $ORIGIN-relative RUNPATHs, so it runs where it is unpacked with nothing from
# the build machine's library directories but glibc and the C++ runtime.
# (On a truly foreign root: scripts/fresh-machine/check-packages.)
# Usage: package_archives_test.sh BUILD_DIR
set -uo pipefail
build=$(realpath "$1")
work=$(mktemp -d /tmp/loom-package-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
for tool in cpack dpkg-deb dpkg-shlibdeps patchelf; do
  command -v $tool > /dev/null || { echo "SKIP: $tool is missing (scripts/setup installs it)"; exit 77; }
done

if ! (cd "$work" && cpack --config "$build/CPackConfig.cmake" -B "$work/out") > "$work/cpack.log" 2>&1; then
  tail -30 "$work/cpack.log"; echo "FAIL: cpack"; exit 1
fi
deb=$(ls "$work"/out/*.deb 2>/dev/null | head -1)
tgz=$(ls "$work"/out/*.tar.gz 2>/dev/null | head -1)
[ -f "$deb" ] && [ -f "$tgz" ] || { ls -la "$work/out"; echo "FAIL: cpack made no .deb and .tar.gz"; exit 1; }
echo "packages: $(du -h "$deb" | cut -f1) $(basename "$deb"), $(du -h "$tgz" | cut -f1) $(basename "$tgz")"

# .deb: generated Depends naming the libraries the binaries link.
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for package in libc6 libstdc++6 libhdf5 libssl3; do
  echo "$depends" | grep -q "$package" || fail ".deb Depends lacks $package"
done
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for path in ./usr/bin/loom ./usr/lib/loom/plugins/libloom-wordpiece.so ./usr/lib/cmake/LoomSDK/LoomSDKConfig.cmake \
            ./usr/include/loom/sdk/plugin.hpp ./usr/share/loom/configs/quickstart/finetune-spam.toml \
            ./usr/share/doc/loom/plugins.md; do
  echo "$contents" | grep -qx "$path" || fail ".deb lacks $path"
done
echo "$contents" | grep -q '/lib/loom/lib/' && fail ".deb bundles libraries (it should depend on packages)"

# .tar.gz: bundled libraries, relative RUNPATHs, and it runs with no loader help.
mkdir -p "$work/unpacked" && tar -C "$work/unpacked" -xzf "$tgz"
root=$(ls -d "$work"/unpacked/*/ | head -1)
root=${root%/}
ls "$root/lib/loom/lib" | grep -q '^libhdf5' || fail ".tar.gz does not bundle libhdf5"
ls "$root/lib/loom/lib" | grep -Eq '^(libc|libstdc\+\+)\.so' && fail ".tar.gz bundles glibc or libstdc++"
[ "$(patchelf --print-rpath "$root/bin/loom")" = '$ORIGIN/../lib/loom/lib' ] || fail "bin/loom RUNPATH"
for elf in "$root/bin/loom" "$root"/lib/loom/plugins/*.so "$root"/lib/loom/lib/*; do
  # Every dependency resolves, and every non-glibc one from inside the archive.
  ldd "$elf" | grep -q "not found" && fail "$elf has an unresolved dependency"
  outside=$(ldd "$elf" | awk '$2 == "=>" {print $1, $3}' | grep -v " $root/" |
            grep -Ev '^(ld-linux|libc|libm|libmvec|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s)\.so' || true)
  [ -z "$outside" ] || fail "$elf loads from outside the archive: $outside"
done
env -i PATH=/usr/bin:/bin HOME="$work" "$root/bin/loom" plugins > "$work/plugins.txt" 2>&1 ||
  { cat "$work/plugins.txt"; fail "the unpacked loom plugins failed"; }
grep -q "$root/lib/loom/plugins/libloom-datasets.so" "$work/plugins.txt" || fail "unpacked loom does not find its plugins"

# With backend/cuda: the GPU check and what it runs (packaging/gpu_check_kit.cmake), its programs
# loading only the archive's libraries; on a machine without a GPU its --allow-no-gpu run, which
# runs the test programs' GPU-free tests against the packaged plugin.
if [ -f "$root/lib/loom/plugins/libloom-backend-cuda.so" ]; then
  for path in lib/loom/gpu-check/loom_backend_cuda_tests lib/loom/gpu-check/loom_backend_ops_test \
              lib/loom/gpu-check/loom_parity_compare \
              lib/loom/gpu-check/loom_attention_bench share/loom/scripts/gpu-check \
              share/loom/scripts/gpu_check_learning.py share/loom/configs/quickstart/gpu-pretrain-phase1.toml \
              share/loom/configs/models/bert-small-v8192.json \
              share/loom/scripts/bench/compare-pytorch-cuda share/loom/scripts/bench/pytorch_bert_train.py \
              share/loom/scripts/bench/compare-attention share/loom/scripts/bench/pytorch_attention.py \
              share/loom/scripts/gpu_check_inference.py share/loom/scripts/gpu_check_kernels.py \
              share/loom/scripts/gpu_check_races.py share/loom/scripts/gpu_check_unpadded.py \
              share/loom/scripts/gpu_check_summary.py \
              share/loom/tests/parity/run_unpadded.sh share/loom/configs/models/modernbert-base.json \
              share/loom/scripts/bench/compare-pytorch-inference \
              share/loom/scripts/bench/pytorch_bert_inference.py \
              share/loom/scripts/bench/pytorch_modernbert_train.py \
              share/loom/tests/e2e/gpu_training_test.sh \
              share/loom/tests/gpu/gpu_requirement.sh share/loom/tests/parity/run_parity.sh \
              share/loom/tests/fixtures/train/micro-bert.json; do
    [ -e "$root/$path" ] || fail ".tar.gz lacks $path"
  done
  for elf in "$root"/lib/loom/gpu-check/*; do
    [ "$(patchelf --print-rpath "$elf")" = '$ORIGIN/../lib' ] || fail "$elf RUNPATH"
    ldd "$elf" | grep -q "not found" && fail "$elf has an unresolved dependency"
  done
  # The attention benchmark finds the archive's plugins by itself (backend/cpu here: no GPU needed).
  env -i PATH=/usr/bin:/bin HOME="$work" "$root/lib/loom/gpu-check/loom_attention_bench" --backend cpu \
    --batch 1 --heads 1 --seq 8 --warmup 0 --iterations 1 > "$work/attention.json" 2>&1 &&
    grep -q '"backend": "backend/cpu"' "$work/attention.json" ||
    { cat "$work/attention.json"; fail "the unpacked loom_attention_bench on backend/cpu"; }
  if ! { command -v nvidia-smi > /dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
    env -i PATH=/usr/bin:/bin HOME="$work" "$root/share/loom/scripts/gpu-check" "$work/gpu-check" --allow-no-gpu \
      > "$work/gpu-check.log" 2>&1 || { cat "$work/gpu-check.log"; fail "the unpacked gpu-check --allow-no-gpu"; }
    /usr/bin/python3 - "$work/gpu-check/summary.json" <<'PY' || fail "the unpacked gpu-check's summary"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["layout"] == "package", s["layout"]
assert s["parts"]["gpu_tests"]["passed"] > 0 and s["parts"]["gpu_tests"]["failed"] == 0, s["parts"]["gpu_tests"]
assert s["ok"], s
PY
    echo "unpacked gpu-check --allow-no-gpu: $(tail -1 "$work/gpu-check/summary.txt" 2>/dev/null)"
  fi
fi

if [ $failures -gt 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "ok: .deb with generated Depends, self-contained relocatable .tar.gz"
