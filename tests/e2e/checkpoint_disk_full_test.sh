#!/usr/bin/env bash
# A checkpoint that fails on a full disk: on a tmpfs with room for one checkpoint and a
# half, `loom run` writes step 10, fails at step 20 with "No space left on device" (exit 1), and
# leaves no .partial-* directory behind; step 10 stays intact (MANIFEST verifies, weights equal to
# the same run's step 10 on a roomy disk) and `latest` still names it.
# Needs root (CAP_SYS_ADMIN) to mount the tmpfs: skips (exit 77) with the reason otherwise.
# Usage: checkpoint_disk_full_test.sh LOOM COMPARE_WEIGHTS SOURCE_DIR
set -uo pipefail

# In a private mount namespace the tmpfs disappears with this script however it ends (even SIGKILL
# from a ctest timeout); the EXIT trap below unmounts it as well, for systems without unshare.
if [ -z "${LOOM_DISK_FULL_NAMESPACE:-}" ] && unshare --mount --propagation private true 2> /dev/null; then
  LOOM_DISK_FULL_NAMESPACE=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
probe=$(mktemp -d /tmp/loom-tmpfs-probe-XXXXXX)
if ! mount -t tmpfs -o size=1m loom-probe "$probe" 2> "$probe.err"; then
  echo "SKIP: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): $(cat "$probe.err")"
  rm -rf "$probe" "$probe.err"; exit 77
fi
umount "$probe"; rm -rf "$probe" "$probe.err"

loom=$1
compare=$2
src=$3
source "$(dirname "$0")/train_fixture.sh"
disk="$work/small-disk"
unmount() { mountpoint -q "$disk" && { umount "$disk" || umount -l "$disk"; }; }
trap 'unmount; rm -rf "$work"' EXIT
trap 'exit 143' TERM INT HUP  # through the EXIT trap

# The same recipe on a roomy disk: its step-10 checkpoint is the reference (keep = 3 keeps it).
write_recipe full 30 1 8
"$loom" run "$work/full.toml" --set run.name=roomy --quiet > "$work/roomy.log" 2>&1 || { cat "$work/roomy.log"; exit 1; }
reference="$work/runs/roomy/checkpoints/step-000010"
checkpoint_bytes=$(du -sb "$reference" | cut -f1)
size_kib=$((checkpoint_bytes * 3 / 2 / 1024))

mkdir -p "$disk"
mount -t tmpfs -o size=${size_kib}k loom-disk-full "$disk" || { echo "mounting a ${size_kib} KiB tmpfs failed"; exit 1; }
"$loom" run "$work/full.toml" --set run.output_dir="$disk" --quiet > "$work/full.log" 2>&1
code=$?
checkpoints="$disk/full/checkpoints"
[ $code -eq 1 ] || fail "the run on a full disk exited $code, expected 1: $(cat "$work/full.log")"
grep -q "No space left on device" "$work/full.log" || fail "no 'No space left on device' message: $(cat "$work/full.log")"
grep -q '"step":20' "$disk/full/metrics.jsonl" || fail "the run did not reach step 20 (tmpfs too small?)"
[ "$(ls -A "$checkpoints" | tr '\n' ' ')" = "latest step-000010 " ] \
  || fail "checkpoints/ holds more than latest and step-000010: $(ls -A "$checkpoints" | tr '\n' ' ')"
[ "$(cat "$checkpoints/latest")" = "step-000010" ] || fail "latest is '$(cat "$checkpoints/latest")', expected step-000010"
(cd "$checkpoints/step-000010" && sha256sum -c --quiet MANIFEST) || fail "step-000010's MANIFEST does not verify"
for f in model.safetensors optimizer.safetensors; do
  "$compare" "$reference/$f" "$checkpoints/step-000010/$f" > /dev/null || fail "step-000010/$f differs from the roomy run's"
done
echo "tmpfs of ${size_kib} KiB for a checkpoint of $((checkpoint_bytes / 1024)) KiB"

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "checkpoint on a full disk: all passed"
