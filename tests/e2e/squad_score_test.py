#!/usr/bin/python3
"""`loom score squad` against the reference re-implementation of the official scripts
(tests/tools/squad_official_eval.py), both run now on every case of tests/fixtures/squad/cases.json:
the last stdout line is one JSON object with the same keys in the same order and the same numbers
(exactly). Also: the committed expected.json is what the reference prints today. Malformed input
(exit 2 naming the file) is the bad-input suite's: tests/bad_input/predict_inputs.sh.

Usage: squad_score_test.py LOOM SOURCE_DIR
"""
import json
import os
import subprocess
import sys

loom, source = sys.argv[1], sys.argv[2]
fixtures = os.path.join(source, "tests", "fixtures", "squad")
reference = os.path.join(source, "tests", "tools", "squad_official_eval.py")
failures = []


def last_json_line(text):
    return json.loads(text.strip().splitlines()[-1], object_pairs_hook=lambda pairs: pairs)


def run(command):
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


cases = json.load(open(os.path.join(fixtures, "expected.json")))
for case in cases:
    args = [os.path.join(fixtures, a) if a.endswith(".json") else a for a in case["args"]]
    ours = run([loom, "score", "squad"] + args)
    theirs = run([sys.executable, reference] + args)
    if ours.returncode != 0 or theirs.returncode != 0:
        failures.append(f"{case['name']}: exit {ours.returncode} / reference {theirs.returncode}: {ours.stderr}")
        continue
    got, want = last_json_line(ours.stdout), last_json_line(theirs.stdout)
    # Keys in order, values of the same type and exactly equal (Python's json reads the doubles
    # back exactly; an int stays an int).
    if [k for k, _ in got] != [k for k, _ in want]:
        failures.append(f"{case['name']}: keys {[k for k, _ in got]} != {[k for k, _ in want]}")
    for (key, a), (_, b) in zip(got, want):
        if type(a) is not type(b) or a != b:
            failures.append(f"{case['name']}: {key}: loom {a!r}, reference {b!r}")
    if [[k, v] for k, v in want] != [[k, v] for k, v in case["expected"].items()]:
        failures.append(f"{case['name']}: expected.json is stale; regenerate it (tests/fixtures/squad/README.md)")
    if case["name"] == "v1.1" and "Unanswered question missing-prediction" not in ours.stderr:
        failures.append("v1.1: the unanswered question is not reported on stderr")

for failure in failures:
    print("FAIL:", failure)
print(f"{len(cases)} cases, {len(failures)} failures")
sys.exit(1 if failures else 0)
