"""scripts/unlabelled-text on small task files: one document per training row with its label dropped,
rows whose text is in an excluded file left out, the output directory replaced as a whole, and a file
without a `text` header refused naming it. Usage: unlabelled_text_test.py SOURCE_DIR"""
import pathlib
import subprocess
import sys
import tempfile

script = pathlib.Path(sys.argv[1]) / "scripts" / "unlabelled-text"

with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    (tmp / "train.tsv").write_text("label\ttext\nspam\twin a prize now\nham\tthe meeting moved\n"
                                   "ham\tsee you at \"noon\"\nspam\tcheap pills\n")
    (tmp / "test.tsv").write_text("label\ttext\nham\tthe meeting moved\n")
    out = tmp / "docs"
    out.mkdir()
    (out / "stale.txt").write_text("from an earlier run")
    run = subprocess.run([sys.executable, script, tmp / "train.tsv", "--exclude", tmp / "test.tsv",
                          "--output", out], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    docs = sorted(out.iterdir())
    assert [d.name for d in docs] == ["00000.txt", "00001.txt", "00002.txt"], docs
    assert [d.read_text() for d in docs] == ["win a prize now\n", "see you at \"noon\"\n", "cheap pills\n"]
    assert "3 documents" in run.stdout and "1 left out" in run.stdout, run.stdout
    assert not (tmp / "docs.partial").exists()

    (tmp / "bad.tsv").write_text("label\tsentence\nham\thello\n")
    run = subprocess.run([sys.executable, script, tmp / "bad.tsv", "--output", tmp / "bad"],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "bad.tsv" in run.stderr and "'text' column" in run.stderr, run.stderr
print("unlabelled-text: all passed")
