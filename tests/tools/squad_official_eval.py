#!/usr/bin/python3
"""A re-implementation of the official SQuAD evaluation scripts (evaluate-v1.1.py and
evaluate-v2.0.py), written from their published algorithm, kept as the reference the tests of
`loom score squad` are checked against.

It is the algorithm of those scripts, step for step, with nothing added:
- normalize_answer: str.lower(), drop every character of string.punctuation, replace the regex
  \\b(a|an|the)\\b by a space, then ' '.join(text.split());
- v1.1: exact match and token F1 (Counter intersection), the best over the gold answers, summed in
  file order; a question without a prediction counts 0 (and is reported on stderr);
- v2.0: gold answers that normalise to '' are dropped ('' is the only gold of an unanswerable
  question), F1 of an empty side is 1 when both are empty; a question without a prediction is
  left out of the raw scores; --na-prob-thresh (default 1.0) turns a prediction whose no-answer
  probability exceeds it into "no answer"; with --na-prob, best_exact/best_f1 and their
  thresholds from find_best_thresh (no-answer probabilities in ascending order, ties in the
  file's order).
Where the official scripts would fail (a v1.1 question without answers, a v2.0 question without
a prediction, a missing no-answer probability), this raises too.

Usage: squad_official_eval.py DEV.json PREDICTIONS.json [--na-prob NA.json] [--na-prob-thresh T]
       squad_official_eval.py --normalize TEXTS.json   (prints [text, normalized, tokens] per text)
       squad_official_eval.py --cases CASES.json       (CASES: [{"name", "args"}], args relative to
                                                        CASES' folder; prints them with "expected")
Prints one JSON object on the last line of stdout, as `loom score squad` does. The version is
taken from the file's "version" ("1.1" or "v1.1": v1.1; "2.0" or "v2.0": v2.0).
"""
import argparse
import collections
import json
import os
import re
import subprocess
import string
import sys


def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""
    def remove_articles(text):
        regex = re.compile(r'\b(a|an|the)\b', re.UNICODE)
        return re.sub(regex, ' ', text)

    def white_space_fix(text):
        return ' '.join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return ''.join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


# ---- v1.1 -------------------------------------------------------------------------------------

def f1_score_v1(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def exact_match_score_v1(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)


def evaluate_v1(dataset, predictions):
    f1 = exact_match = total = 0
    for article in dataset:
        for paragraph in article['paragraphs']:
            for qa in paragraph['qas']:
                total += 1
                if qa['id'] not in predictions:
                    message = 'Unanswered question ' + qa['id'] + ' will receive score 0.'
                    print(message, file=sys.stderr)
                    continue
                ground_truths = list(map(lambda x: x['text'], qa['answers']))
                prediction = predictions[qa['id']]
                exact_match += metric_max_over_ground_truths(exact_match_score_v1, prediction, ground_truths)
                f1 += metric_max_over_ground_truths(f1_score_v1, prediction, ground_truths)
    exact_match = 100.0 * exact_match / total
    f1 = 100.0 * f1 / total
    return {'exact_match': exact_match, 'f1': f1}


# ---- v2.0 -------------------------------------------------------------------------------------

def make_qid_to_has_ans(dataset):
    qid_to_has_ans = {}
    for article in dataset:
        for p in article['paragraphs']:
            for qa in p['qas']:
                qid_to_has_ans[qa['id']] = bool(qa['answers'])
    return qid_to_has_ans


def get_tokens(s):
    if not s:
        return []
    return normalize_answer(s).split()


def compute_exact(a_gold, a_pred):
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        # If either is no-answer, then F1 is 1 if they agree, 0 otherwise
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def get_raw_scores(dataset, preds):
    exact_scores = {}
    f1_scores = {}
    for article in dataset:
        for p in article['paragraphs']:
            for qa in p['qas']:
                qid = qa['id']
                gold_answers = [a['text'] for a in qa['answers'] if normalize_answer(a['text'])]
                if not gold_answers:
                    # For unanswerable questions, only correct answer is empty string
                    gold_answers = ['']
                if qid not in preds:
                    print('Missing prediction for %s' % qid, file=sys.stderr)
                    continue
                a_pred = preds[qid]
                # Take max over all gold answers
                exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
                f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
    new_scores = {}
    for qid, s in scores.items():
        pred_na = na_probs[qid] > na_prob_thresh
        if pred_na:
            new_scores[qid] = float(not qid_to_has_ans[qid])
        else:
            new_scores[qid] = s
    return new_scores


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
    if not qid_list:
        total = len(exact_scores)
        return collections.OrderedDict([
            ('exact', 100.0 * sum(exact_scores.values()) / total),
            ('f1', 100.0 * sum(f1_scores.values()) / total),
            ('total', total),
        ])
    total = len(qid_list)
    return collections.OrderedDict([
        ('exact', 100.0 * sum(exact_scores[k] for k in qid_list) / total),
        ('f1', 100.0 * sum(f1_scores[k] for k in qid_list) / total),
        ('total', total),
    ])


def merge_eval(main_eval, new_eval, prefix):
    for k in new_eval:
        main_eval['%s_%s' % (prefix, k)] = new_eval[k]


def find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for i, qid in enumerate(qid_list):
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            if preds[qid]:
                diff = -1
            else:
                diff = 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def find_all_best_thresh(main_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans):
    best_exact, exact_thresh = find_best_thresh(preds, exact_raw, na_probs, qid_to_has_ans)
    best_f1, f1_thresh = find_best_thresh(preds, f1_raw, na_probs, qid_to_has_ans)
    main_eval['best_exact'] = best_exact
    main_eval['best_exact_thresh'] = exact_thresh
    main_eval['best_f1'] = best_f1
    main_eval['best_f1_thresh'] = f1_thresh


def evaluate_v2(dataset, preds, na_probs, na_prob_thresh):
    have_na_probs = na_probs is not None
    if not have_na_probs:
        na_probs = {k: 0.0 for k in preds}
    qid_to_has_ans = make_qid_to_has_ans(dataset)  # maps qid to True/False
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    exact_raw, f1_raw = get_raw_scores(dataset, preds)
    exact_thresh = apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    f1_thresh = apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    out_eval = make_eval_dict(exact_thresh, f1_thresh)
    if has_ans_qids:
        has_ans_eval = make_eval_dict(exact_thresh, f1_thresh, qid_list=has_ans_qids)
        merge_eval(out_eval, has_ans_eval, 'HasAns')
    if no_ans_qids:
        no_ans_eval = make_eval_dict(exact_thresh, f1_thresh, qid_list=no_ans_qids)
        merge_eval(out_eval, no_ans_eval, 'NoAns')
    if have_na_probs:
        find_all_best_thresh(out_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans)
    return out_eval


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data_file", nargs="?")
    parser.add_argument("pred_file", nargs="?")
    parser.add_argument("--na-prob", dest="na_prob_file")
    parser.add_argument("--na-prob-thresh", type=float, default=1.0)
    parser.add_argument("--normalize", metavar="TEXTS.json",
                        help="print [text, normalize_answer(text), its tokens] for each text of a JSON list")
    parser.add_argument("--cases", metavar="CASES.json",
                        help="run each case's arguments, print the cases with their results")
    opts = parser.parse_args()
    if opts.normalize:
        with open(opts.normalize, encoding="utf-8") as f:
            texts = json.load(f)
        print(json.dumps([[t, normalize_answer(t), normalize_answer(t).split()] for t in texts], indent=1))
        return
    if opts.cases:
        with open(opts.cases, encoding="utf-8") as f:
            cases = json.load(f)
        folder = os.path.dirname(os.path.abspath(opts.cases))
        for case in cases:
            command = [sys.executable, os.path.abspath(__file__)] + [
                os.path.join(folder, a) if a.endswith(".json") else a for a in case["args"]]
            result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True)
            case["expected"] = json.loads(result.stdout.strip().splitlines()[-1])
        print(json.dumps(cases, indent=1))
        return
    with open(opts.data_file, encoding="utf-8") as f:
        dataset_json = json.load(f)
    with open(opts.pred_file, encoding="utf-8") as f:
        preds = json.load(f)
    version = str(dataset_json.get("version", ""))
    if version in ("2.0", "v2.0"):
        na_probs = None
        if opts.na_prob_file:
            with open(opts.na_prob_file, encoding="utf-8") as f:
                na_probs = json.load(f)
        result = evaluate_v2(dataset_json["data"], preds, na_probs, opts.na_prob_thresh)
    elif version in ("1.1", "v1.1"):
        result = evaluate_v1(dataset_json["data"], preds)
    else:
        sys.exit(f"{opts.data_file}: version {version!r} is neither 1.1 nor 2.0")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
