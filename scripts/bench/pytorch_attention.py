#!/usr/bin/python3
"""PyTorch side of scripts/bench/compare-attention: one attention layer, forward + backward, timed.

The same call pytorch_bert_train.py makes in each encoder layer on the GPU:
F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p) with q, k, v the per-head
views of one [B, T, 3·H·d] activation (view(b, t, 3, heads, d).permute(2, 0, 3, 1, 4), no copy)
and the key-padding mask additive, [B, 1, 1, T] in q's dtype (finfo.min at padded keys). The
padding: the last floor(padded_keys·T) keys of the last round(padded_rows·B) sequences, as
loom_attention_bench pads them. Backward: the gradients of q, k and v (torch.autograd.grad,
graph kept) for a random gradient of the context.

Timing as loom_attention_bench: `iterations` forwards, then as many backwards (of one forward),
then as many forward + backward pairs, each series ended by a synchronisation and timed on the host
clock, after `warmup` untimed pairs. Prints one JSON line; exits 1 with the reason on stderr when
torch is missing or (--device cuda) sees no GPU.
"""
import argparse
import json
import math
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--dtype", choices=["bf16", "f16", "f32"], default="bf16")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--padded-rows", type=float, default=0.5)
    p.add_argument("--padded-keys", type=float, default=0.1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--threads", type=int, default=2, help="CPU threads (--device cpu)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    a = p.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as error:
        sys.exit(f"pytorch_attention: no torch ({error})")
    if not hasattr(F, "scaled_dot_product_attention"):
        sys.exit(f"pytorch_attention: torch {torch.__version__} has no scaled_dot_product_attention (PyTorch 2.0 "
                 "or newer has)")
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        sys.exit("pytorch_attention: torch sees no CUDA device")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[a.dtype]
    b, t, heads, d = a.batch, a.seq, a.heads, a.head_dim
    qkv = torch.randn(b, t, 3 * heads * d, device=a.device, dtype=dtype, requires_grad=True)
    q, k, v = qkv.view(b, t, 3, heads, d).permute(2, 0, 3, 1, 4)
    padded_rows = math.floor(a.padded_rows * b + 0.5)  # as C++'s llround
    padded_keys = math.floor(a.padded_keys * t)
    attend = torch.ones(b, t, device=a.device)
    attend[b - padded_rows:, t - padded_keys:] = 0
    mask = ((1.0 - attend[:, None, None, :]) * torch.finfo(dtype).min).to(dtype)
    d_context = torch.randn(b, heads, t, d, device=a.device, dtype=dtype)

    def forward():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=a.dropout)

    def backward(context):
        return torch.autograd.grad(context, (q, k, v), d_context, retain_graph=True)

    def synchronize():
        if cuda:
            torch.cuda.synchronize()

    def time_ms(body):
        synchronize()
        start = time.perf_counter()
        for _ in range(a.iterations):
            body()
        synchronize()
        return (time.perf_counter() - start) * 1e3 / a.iterations

    for _ in range(a.warmup):
        backward(forward())
    forward_ms = time_ms(forward)
    context = forward()
    backward_ms = time_ms(lambda: backward(context))
    both_ms = time_ms(lambda: backward(forward()))
    result = {"program": "pytorch_attention.py", "torch": torch.__version__, "device": a.device,
              "batch": b, "heads": heads, "seq": t, "head_dim": d, "dtype": a.dtype, "gradient_dtype": a.dtype,
              "dropout": a.dropout, "padded_rows": padded_rows, "padded_keys_per_padded_row": padded_keys,
              "warmup": a.warmup, "iterations": a.iterations, "ms_forward_backward": both_ms,
              "ms_forward": forward_ms, "ms_backward": backward_ms}
    if cuda:
        result["device_name"] = torch.cuda.get_device_name()
        result["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
