#!/usr/bin/python3
"""PyTorch side of `scripts/bench/compare-pytorch --inference`: BERT inference requests, timed.

The same workload as `loom bench --inference` (host/cli/inference_bench.cpp): the model config's
encoder (the Layer of pytorch_bert_train.py: post-LN, erf or tanh GELU, one fused QKV projection)
and the head the Loom recipe names — span (Hugging Face BertForQuestionAnswering's qa_outputs:
start/end logits), classifier (pooler + Linear to num_labels) or pretraining (pooler + NSP; no
labelled positions, so no MLM decoder) — in eval mode (no dropout) under torch.inference_mode, on
full-length batches of random ids (every position attended, segment 0). A request: inputs to the
device, forward, outputs back to the host (a no-op copy on the CPU). Sequences per second =
batch / mean latency; percentiles by numpy.percentile's default (linear interpolation between
closest ranks), as Loom's latency_summary.hpp.

bf16: torch.autocast(dtype=torch.bfloat16) held open for a row's requests, so the fp32 weights are
cast to bf16 once per row (autocast's weight cache) and kept, as Loom keeps its bf16 working copy;
autocast then runs linear/matmul in bf16 and keeps the ops on its fp32 list in fp32. Prints one
JSON object.
"""
import argparse
import json
import sys
import time

import numpy
import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # no __pycache__ in the source tree from the import below
from pytorch_bert_train import Layer, init_like_hugging_face  # noqa: E402


class BertForInference(nn.Module):
    def __init__(self, c, head, num_labels):
        super().__init__()
        h = c["hidden_size"]
        self.words = nn.Embedding(c["vocab_size"], h)
        self.positions = nn.Embedding(c["max_position_embeddings"], h)
        self.types = nn.Embedding(c["type_vocab_size"], h)
        self.norm = nn.LayerNorm(h, eps=c.get("layer_norm_eps", 1e-12))
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.head = head
        if head == "span":
            self.qa_outputs = nn.Linear(h, 2)
        else:
            self.pooler = nn.Linear(h, h)
            self.classifier = nn.Linear(h, num_labels if head == "classifier" else 2)
        self.apply(lambda m: init_like_hugging_face(m, c.get("initializer_range", 0.02)))

    def forward(self, ids, types, attention_mask):
        b, t = ids.shape
        positions = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.norm(self.words(ids) + self.positions(positions) + self.types(types))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, mask)
        if self.head == "span":
            start, end = self.qa_outputs(x).float().split(1, dim=-1)
            return start.squeeze(-1).contiguous(), end.squeeze(-1).contiguous()
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return (self.classifier(pooled).float(),)


def measure(model, a, batch, seq, precision, device, vocab_size):
    generator = torch.Generator().manual_seed(a.seed)
    ids = torch.randint(1, vocab_size, (batch, seq), generator=generator)  # never [PAD] (id 0)
    types = torch.zeros(batch, seq, dtype=torch.long)
    attention_mask = torch.ones(batch, seq, dtype=torch.long)
    cuda = device == "cuda"
    seconds = []
    with torch.inference_mode(), torch.autocast(device, dtype=torch.bfloat16, enabled=precision == "bf16"):
        for i in range(a.warmup + a.steps):
            start = time.perf_counter()
            outputs = model(ids.to(device), types.to(device), attention_mask.to(device))
            host = [o.cpu() for o in outputs]
            if cuda:
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - start
            if i >= a.warmup:
                seconds.append(elapsed)
    mean = sum(seconds) / len(seconds)
    ms = numpy.array(seconds) * 1e3
    return {
        "batch": batch,
        "seq": seq,
        "precision": precision,
        "sequences_per_second": batch / mean,
        "tokens_per_second": batch * seq / mean,
        "latency_ms": {"mean": float(ms.mean()), "min": float(ms.min()), "max": float(ms.max()),
                       "p50": float(numpy.percentile(ms, 50)), "p90": float(numpy.percentile(ms, 90)),
                       "p99": float(numpy.percentile(ms, 99))},
        "output_bytes": sum(h.numel() * h.element_size() for h in host),
        "finite": all(bool(torch.isfinite(h).all()) for h in host),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--head", choices=["span", "classifier", "pretraining"], default="span")
    p.add_argument("--num-labels", type=int, default=2)
    p.add_argument("--batch-sizes", default="1,8")
    p.add_argument("--seq-lengths", default="128,384")
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    config = json.load(open(a.config))
    model = BertForInference(config, a.head, a.num_labels).to(a.device).eval()
    results = []
    for precision in a.precisions.split(","):
        if precision not in ("fp32", "bf16"):
            raise SystemExit(f"--precisions: {precision} is not fp32 or bf16")
        for batch in (int(b) for b in a.batch_sizes.split(",")):
            for seq in (int(s) for s in a.seq_lengths.split(",")):
                results.append(measure(model, a, batch, seq, precision, a.device, config["vocab_size"]))
    print(json.dumps({"torch": torch.__version__, "threads": a.threads, "device": a.device, "head": a.head,
                      "parameters": sum(p.numel() for p in model.parameters()),
                      "steps": a.steps, "warmup": a.warmup, "results": results}))


if __name__ == "__main__":
    main()
