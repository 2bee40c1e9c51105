#!/usr/bin/python3
"""scripts/gpu-check on a machine without a GPU (on one with a GPU, gpu-check itself is the test).

Without --allow-no-gpu it must refuse: exit non-zero and say there is no NVIDIA GPU. With it, it
runs what needs no GPU (the test binaries' GPU-free tests, the skip paths of the others) and writes
summary.json and summary.txt with every GPU part marked skipped; the fields are checked here, for
the full check and for --quick. The rules that need a GPU's output are checked on made-up logs
through gpu-check's own functions: memcheck stopped at its limit passes with a note when it found
no error and fails when it found one; the races part (racecheck, synccheck) fails on a hazard or a
barrier error and reports racecheck's warnings; the attention benchmark's figures reach summary.json and
summary.txt; the kernel profile's summary of the H200 run's committed ncu CSV matches that run's
record; a part skipped on request (--quick, --skip-benchmarks) does not fail the check. The
learning part (--corpus, --learn-minutes) runs tiny on the CPU here, on text made from the project's
documentation, for 6 seconds: calibrated steps, a held-out curve and the baseline reach summary.json
and summary.txt; a missing corpus fails it with the reason. --parts runs the parts named, in that
order; --budget ends the check within its seconds (the learning part's training shrunk to fit, a
part with too little time left skipped on request).
Usage: gpu_check_test.py SOURCE_DIR BUILD_DIR. Exit 77 (skipped) where an NVIDIA GPU is present.
"""
import importlib.machinery
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

source, build = Path(sys.argv[1]), Path(sys.argv[2])
smi = shutil.which("nvidia-smi")
if (smi and "GPU " in subprocess.run([smi, "-L"], capture_output=True, text=True).stdout) or list(
        Path("/dev").glob("nvidia[0-9]*")):
    print("SKIP: this machine has an NVIDIA GPU: run scripts/gpu-check itself")
    sys.exit(77)
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


gpu_check = source / "scripts/gpu-check"
with tempfile.TemporaryDirectory(prefix="loom-gpu-check-test-") as scratch:
    scratch = Path(scratch)
    refused = subprocess.run([gpu_check, scratch / "refused", "--build", build], capture_output=True, text=True,
                             timeout=60)
    check(refused.returncode != 0, f"without a GPU and without --allow-no-gpu it exited {refused.returncode}")
    check("no NVIDIA GPU on this machine" in refused.stderr, f"the refusal does not say why: {refused.stderr!r}")
    print("refused:", refused.stderr.strip().splitlines()[0] if refused.stderr.strip() else "(nothing on stderr)")

    out = scratch / "allowed"
    allowed = subprocess.run([gpu_check, out, "--build", build, "--allow-no-gpu"], capture_output=True, text=True,
                             timeout=300)
    print(allowed.stdout, allowed.stderr, sep="")
    check(allowed.returncode == 0, f"--allow-no-gpu exited {allowed.returncode}")
    summary = json.loads((out / "summary.json").read_text())
    text = (out / "summary.txt").read_text()
    check(summary["schema"] == 1, "schema")
    check(summary["layout"] == "build tree", f"layout {summary['layout']}")
    check(summary["loom"].startswith("loom "), f"loom version {summary['loom']!r}")
    check(summary["gpu"]["available"] is False and summary["gpu"]["reason"], f"gpu {summary['gpu']}")
    check(summary["require_gpu"] is False, "LOOM_REQUIRE_GPU must not be set without a GPU")
    parts = summary["parts"]
    check(set(parts) == {"data", "gpu_tests", "nccl_one_rank", "memcheck", "races", "end_to_end", "benchmarks",
                         "attention_bench", "inference", "kernel_profile", "unpadded", "learning"},
          f"parts {sorted(parts)}")
    check(parts["learning"]["status"] == "skipped" and parts["learning"].get("requested") is True
          and "no --corpus" in parts["learning"]["reason"], f"learning without --corpus: {parts['learning']}")
    check(summary["mode"] == "full" and summary["limits"]["attention_bench"] > 0, f"mode {summary.get('mode')}")
    for name in ("data", "memcheck", "races", "benchmarks", "attention_bench", "inference", "kernel_profile",
                 "unpadded"):
        check(parts[name]["status"] == "skipped" and "no NVIDIA GPU" in parts[name]["reason"],
              f"{name}: {parts[name]}")
    tests = parts["gpu_tests"]
    # The GPU-free tests (size classes, device placement, the plugin's descriptor and options) ran and
    # passed; every GPU test skipped.
    check(tests["status"] == "skipped" and tests["failed"] == 0, f"gpu_tests {tests}")
    check(tests["passed"] >= 8 and tests["skipped"] >= 20, f"gpu_tests counts {tests}")
    check((out / tests["log"]).exists(), "gpu_tests log")
    check(parts["nccl_one_rank"]["status"] in ("skipped", "not_built"), f"nccl_one_rank {parts['nccl_one_rank']}")
    check(parts["end_to_end"]["status"] == "skipped", f"end_to_end {parts['end_to_end']}")
    check("SKIP: no usable GPU" in (out / parts["end_to_end"]["log"]).read_text(), "end_to_end's skip reason")
    counted = summary["tests"]
    check(counted["failed"] == 0 and counted["passed"] == tests["passed"], f"tests {counted}")
    check(counted["skipped"] >= tests["skipped"] + 1, f"tests {counted}")
    check(summary["ok"] is True, "ok")
    check(summary["seconds"] < 120, f"took {summary['seconds']} s")
    for line in ("device     none: ", f"tests      {counted['passed']} passed, 0 failed", "benchmarks     skipped",
                 "attention_bench skipped: no NVIDIA GPU", "result     OK"):
        check(line in text, f"summary.txt lacks {line!r}")

    # --quick: no NCCL test and no memcheck (skipped on request), shorter limits summing to under 5
    # minutes, the benchmark and attention parts skipped here for want of a GPU.
    out = scratch / "quick"
    quick = subprocess.run([gpu_check, out, "--build", build, "--allow-no-gpu", "--quick"], capture_output=True,
                           text=True, timeout=300)
    print(quick.stdout, quick.stderr, sep="")
    check(quick.returncode == 0, f"--allow-no-gpu --quick exited {quick.returncode}")
    summary = json.loads((out / "summary.json").read_text())
    parts = summary["parts"]
    check(summary["mode"] == "quick", f"mode {summary['mode']}")
    for name in ("nccl_one_rank", "memcheck", "inference", "unpadded"):
        check(parts[name] == {"status": "skipped", "reason": "--quick", "requested": True}, f"--quick {name}: {parts[name]}")
    for name in ("benchmarks", "attention_bench"):
        check(parts[name]["status"] == "skipped" and "no NVIDIA GPU" in parts[name]["reason"], f"--quick {name}")
    check(parts["gpu_tests"]["status"] == "skipped" and parts["gpu_tests"]["passed"] >= 8, "--quick gpu_tests")
    ran = ("data", "gpu_tests", "end_to_end", "benchmark", "attention_bench")
    check(sum(summary["limits"][k] for k in ran) <= 300, f"--quick limits {summary['limits']}")
    check(summary["tests"]["skipped"] == parts["gpu_tests"]["skipped"] + 1, f"--quick tests {summary['tests']}")
    check(parts["kernel_profile"] == {"status": "skipped", "reason": "--quick without --kernel-profile",
                                      "requested": True}, f"--quick kernel_profile: {parts['kernel_profile']}")
    check(parts["races"] == {"status": "skipped", "reason": "--quick without --races", "requested": True},
          f"--quick races: {parts['races']}")
    check(summary["ok"] is True, "--quick ok")

    # The learning part on the CPU: a tiny corpus (the documentation, one file per page), 0.1 minutes.
    corpus = scratch / "corpus"
    corpus.mkdir()
    for index, page in enumerate(sorted((source / "docs").glob("*.md"))):
        (corpus / f"{index:02d}.txt").write_text(page.read_text())
    out = scratch / "learning"
    learned = subprocess.run([gpu_check, out, "--build", build, "--allow-no-gpu", "--quick", "--skip-benchmarks",
                              "--corpus", corpus, "--learn-minutes", "0.1"], capture_output=True, text=True, timeout=300)
    print(learned.stdout, learned.stderr, sep="")
    check(learned.returncode == 0, f"--corpus exited {learned.returncode}")
    summary = json.loads((out / "summary.json").read_text())
    part = summary["parts"]["learning"]
    check(summary["learn_minutes"] == 0.1, f"learn_minutes {summary.get('learn_minutes')}")
    check(part["status"] == "passed" and part["device"] == "cpu" and part["model"] == "bert-tiny.json", f"learning {part}")
    check("tiny on backend/cpu" in part.get("note", ""), f"learning note {part.get('note')}")
    check(part.get("steps", 0) >= 2 and part.get("calibrated_step_ms", 0) > 0, f"learning calibration {part}")
    curve = part.get("curve", [])
    check(len(curve) >= 2 and curve[-1]["step"] == part["steps"], f"learning curve {curve}")
    check(all(a["minutes"] <= b["minutes"] and a["step"] < b["step"] for a, b in zip(curve, curve[1:])),
          f"curve not in training order {curve}")
    check(all(0 <= p["mask_accuracy"] <= 1 and p["mask_loss"] > 0 and 0 < p["unigram_baseline"] < 1 for p in curve),
          f"curve values {curve}")
    check(abs(part["ratio"] - part["mask_accuracy"] / part["unigram_baseline"]) < 1e-3
          and part["learned"] == (part["ratio"] >= 2.0), f"learning ratio {part}")
    # The steps are sized from a calibration, so a loaded machine may train past the budget; what the
    # part promises is the stop at the budget plus its grace (max(30 s, a quarter of the budget)).
    check(part["trained_minutes"] <= 0.1 + 0.5, f"trained {part['trained_minutes']} min of a 0.1-minute budget")
    for log in part["logs"]:
        check((out / log).exists(), f"learning log {log}")
    text = (out / "summary.txt").read_text()
    check("learning       passed: held-out [MASK] accuracy" in text and "unigram baseline" in text
          and f"step {part['steps']:>6}" in text, f"summary.txt's learning lines: {text}")
    missing = subprocess.run([gpu_check, scratch / "missing", "--build", build, "--allow-no-gpu", "--quick",
                              "--skip-benchmarks", "--corpus", scratch / "no-such-corpus"], capture_output=True,
                             text=True, timeout=300)
    part = json.loads((scratch / "missing/summary.json").read_text())["parts"]["learning"]
    check(missing.returncode == 1 and part["status"] == "failed" and "not a directory" in part["reason"],
          f"a missing corpus: exit {missing.returncode}, {part}")
    refused = subprocess.run([gpu_check, scratch / "zero", "--learn-minutes", "0"], capture_output=True, text=True)
    check(refused.returncode == 2 and "--learn-minutes must be positive" in refused.stderr, "--learn-minutes 0")

    # --parts and --budget: the parts named run in that order (data first), the others are skipped on
    # request; under the budget the learning part's training shrinks so that the whole check ends
    # within it, and a part with too little time left (20 s less the reserve of 10) is skipped on
    # request, naming the budget.
    out = scratch / "budget"
    budgeted = subprocess.run([gpu_check, out, "--build", build, "--allow-no-gpu", "--parts", "learning,end_to_end",
                               "--budget", "80", "--corpus", corpus, "--learn-minutes", "5"], capture_output=True,
                              text=True, timeout=300)
    print(budgeted.stdout, budgeted.stderr, sep="")
    summary = json.loads((out / "summary.json").read_text())
    parts = summary["parts"]
    check(budgeted.returncode == 0 and summary["ok"] is True, f"--budget exited {budgeted.returncode}")
    check(summary["budget"] == 80 and summary["order"] == ["learning", "end_to_end"] and summary["partial"] is False,
          f"--budget summary {summary.get('budget')} {summary.get('order')}")
    check(summary["seconds"] <= 80, f"--budget 80 took {summary['seconds']} s")
    check(list(parts) == ["data", "gpu_tests", "nccl_one_rank", "memcheck", "races", "end_to_end", "benchmarks",
                          "attention_bench", "inference", "kernel_profile", "unpadded", "learning"],
          f"--budget parts {list(parts)}")
    check(parts["gpu_tests"] == {"status": "skipped", "reason": "not in --parts", "requested": True},
          f"--parts gpu_tests: {parts['gpu_tests']}")
    part = parts["learning"]
    check(part["status"] == "passed" and 0.5 <= part["budget_minutes"] < 5 and part["steps"] >= 2,
          f"--budget learning {part}")
    check("budget     80.0 s, parts in the order learning,end_to_end; left out: " in (out / "summary.txt").read_text(),
          "--budget's line in summary.txt")
    out = scratch / "budget-spent"
    spent = subprocess.run([gpu_check, out, "--build", build, "--allow-no-gpu", "--parts", "end_to_end", "--budget",
                            "20"], capture_output=True, text=True, timeout=300)
    part = json.loads((out / "summary.json").read_text())["parts"]["end_to_end"]
    check(spent.returncode == 0 and part["status"] == "skipped" and part["reason"].startswith("--budget: ")
          and part.get("requested") is True, f"--budget with too little left: exit {spent.returncode}, {part}")
    refused = subprocess.run([gpu_check, scratch / "bad-part", "--parts", "gpu_tests,fastest"], capture_output=True,
                             text=True)
    check(refused.returncode == 2 and "--parts fastest: not a part" in refused.stderr, "--parts with a misspelt part")

    # The unpadded part on made-up outputs: Loom's two layouts per model, then each PyTorch side —
    # pytorch_bert_train.py's full rows counted at the real tokens of Loom's batch, a ModernBERT side
    # measured, one that could not run (its reason kept) and one stopped at its limit.
    sys.dont_write_bytecode = True  # no cache beside the scripts
    sys.path.insert(0, str(source / "scripts"))
    import gpu_check_unpadded as gu  # noqa: E402
    layouts = {"unpadded": True, "layouts": {"padded": {"padding_share": 0.25, "real_tokens_per_second": 1000.0},
                                             "unpadded": {"real_tokens_per_second": 1200.0}, "speedup": 1.2,
                                             "bound": 4 / 3, "share_of_bound": 0.9}}
    pytorch_lines = {"pytorch_bert_train.py": {"sequences_per_second": 2.0},
                     "--attention sdpa": {"available": True, "real_tokens_per_second": 800.0,
                                          "sequences_per_second": 2.1},
                     "--attention eager": {"available": False, "reason": "ModuleNotFoundError: no transformers"}}
    def unpadded_run(command, out, limit, env=None, stderr=None):
        words = " ".join(str(c) for c in command)
        for log in (out, stderr):
            if log is not None:
                log.write_text("")
        if " bench " in words:
            out.write_text(json.dumps(layouts))
        for key, line in pytorch_lines.items():
            if key in words:
                out.write_text("a warning first\n" + json.dumps(line) + "\n")
        return (None, limit) if "flash_attention_2" in words else (0, 1.0)
    made = scratch / "unpadded-made-up"
    made.mkdir()
    part = gu.unpadded(build / "bin/loom", source, made, scratch / "data", 300, unpadded_run, lambda log: "its log")
    sides = {(row["model"], side["name"]): side for row in part["models"] for side in row.get("pytorch", [])}
    check(part["status"] == "passed" and set(sides) == {("bert-base", "sdpa"), ("modernbert-base", "sdpa"),
                                                        ("modernbert-base", "eager"),
                                                        ("modernbert-base", "flash_attention_2")}, f"unpadded {part}")
    check(abs(sides["bert-base", "sdpa"]["real_tokens_per_second"] - 768) < 1e-9
          and abs(sides["bert-base", "sdpa"]["ratio"] - 1200 / 768) < 1e-9, f"bert-base's PyTorch side {sides}")
    check(abs(sides["modernbert-base", "sdpa"]["ratio"] - 1.5) < 1e-9
          and sides["modernbert-base", "eager"] == {"name": "eager", "unavailable": "ModuleNotFoundError: no transformers"}
          and sides["modernbert-base", "flash_attention_2"]["unavailable"] == "stopped at its time limit",
          f"ModernBERT's PyTorch sides {sides}")
    lines = "\n".join(gu.summary_lines(part))
    check("    pytorch sdpa: 800 real tokens/s, loom unpadded 1.50×" in lines
          and "    pytorch eager: not measured (ModuleNotFoundError: no transformers)" in lines, f"unpadded lines {lines}")
    # The ModernBERT PyTorch side where transformers is missing says so in its JSON line.
    missing = subprocess.run([sys.executable, source / "scripts/bench/pytorch_modernbert_train.py", "--config",
                              source / "configs/models/modernbert-base.json", "--device", "cpu"], capture_output=True,
                             text=True, timeout=120)
    line = json.loads(missing.stdout.strip().splitlines()[-1])
    if importlib.util.find_spec("transformers") is None:
        check(missing.returncode == 0 and line["available"] is False and "ModuleNotFoundError" in line["reason"],
              f"pytorch_modernbert_train.py without transformers: {line}")

    # The rules for a GPU's output, on made-up logs through gpu-check's own functions.
    sys.dont_write_bytecode = True  # no cache beside scripts/gpu-check
    loader = importlib.machinery.SourceFileLoader("gpu_check", str(gpu_check))
    spec = importlib.util.spec_from_loader("gpu_check", loader)
    gc = importlib.util.module_from_spec(spec)
    loader.exec_module(gc)
    ok_line = "[       OK ] Shapes/AttentionTest.ForwardAndBackwardMatchTheUnfusedCpuOps/T37_f16 (5 ms)\n"
    log = scratch / "memcheck.log"
    log.write_text("$ compute-sanitizer ...\n========= COMPUTE-SANITIZER\n" + ok_line * 76
                   + f"\n{gc.STOPPED} 30 s]\n")
    part = gc.memcheck_result(None, 30.0, log)
    check(part["status"] == "passed" and part["errors"] == 0 and part["stopped_at_limit"] is True, f"memcheck {part}")
    check(part["note"].startswith("76 tests checked, 0 errors, stopped at the limit"), f"memcheck note {part}")
    check(gc.verdict({"memcheck": part}, True), "memcheck stopped without errors fails the check")
    log.write_text(ok_line * 5 + "========= Invalid __global__ read of size 4 bytes\n=========     at kernel\n"
                   + f"{gc.STOPPED} 30 s]\n")
    part = gc.memcheck_result(None, 30.0, log)
    check(part["status"] == "failed" and part["errors"] == 1 and "1 error," in part["reason"], f"memcheck {part}")
    check(not gc.verdict({"memcheck": part}, True), "memcheck with an error passes the check")
    log.write_text(ok_line * 89 + "========= ERROR SUMMARY: 0 errors\n")
    part = gc.memcheck_result(0, 80.0, log)
    check(part["status"] == "passed" and part["tests_run"] == 89 and "note" not in part, f"memcheck complete {part}")
    log.write_text(ok_line * 89 + "========= ERROR SUMMARY: 3 errors\n")
    part = gc.memcheck_result(9, 80.0, log)
    check(part["status"] == "failed" and part["errors"] == 3, f"memcheck with errors {part}")
    log.write_text("========= Error: Target application terminated before first instrumented API call\n")
    check(gc.memcheck_result(1, 1.0, log)["status"] == "refused", "memcheck refused")

    # The races part: synccheck then racecheck on the attention tests, then both on the op cases,
    # each run with its own log under the part's one limit. Hazards, barrier errors and failed tests
    # fail it; racecheck's warnings are noted; a run stopped at the limit counts what it got
    # through and the note names it and the runs left out; a log with neither a summary nor a
    # finished test is the machine refusing the tool.
    import gpu_check_races as gr  # noqa: E402  (scripts/, on the path for gpu-check's import above)
    check([(name, tool) for name, tool, _, _ in gr.RUNS]
          == [("synccheck-attention", "synccheck"), ("racecheck-attention", "racecheck"),
              ("synccheck-ops", "synccheck"), ("racecheck-ops", "racecheck")], f"races runs {gr.RUNS}")
    runs = [gr.command("compute-sanitizer", tool, Path(program), cases) for _, tool, program, cases in gr.RUNS]
    check(all("--error-exitcode" in run and run[2] in ("racecheck", "synccheck") for run in runs), f"races {runs}")
    check("Backends/Attention.*/cuda" in runs[2][-1] and "Backends/ResidualLayerNorm.*/cuda" in runs[2][-1]
          and "Backends/Gemm" not in runs[2][-1], f"races op cases {runs[2][-1]}")
    check("AttentionTensorCoreKernelsAgreeWithTheCudaCoreKernels" in runs[0][-1]
          and "B256_H16_T128" not in runs[0][-1], f"races attention cases {runs[0][-1]}")
    # The filters name tests that exist: all seven attention cases, and every op case of the families.
    listed = [subprocess.run([build / "bin" / program, "--gtest_list_tests", cases], capture_output=True,
                             text=True).stdout for program, cases in (("loom_backend_cuda_tests", gr.ATTENTION_CASES),
                                                                       ("loom_backend_ops_test", gr.OP_CASES))]
    check(sum(line.startswith("  ") for line in listed[0].splitlines()) == 7, f"races attention cases: {listed[0]}")
    suites = {line.rstrip(".") for line in listed[1].splitlines() if line and not line.startswith((" ", "Running"))}
    check(suites == {f"Backends/{family}" for family in gr.OP_FAMILIES}, f"races op families listed: {suites}")
    log = scratch / "races.log"
    race_clean = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
    sync_clean = "========= ERROR SUMMARY: 0 errors\n"
    def one_run(name, tool, status, text, tests):
        log.write_text(text)
        return gr.run_result(name, tool, status, 10.0, log, tests)
    clean = [one_run("synccheck-attention", "synccheck", 0, ok_line * 3 + sync_clean, 3),
             one_run("racecheck-attention", "racecheck", 0, ok_line * 3 + race_clean, 3),
             one_run("synccheck-ops", "synccheck", 0, ok_line * 3 + sync_clean, 3),
             one_run("racecheck-ops", "racecheck", 0, ok_line * 3 + race_clean, 3)]
    part = gr.result(clean, 40.0, 90)
    check(part["status"] == "passed" and part["errors"] == 0 and part["tests_run"] == 12 and "note" not in part,
          f"races clean {part}")
    hazard = one_run("racecheck-attention", "racecheck", 9, ok_line * 3
                     + "========= Error: Race reported between Write access at flash_attention_kernel+0x90\n"
                     "=========     and Read access at flash_attention_kernel+0x120 [4 hazards]\n"
                     "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n", 3)
    part = gr.result([clean[0], hazard, clean[2], clean[3]], 40.0, 90)
    check(part["status"] == "failed" and part["errors"] == 1 and part["reason"] == "racecheck-attention: 1 error",
          f"races with a hazard {part}")
    check(not gc.verdict({"races": part}, True), "a race passes the check")
    warned = one_run("racecheck-ops", "racecheck", 0, ok_line * 3
                     + "========= RACECHECK SUMMARY: 2 hazards displayed (0 errors, 2 warnings)\n", 3)
    part = gr.result(clean[:3] + [warned], 40.0, 90)
    check(part["status"] == "passed" and part["warnings"] == 2 and "2 racecheck warnings" in part["note"],
          f"races with warnings {part}")
    barrier = one_run("synccheck-ops", "synccheck", None, ok_line * 7
                      + "========= Barrier error detected. Divergent thread(s) in block\n" + f"{gc.STOPPED} 30 s]\n", 7)
    part = gr.result(clean[:2] + [barrier, {"run": "racecheck-ops", "status": "not_run"}], 90.0, 90)
    check(part["status"] == "failed" and part["reason"] == "synccheck-ops: 1 error", f"races stopped, barrier {part}")
    stopped = one_run("synccheck-ops", "synccheck", None, ok_line * 7 + f"{gc.STOPPED} 30 s]\n", 7)
    part = gr.result(clean[:2] + [stopped, {"run": "racecheck-ops", "status": "not_run"}], 90.0, 90)
    check(part["status"] == "passed" and part["note"] == "synccheck-ops stopped at the limit after 7 tests; "
          "racecheck-ops not run (limit 90 s)" and gc.verdict({"races": part}, True), f"races stopped {part}")
    failing_test = one_run("synccheck-ops", "synccheck", 1, ok_line * 2 + "[  FAILED  ] Backends/X.Y/cuda (3 ms)\n"
                           + sync_clean, 3)
    part = gr.result(clean[:2] + [failing_test, clean[3]], 40.0, 90)
    check(part["status"] == "failed" and part["reason"].startswith("synccheck-ops: exit status 1"),
          f"races with a failed test {part}")
    refusal = "========= Error: Target application terminated before first instrumented API call\n"
    refused_runs = [one_run(name, tool, 1, refusal, 0) for name, tool, _, _ in gr.RUNS]
    part = gr.result(refused_runs, 4.0, 90)
    check(part["status"] == "refused" and "Target application" in part["refusal"] and gc.verdict({"races": part}, True),
          f"races refused {part}")
    # The runs share the part's limit: a run gets what is left, and none starts with under 5 s.
    limits_given = []
    def timed_run(command, log, limit, env=None):
        limits_given.append(limit)
        log.write_text(ok_line + (race_clean if command[2] == "racecheck" else sync_clean))
        time.sleep(1.5)
        return 0, 1.5
    part = gr.races("compute-sanitizer", {"cuda_tests": Path("a"), "op_tests": Path("b")}, scratch, 8.0, timed_run,
                    lambda log: 1, {})
    check(len(limits_given) == 2 and 7.9 < limits_given[0] <= 8.0 and 6.0 <= limits_given[1] < 7.0
          and [r["status"] for r in part["runs"]] == ["passed", "passed", "not_run", "not_run"]
          and "synccheck-ops not run; racecheck-ops not run (limit 8 s)" in part.get("note", ""),
          f"races under one limit: {limits_given} {part}")

    check(gc.verdict({"benchmarks": gc.skipped("--skip-benchmarks", requested=True)}, True),
          "a part skipped on request fails the check")
    check(not gc.verdict({"benchmarks": gc.skipped("no NVIDIA GPU")}, True), "a GPU part skipped on a GPU passes")

    figures = {"shape": "T128", "batch": 64, "heads": 16, "seq": 128, "head_dim": 64, "dtype": "bf16",
               "dropout": 0.1, "loom_ms_forward_backward": 4.6, "loom_ms_forward": 0.83, "loom_ms_backward": 3.75,
               "pytorch_ms_forward_backward": 0.13, "pytorch_ms_forward": 0.05, "pytorch_ms_backward": 0.08,
               "ratio": 0.13 / 4.6, "loom": {}, "pytorch": {}, "loom_unavailable": None, "pytorch_unavailable": None}
    without_torch = dict(figures, shape="T512", seq=512, batch=8, pytorch_ms_forward_backward=None,
                         pytorch_ms_forward=None, pytorch_ms_backward=None, ratio=None,
                         pytorch_unavailable="no torch")
    json_out, notes = scratch / "attention-bench.json", scratch / "attention-bench.log"
    json_out.write_text(json.dumps([figures, without_torch]))
    notes.write_text("compare-attention: T512: no PyTorch figures (python3: no torch)\n")
    part = gc.attention_result(0, 12.0, json_out, notes)
    check(part["status"] == "passed" and len(part["shapes"]) == 2, f"attention_bench {part}")
    check(part["shapes"][0]["loom_ms_forward_backward"] == 4.6 and part["shapes"][0]["ratio"] == 0.13 / 4.6,
          f"attention figures {part['shapes'][0]}")
    check("loom" not in part["shapes"][0], "the sides' own JSON belongs in attention-bench.json, not the summary")
    lines = gc.attention_line(part["shapes"][0]) + "\n" + gc.attention_line(part["shapes"][1])
    for expected in ("attention T128 (batch 64, heads 16, seq 128, d 64, bf16, dropout 0.1, key padding): "
                     "loom 4.600 ms (fwd 0.830, bwd 3.750), pytorch 0.130 ms (fwd 0.050, bwd 0.080), ratio 0.03",
                     "pytorch not measured (no torch)"):
        check(expected in lines, f"attention lines lack {expected!r}: {lines}")
    with_baseline = dict(figures, loom_cuda_core_ms_forward_backward=9.2, tensor_core_speedup=2.0)
    json_out.write_text(json.dumps([with_baseline]))
    line = gc.attention_line(gc.attention_result(0, 12.0, json_out, notes)["shapes"][0])
    check(line.endswith("; CUDA-core kernels 9.200 ms, Tensor-Core speedup 2.00"), f"attention speedup: {line}")
    json_out.write_text(json.dumps([dict(figures, loom_ms_forward_backward=None, loom_unavailable="no CUDA device")]))
    part = gc.attention_result(1, 3.0, json_out, notes)
    check(part["status"] == "failed" and "no CUDA device" in part["reason"], f"attention_bench without Loom {part}")
    json_out.write_text(f"{gc.STOPPED} 60 s]\n")
    check(gc.attention_result(None, 60.0, json_out, notes)["status"] == "timed_out", "attention_bench stopped")

    # The inference part's verdict and lines, from made-up compare-pytorch-inference rows.
    import gpu_check_inference as gi  # noqa: E402  (scripts/, on the path for gpu-check's import above)
    def row(batch, seq, loom_p50, torch_p50):
        return {"model": "bert-base", "batch": batch, "seq": seq, "precision": "bf16",
                "loom_sequences_per_second": batch * 1000 / loom_p50, "pytorch_sequences_per_second": batch * 1000 / torch_p50,
                "ratio": torch_p50 / loom_p50, "loom_latency_ms": {"p50": loom_p50, "p90": loom_p50 * 1.1, "p99": loom_p50 * 1.3},
                "pytorch_latency_ms": {"p50": torch_p50, "p90": torch_p50 * 1.1, "p99": torch_p50 * 1.3}}
    json_out, notes = scratch / "inference.json", scratch / "inference.log"
    json_out.write_text(json.dumps([row(1, 128, 1.4, 3.9), row(8, 128, 2.1, 3.6), row(32, 384, 40.0, 30.0)]))
    part = gi.result(0, 80.0, json_out, notes, "")
    check(part["status"] == "passed" and len(part["rows"]) == 3 and part["p50_at_most_pytorch"] is True,
          f"inference {part}")
    lines = "\n".join(gi.summary_lines(part))
    for expected in ("inference batch 1 × seq 128 bf16: loom 714.3 seq/s (p50/p90/p99 1.4/1.5/1.8 ms)",
                     "p50 at batch 1 and 8 at most PyTorch's"):
        check(expected in lines, f"inference lines lack {expected!r}: {lines}")
    json_out.write_text(json.dumps([row(1, 128, 5.0, 3.9)]))
    check(gi.result(0, 10.0, json_out, notes, "")["p50_at_most_pytorch"] is False, "a slower p50 at batch 1")
    json_out.write_text(f"{gc.STOPPED} 150 s]\n")
    check(gi.result(None, 150.0, json_out, notes, "stopped")["status"] == "timed_out", "inference stopped")
    check(gi.result(1, 3.0, json_out, notes, "no torch")["reason"] == "no torch", "inference failed, with its reason")

    # The kernel profile's summary, on the ncu CSV of the H200 run (docs/measurements/): 1,600
    # kernels, 209.47 ms, attention 66% (attention_dkdv 28.9%) as that run's README records.
    import gzip  # noqa: E402
    import gpu_check_kernels as gk  # noqa: E402
    recorded = source / "docs/measurements/gpu-2026-11-26-h200/kernel-profile-loom/ncu-128.csv.gz"
    profile = gk.summarize(gk.durations(gzip.open(recorded, "rt").read()))
    check(profile["launches"] == 1600 and abs(profile["total_ms"] - 209.47) < 0.01, f"kernel profile totals {profile}")
    top = profile["top_kernels"][0]
    check(top["name"] == "void loom_cuda::<unnamed>::attention_dkdv_kernel<loom::BFloat16, float, 2>"
          and top["share_percent"] == 28.9 and top["launches"] == 26, f"kernel profile top {top}")
    families = profile["families"]
    check(list(families)[0] == "attention" and round(families["attention"]["share_percent"]) == 66
          and set(families) >= {"gemm", "elementwise", "normalization", "embedding", "loss", "optimizer"},
          f"kernel profile families {families}")
    check(gk.family("nvjet_sm90_tss_256x128_64x4_1x2_h_bz_coopA_TNT") == "gemm"
          and gk.family("loom_cuda::<unnamed>::lamb_stage1_kernel") == "optimizer"
          and gk.family("void loom_cuda::<unnamed>::cast_quads_kernel<float, loom::BFloat16>") == "elementwise",
          "kernel families")
    part = {"status": "passed", "workload": gk.WORKLOAD, **profile}
    lines = "\n".join(gk.summary_lines(part))
    check("1600 kernels, 209.5 ms; by family: attention 65.9%" in lines and " 28.9% " in lines,
          f"kernel profile lines: {lines}")
    check(gk.durations("no header here\n") == [], "a log without ncu's table")
    # ncu that cannot profile on the machine is a refusal (no failure of the check), with its words;
    # ncu that profiled nothing for another reason is a failure.
    def fake_run(words, exit_status):
        def run(command, out, limit, env=None, stderr=None):
            out.write_text(words)
            stderr.write_text("")
            return exit_status, 1.0
        return run
    profiled = scratch / "profiled"
    profiled.mkdir()
    real_find, gk.find_ncu = gk.find_ncu, lambda: "ncu"
    part = gk.kernel_profile(build / "bin/loom", source, profiled, scratch / "data", 10,
                             fake_run("==ERROR== Failed to initialize the profiler: LibraryNotLoaded\n", 1),
                             lambda log: "its log")
    check(part["status"] == "refused" and "Failed to initialize the profiler" in part["reason"]
          and gc.verdict({"kernel_profile": part}, True), f"kernel profile refused {part}")
    part = gk.kernel_profile(build / "bin/loom", source, profiled, scratch / "data", 10,
                             fake_run("loom: error: no shards\n", 2), lambda log: "its log")
    check(part["status"] == "failed" and part["reason"] == "its log", f"kernel profile failed {part}")
    gk.find_ncu = real_find
    check('files = "' + str(scratch / "data") + '/seq128/' in (profiled / "kernel-profile.toml").read_text(),
          "the kernel profile's recipe names gpu-check's data")
    recipe_text = gk.recipe(Path("/data"), Path("/tree"))
    check('files = "/data/seq128/training_*.hdf5"' in recipe_text and "/tree/configs/models/bert-large.json"
          in recipe_text and "batch_size = 64" in recipe_text, f"kernel profile recipe {recipe_text}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok: gpu-check refuses without a GPU, with --allow-no-gpu (and --quick) writes a summary with the GPU parts "
      "skipped, runs the learning part tiny on the CPU, judges memcheck, races and the attention benchmark as stated, "
      "and summarizes a recorded kernel profile")
