#!/usr/bin/env python3
"""Reference values for host/eval/glue_metrics.cpp, computed with the Python standard library only.

Each metric is written from the definition scikit-learn and SciPy document (the libraries GLUE's
own scoring and Hugging Face's glue_compute_metrics call), including their answers on degenerate
input:
- accuracy: share of equal pairs (sklearn.metrics.accuracy_score);
- f1: binary tasks, F1 of class 1 (f1_score, average="binary"); more classes, the unweighted mean
  over the classes present in the truth or the predictions (average="macro"); 0 where a class has
  no true and no predicted member (zero_division's default result);
- mcc: Matthews correlation in its multi-class form (matthews_corrcoef); 0 when a marginal is
  constant (sklearn's answer to the zero denominator);
- pearson: scipy.stats.pearsonr; NaN for a constant series or fewer than two pairs;
- spearman: scipy.stats.spearmanr, i.e. Pearson of the ranks, ties taking their average rank
  (scipy.stats.rankdata, method="average");
- accuracy_f1 = (accuracy + f1) / 2 (MRPC), pearson_spearman = (pearson + spearman) / 2 (STS-B).

Usage: glue_metrics_reference.py            write glue_metrics_cases.json beside this file
       glue_metrics_reference.py --check    exit 1 unless the file holds what this script computes
NaN is written as null (JSON has no NaN).
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_FILE = os.path.join(HERE, "glue_metrics_cases.json")


def accuracy(predicted, truth):
    return sum(1 for p, t in zip(predicted, truth) if p == t) / len(truth)


def f1_of(predicted, truth, cls):
    tp = sum(1 for p, t in zip(predicted, truth) if p == cls and t == cls)
    fp = sum(1 for p, t in zip(predicted, truth) if p == cls and t != cls)
    fn = sum(1 for p, t in zip(predicted, truth) if p != cls and t == cls)
    return 0.0 if 2 * tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def f1(predicted, truth, num_classes):
    if num_classes == 2:
        return f1_of(predicted, truth, 1)
    present = sorted(set(predicted) | set(truth))
    return sum(f1_of(predicted, truth, c) for c in present) / len(present)


def mcc(predicted, truth, num_classes):
    n = len(truth)
    correct = sum(1 for p, t in zip(predicted, truth) if p == t)
    t_k = [sum(1 for t in truth if t == c) for c in range(num_classes)]
    p_k = [sum(1 for p in predicted if p == c) for c in range(num_classes)]
    cov_tp = correct * n - sum(a * b for a, b in zip(t_k, p_k))
    cov_pp = n * n - sum(b * b for b in p_k)
    cov_tt = n * n - sum(a * a for a in t_k)
    if cov_pp * cov_tt == 0:
        return 0.0
    return cov_tp / math.sqrt(cov_tt * cov_pp)


def pearson(x, y):
    n = len(x)
    if n < 2:
        return math.nan
    mx, my = sum(x) / n, sum(y) / n
    dx = [v - mx for v in x]
    dy = [v - my for v in y]
    sxx, syy = sum(v * v for v in dx), sum(v * v for v in dy)
    if sxx == 0 or syy == 0:
        return math.nan
    r = sum(a * b for a, b in zip(dx, dy)) / math.sqrt(sxx * syy)
    return max(-1.0, min(1.0, r))


def average_ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):  # positions i..j hold ranks i+1..j+1: their mean
            ranks[order[k]] = (i + j + 2) / 2.0
        i = j + 1
    return ranks


def spearman(x, y):
    return pearson(average_ranks(x), average_ranks(y))


def classification_case(name, predicted, truth, num_classes):
    acc = accuracy(predicted, truth)
    f = f1(predicted, truth, num_classes)
    expected = {"accuracy": acc, "f1": f, "mcc": mcc(predicted, truth, num_classes)}
    if num_classes == 2:
        expected["accuracy_f1"] = (acc + f) / 2
    return {"name": name, "kind": "classification", "num_classes": num_classes,
            "predicted": predicted, "truth": truth, "expected": expected}


def regression_case(name, predicted, truth):
    p, s = pearson(predicted, truth), spearman(predicted, truth)
    mse = sum((a - b) ** 2 for a, b in zip(predicted, truth)) / len(truth)
    expected = {"pearson": p, "spearman": s, "pearson_spearman": (p + s) / 2, "mse": mse}
    return {"name": name, "kind": "regression", "predicted": predicted, "truth": truth,
            "expected": expected}


def cases():
    out = [
        classification_case("binary mixed (MRPC-like)",
                            [1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0],
                            [1, 0, 0, 1, 0, 1, 1, 1, 0, 1, 0, 0], 2),
        classification_case("binary, every truth positive", [1, 0, 1, 1, 0], [1, 1, 1, 1, 1], 2),
        classification_case("binary, every prediction negative", [0, 0, 0, 0, 0, 0], [1, 0, 1, 0, 0, 1], 2),
        classification_case("binary, no positive anywhere", [0, 0, 0, 0], [0, 0, 0, 0], 2),
        classification_case("binary, perfect", [0, 1, 1, 0, 1], [0, 1, 1, 0, 1], 2),
        classification_case("binary, inverted", [1, 0, 0, 1], [0, 1, 1, 0], 2),
        classification_case("binary, one example", [1], [0], 2),
        classification_case("three classes (MNLI-like)",
                            [0, 1, 2, 2, 1, 0, 0, 2, 1, 1],
                            [0, 1, 2, 1, 1, 0, 2, 2, 0, 1], 3),
        classification_case("three classes, class 2 never seen",
                            [0, 1, 1, 0, 0, 1], [0, 1, 0, 0, 1, 1], 3),
        classification_case("three classes, constant prediction", [2, 2, 2, 2, 2], [0, 1, 2, 2, 1], 3),
        regression_case("scores (STS-B-like)",
                        [4.1, 0.3, 2.2, 3.9, 1.5, 4.8, 2.6, 0.9],
                        [3.8, 0.0, 2.5, 4.2, 1.0, 5.0, 2.4, 1.2]),
        regression_case("ties on both sides",
                        [2.5, 2.5, 1.0, 4.0, 4.0, 4.0, 0.5, 3.0],
                        [3.0, 2.0, 1.0, 4.0, 4.0, 5.0, 1.0, 3.0]),
        regression_case("monotone but not linear", [1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 4.0, 9.0, 16.0, 25.0]),
        regression_case("negative correlation", [0.0, 1.0, 2.0, 3.0], [3.0, 2.5, 0.5, 0.0]),
        regression_case("constant prediction", [2.5, 2.5, 2.5, 2.5], [1.0, 2.0, 3.0, 4.0]),
        regression_case("constant truth", [1.0, 2.0, 3.0], [5.0, 5.0, 5.0]),
        regression_case("two pairs", [0.2, 0.1], [1.0, 3.0]),
        regression_case("one pair", [1.5], [2.0]),
    ]
    return out


def encode(value):
    """NaN as null: JSON has no NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [encode(v) for v in value]
    return value


def main():
    text = json.dumps(encode(cases()), indent=1, allow_nan=False) + "\n"
    if sys.argv[1:] == ["--check"]:
        with open(CASES_FILE, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{CASES_FILE} differs from what {os.path.basename(__file__)} computes: rerun it")
                return 1
        print(f"{CASES_FILE}: up to date")
        return 0
    with open(CASES_FILE, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
