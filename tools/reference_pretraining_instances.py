#!/usr/bin/python3
"""Twin of BERT's create_pretraining_data.py instance creation, for parity tests of Loom's C++.

Transcribes create_training_instances / create_instances_from_document / truncate_seq_pair /
create_masked_lm_predictions (google-research/bert, as used by NVIDIA DeepLearningExamples; see
docs/reference.md §2.6–§2.7) working on token ids instead of token strings, with
Python's own `random.Random(seed)` — the generator Loom's PythonRandom reproduces.

Usage: reference_pretraining_instances.py INPUT.json OUTPUT.json
INPUT: {"documents": [[[id, ...], ...], ...], "vocab_size": V, "cls": id, "sep": id, "mask": id,
        "continuation": [ids of ## pieces], "max_seq_length": L, "max_predictions": P,
        "masked_lm_prob": p, "short_seq_prob": s, "dupe_factor": d, "seed": n,
        "whole_word_masking": bool}
OUTPUT: [{"tokens": [...], "segment_ids": [...], "masked_positions": [...], "masked_ids": [...],
          "is_random_next": bool}, ...] in the shuffled order the reference writes them.
Standard library only.
"""
import json
import random
import sys


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    while True:
        total_length = len(tokens_a) + len(tokens_b)
        if total_length <= max_num_tokens:
            break
        trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        assert len(trunc_tokens) >= 1
        if rng.random() < 0.5:
            del trunc_tokens[0]
        else:
            trunc_tokens.pop()


def create_masked_lm_predictions(tokens, cfg, rng):
    cand_indexes = []
    for (i, token) in enumerate(tokens):
        if token == cfg["cls"] or token == cfg["sep"]:
            continue
        if cfg["whole_word_masking"] and len(cand_indexes) >= 1 and token in cfg["continuation_set"]:
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])
    rng.shuffle(cand_indexes)
    output_tokens = list(tokens)
    num_to_predict = min(cfg["max_predictions"], max(1, int(round(len(tokens) * cfg["masked_lm_prob"]))))
    masked_lms = []
    covered_indexes = set()
    for index_set in cand_indexes:
        if len(masked_lms) >= num_to_predict:
            break
        if len(masked_lms) + len(index_set) > num_to_predict:
            continue
        is_any_index_covered = False
        for index in index_set:
            if index in covered_indexes:
                is_any_index_covered = True
                break
        if is_any_index_covered:
            continue
        for index in index_set:
            covered_indexes.add(index)
            if rng.random() < 0.8:
                masked_token = cfg["mask"]
            else:
                if rng.random() < 0.5:
                    masked_token = tokens[index]
                else:
                    masked_token = rng.randint(0, cfg["vocab_size"] - 1)
            output_tokens[index] = masked_token
            masked_lms.append((index, tokens[index]))
    masked_lms = sorted(masked_lms, key=lambda x: x[0])
    return output_tokens, [p for p, _ in masked_lms], [label for _, label in masked_lms]


def create_instances_from_document(all_documents, document_index, cfg, rng):
    document = all_documents[document_index]
    max_num_tokens = cfg["max_seq_length"] - 3
    target_seq_length = max_num_tokens
    if rng.random() < cfg["short_seq_prob"]:
        target_seq_length = rng.randint(2, max_num_tokens)
    instances = []
    current_chunk = []
    current_length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            if current_chunk:
                a_end = 1
                if len(current_chunk) >= 2:
                    a_end = rng.randint(1, len(current_chunk) - 1)
                tokens_a = []
                for j in range(a_end):
                    tokens_a.extend(current_chunk[j])
                tokens_b = []
                is_random_next = False
                if len(current_chunk) == 1 or rng.random() < 0.5:
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)
                    for _ in range(10):
                        random_document_index = rng.randint(0, len(all_documents) - 1)
                        if random_document_index != document_index:
                            break
                    if random_document_index == document_index:
                        is_random_next = False
                    random_document = all_documents[random_document_index]
                    random_start = rng.randint(0, len(random_document) - 1)
                    for j in range(random_start, len(random_document)):
                        tokens_b.extend(random_document[j])
                        if len(tokens_b) >= target_b_length:
                            break
                    num_unused_segments = len(current_chunk) - a_end
                    i -= num_unused_segments
                else:
                    is_random_next = False
                    for j in range(a_end, len(current_chunk)):
                        tokens_b.extend(current_chunk[j])
                truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
                assert len(tokens_a) >= 1
                assert len(tokens_b) >= 1
                tokens = [cfg["cls"]] + tokens_a + [cfg["sep"]] + tokens_b + [cfg["sep"]]
                segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                tokens, positions, labels = create_masked_lm_predictions(tokens, cfg, rng)
                instances.append({"tokens": tokens, "segment_ids": segment_ids, "masked_positions": positions,
                                  "masked_ids": labels, "is_random_next": is_random_next})
            current_chunk = []
            current_length = 0
        i += 1
    return instances


def main():
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    cfg["continuation_set"] = set(cfg["continuation"])
    rng = random.Random(cfg["seed"])
    all_documents = [d for d in cfg["documents"] if d]
    rng.shuffle(all_documents)
    instances = []
    for _ in range(cfg["dupe_factor"]):
        for document_index in range(len(all_documents)):
            instances.extend(create_instances_from_document(all_documents, document_index, cfg, rng))
    rng.shuffle(instances)
    with open(sys.argv[2], "w") as f:
        json.dump(instances, f)


if __name__ == "__main__":
    main()
