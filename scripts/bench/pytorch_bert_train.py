#!/usr/bin/python3
"""PyTorch side of scripts/bench/compare-pytorch: BERT pre-training steps on CPU or GPU, timed.

The model is Hugging Face BertForPreTraining's computation written with plain torch modules
(post-LN encoder, erf or tanh GELU per hidden_act, tied MLM decoder evaluated on the masked rows
only — as Loom and NVIDIA's reference do — plus pooler and NSP head), trained with
torch.optim.AdamW. Runs under Debian's /usr/bin/python3 with python3-torch. Prints one JSON line.

With --device cuda (the GPU reference of scripts/bench/compare-pytorch-cuda): attention through
F.scaled_dot_product_attention (flash / memory-efficient kernels), AdamW(fused=True), bf16 autocast
(or tf32 matmuls with --precision tf32), optionally torch.compile; the JSON adds peak GPU memory.
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, self.heads = c["hidden_size"], c["num_attention_heads"]
        self.qkv = nn.Linear(h, 3 * h)
        self.attention_output = nn.Linear(h, h)
        self.norm1 = nn.LayerNorm(h, eps=c.get("layer_norm_eps", 1e-12))
        self.intermediate = nn.Linear(h, c["intermediate_size"])
        self.output = nn.Linear(c["intermediate_size"], h)
        self.norm2 = nn.LayerNorm(h, eps=c.get("layer_norm_eps", 1e-12))
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.attention_dropout = nn.Dropout(c["attention_probs_dropout_prob"])
        self.gelu = "tanh" if c["hidden_act"] in ("gelu_new", "gelu_pytorch_tanh") else "none"

    def forward(self, x, mask):
        b, t, h = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        if x.is_cuda:  # SDPA: the fused attention kernels a GPU user of PyTorch gets
            p = self.attention_dropout.p if self.training else 0.0
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.dtype), dropout_p=p)
        else:
            scores = q @ k.transpose(-1, -2) / math.sqrt(h // self.heads) + mask
            context = self.attention_dropout(scores.softmax(-1)) @ v
        context = context.transpose(1, 2).reshape(b, t, h)
        x = self.norm1(x + self.dropout(self.attention_output(context)))
        y = self.output(F.gelu(self.intermediate(x), approximate=self.gelu))
        return self.norm2(x + self.dropout(y))


class BertForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.words = nn.Embedding(c["vocab_size"], h)
        self.positions = nn.Embedding(c["max_position_embeddings"], h)
        self.types = nn.Embedding(c["type_vocab_size"], h)
        self.norm = nn.LayerNorm(h, eps=c.get("layer_norm_eps", 1e-12))
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.pooler = nn.Linear(h, h)
        self.nsp = nn.Linear(h, 2)
        self.transform = nn.Linear(h, h)
        self.transform_norm = nn.LayerNorm(h, eps=c.get("layer_norm_eps", 1e-12))
        self.decoder_bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        self.gelu = self.layers[0].gelu
        self.apply(lambda m: init_like_hugging_face(m, c.get("initializer_range", 0.02)))

    def forward(self, ids, types, attention_mask, masked_rows, masked_labels, nsp_labels):
        b, t = ids.shape
        positions = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.dropout(self.norm(self.words(ids) + self.positions(positions) + self.types(types)))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        nsp_loss = F.cross_entropy(self.nsp(pooled), nsp_labels)
        rows = x.reshape(b * t, -1).index_select(0, masked_rows)  # the masked positions only
        # .float(): CPU autocast in PyTorch 1.13 leaves layer_norm out of its lists (bf16 in, fp32 weight).
        z = self.transform_norm(F.gelu(self.transform(rows), approximate=self.gelu).float())
        logits = F.linear(z, self.words.weight, self.decoder_bias)
        return F.cross_entropy(logits.float(), masked_labels) + nsp_loss


def init_like_hugging_face(module, std):
    """BertPreTrainedModel._init_weights, as Loom initialises. PyTorch's own N(0, 1) embeddings would
    give logits of std ~16 whose softmax gradients are mostly denormal — 10x slower GEMMs on CPU."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        module.weight.data.normal_(0.0, std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        module.bias.data.zero_()
    if isinstance(module, nn.LayerNorm):
        module.weight.data.fill_(1.0)
        module.bias.data.zero_()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--predictions", type=int, default=20)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precision", choices=["fp32", "bf16", "tf32"], default="fp32")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (GPU runs)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cuda = a.device == "cuda"
    torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
    config = json.load(open(a.config))
    model = BertForPreTraining(config).to(a.device)
    # fused= exists from torch 2.0 (Debian's CPU torch is 1.13): asked for only on the GPU.
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, **({"fused": True} if cuda else {}))
    forward = torch.compile(model) if a.compile else model
    b, t = a.batch, a.seq
    ids = torch.randint(0, config["vocab_size"], (b, t))
    types = torch.zeros(b, t, dtype=torch.long)
    attention_mask = torch.ones(b, t, dtype=torch.long)
    masked = torch.stack([torch.randperm(t - 1)[: a.predictions] + 1 for _ in range(b)])
    masked_rows = (masked + torch.arange(b).unsqueeze(1) * t).flatten().sort().values
    masked_labels = torch.randint(0, config["vocab_size"], (masked_rows.numel(),))
    nsp_labels = torch.randint(0, 2, (b,))
    batch = [x.to(a.device) for x in (ids, types, attention_mask, masked_rows, masked_labels, nsp_labels)]
    elapsed = 0.0
    for step in range(a.warmup + a.steps):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = forward(*batch)
        loss.backward()
        optimizer.step()
        if cuda:
            torch.cuda.synchronize()
        if step >= a.warmup:
            elapsed += time.perf_counter() - start
    result = {"sequences_per_second": a.steps * b / elapsed, "loss": float(loss), "torch": torch.__version__,
              "threads": a.threads, "device": a.device, "compiled": a.compile}
    if cuda:
        result["device_name"] = torch.cuda.get_device_name()
        result["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
