# analyse.py DIR: per round, `loom run`'s sequences/s (mean of the "train" records after step 10,
# i.e. steps 11-60, which include its log steps) against `loom bench`'s train_sequences_per_second.
import json, sys, glob, statistics
d = sys.argv[1]
rows = []
for path in sorted(glob.glob(f"{d}/bench-*.json")):
    i = path.rsplit("-", 1)[1].split(".")[0]
    try:
        b = json.load(open(path))
        recs = [json.loads(l) for l in open(f"{d}/run-{i}.metrics.jsonl")]
    except (OSError, ValueError):
        continue
    steady = [r for r in recs if r.get("type") == "train" and r["step"] > 10]
    run = statistics.mean(r["sequences_per_second"] for r in steady)
    rows.append((i, run, b["train_sequences_per_second"], b["ms_per_step"]["data"]))
for i, r, b, data in rows:
    print(f"round {i}: run {r:7.2f} seq/s, bench {b:7.2f} seq/s (data phase {data:.3f} ms/step), run/bench {r / b:.3f}")
if rows:
    ratios = [r / b for _, r, b, _ in rows]
    print(f"median run/bench {statistics.median(ratios):.3f} over {len(rows)} rounds; "
          f"median run {statistics.median(r for _, r, _, _ in rows):.2f}, bench {statistics.median(b for _, _, b, _ in rows):.2f}")
