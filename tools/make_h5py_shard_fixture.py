#!/usr/bin/python3
"""Writes the committed HDF5 fixtures of plugins/datasets/tests/data/ with h5py, the way NVIDIA's
create_pretraining_data.py writes shards (write_instance_to_example_file: gzip datasets
input_ids i4, input_mask i1, segment_ids i1, masked_lm_positions i4, masked_lm_ids i4,
next_sentence_labels i1), so Loom's reader is tested against a file it did not write itself.

Rows follow a formula the C++ test recomputes (plugins/datasets/tests/h5py_fixture_test.cpp):
  N = 12, L = 32, P = 5; row r has n = 10 + r real tokens: [CLS] at 0, [SEP] at a = 3 + r % 4 and
  at n - 1, other ids 1000 + 31 r + j; segment 1 after a up to n - 1; masked positions
  [1, 2, a + 1] (+ [a + 2] for even r), zero-padded to P (0 = padding, as NVIDIA's loader reads
  it), original ids at those positions, input_ids there replaced by [MASK] = 103;
  next_sentence_labels = r % 2.
h5py_shard_int64.hdf5 holds the same rows stored as int64 (numpy's default integer).
Needs Debian's python3-h5py and python3-numpy (installed with apt-get when missing); run with\n/usr/bin/python3.
Usage: tools/make_h5py_shard_fixture.py [OUTPUT_DIR]
"""
import os
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError:
    # Debian's packages (no PyPI); installed once, then this script starts again.
    if os.environ.get("LOOM_FIXTURE_APT_TRIED"):
        sys.exit("make_h5py_shard_fixture: python3-h5py is still missing after apt-get install")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "python3-h5py",
                           "python3-numpy"], check=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    os.environ["LOOM_FIXTURE_APT_TRIED"] = "1"
    os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)

N, L, P = 12, 32, 5
CLS, SEP, MASK = 101, 102, 103


def rows():
    ids = np.zeros((N, L), dtype=np.int64)
    mask = np.zeros((N, L), dtype=np.int64)
    seg = np.zeros((N, L), dtype=np.int64)
    pos = np.zeros((N, P), dtype=np.int64)
    mids = np.zeros((N, P), dtype=np.int64)
    nsp = np.zeros((N,), dtype=np.int64)
    for r in range(N):
        n = 10 + r
        a = 3 + r % 4
        for j in range(n):
            ids[r, j] = 1000 + 31 * r + j
        ids[r, 0] = CLS
        ids[r, a] = SEP
        ids[r, n - 1] = SEP
        mask[r, :n] = 1
        seg[r, a + 1:n] = 1
        positions = [1, 2, a + 1] + ([a + 2] if r % 2 == 0 else [])
        for k, p in enumerate(positions):
            pos[r, k] = p
            mids[r, k] = ids[r, p]
            ids[r, p] = MASK
        nsp[r] = r % 2
    return dict(input_ids=ids, input_mask=mask, segment_ids=seg, masked_lm_positions=pos,
                masked_lm_ids=mids, next_sentence_labels=nsp)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "plugins", "datasets", "tests", "data")
    data = rows()
    nvidia_types = dict(input_ids="i4", input_mask="i1", segment_ids="i1", masked_lm_positions="i4",
                        masked_lm_ids="i4", next_sentence_labels="i1")
    with h5py.File(os.path.join(out, "h5py_shard.hdf5"), "w") as f:
        for key, value in data.items():
            f.create_dataset(key, data=value.astype(nvidia_types[key]), dtype=nvidia_types[key], compression="gzip")
    with h5py.File(os.path.join(out, "h5py_shard_int64.hdf5"), "w") as f:
        for key, value in data.items():
            f.create_dataset(key, data=value, compression="gzip")


if __name__ == "__main__":
    main()
