#!/usr/bin/python3
"""PyTorch side of the ModernBERT rows of gpu-check's unpadded part: Hugging Face transformers'
ModernBertForMaskedLM training steps, timed, on a batch with padding as Loom's is.

The model is transformers' own (ModernBertConfig from the Loom model config, which is a Hugging
Face config; weights random), in one of its attention implementations:
  sdpa               the padded batch, F.scaled_dot_product_attention with the padding and
                     sliding-window masks;
  eager              the padded batch, attention as matrix products and a softmax;
  flash_attention_2  transformers' unpadded path: the batch's real tokens packed and FlashAttention-2's
                     variable-length kernels (needs the flash_attn package).
As Loom: the MLM head on the labelled rows only (sparse_prediction), bf16 autocast over f32
weights, AdamW(fused=True), no dropout (the config's), none of transformers' optional torch.compile
of parts (reference_compile false). Rows hold `--seq` positions; row i has L_i real tokens, drawn so
that the batch's padding share is about `--padding-share`; min(max_predictions, 15% of L_i)
positions per row are labelled.

Prints one JSON line: "available" true with "seconds_per_step", "sequences_per_second",
"real_tokens_per_second", "padding_share", "peak_memory_bytes", "parameters" and the versions; or
"available" false with "reason" (transformers or flash_attn missing, no GPU, an error on the way),
so that a caller records why instead of failing.
"""
import argparse
import json
import random
import sys
import time


def lengths_for(batch: int, seq: int, padding_share: float, rng: random.Random) -> list:
    """Row lengths whose mean padding is about padding_share: seq − u·2·share·seq, u uniform."""
    spread = min(2.0 * padding_share, 1.0) * seq
    return [max(8, min(seq, seq - round(rng.random() * spread))) for _ in range(batch)]


def make_batch(torch, config, lengths: list, seq: int, max_predictions: int, rng: random.Random, device: str):
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    ids = torch.full((len(lengths), seq), pad, dtype=torch.long)
    mask = torch.zeros((len(lengths), seq), dtype=torch.long)
    labels = torch.full((len(lengths), seq), -100, dtype=torch.long)
    low = min(1000, config.vocab_size // 2)
    for row, length in enumerate(lengths):
        ids[row, :length] = torch.tensor([rng.randrange(low, config.vocab_size) for _ in range(length)])
        mask[row, :length] = 1
        for position in rng.sample(range(length), min(max_predictions, max(1, round(0.15 * length)))):
            labels[row, position] = ids[row, position]
    return ids.to(device), mask.to(device), labels.to(device)


def measure(args) -> dict:
    import torch
    import transformers
    from transformers import AutoModelForMaskedLM, ModernBertConfig

    if args.attention == "flash_attention_2":
        import flash_attn  # noqa: F401  (transformers' unpadded path needs it)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    settings = json.load(open(args.config))
    settings.pop("architectures", None)
    config = ModernBertConfig(**settings)
    config.sparse_prediction = True  # the head on the labelled rows only, as Loom's
    config.reference_compile = False  # plain eager PyTorch: nothing compiled behind the caller's back
    torch.manual_seed(args.seed)
    model = AutoModelForMaskedLM.from_config(config, attn_implementation=args.attention).to(args.device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, fused=args.device == "cuda")
    rng = random.Random(args.seed)
    lengths = lengths_for(args.batch, args.seq, args.padding_share, rng)
    ids, mask, labels = make_batch(torch, config, lengths, args.seq, args.max_predictions, rng, args.device)

    def step():
        with torch.autocast(device_type=args.device, dtype=torch.bfloat16):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    def synchronize():
        if args.device == "cuda":
            torch.cuda.synchronize()

    for _ in range(args.warmup):
        step()
    synchronize()
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    synchronize()
    seconds = (time.perf_counter() - start) / args.steps
    real = sum(lengths)
    return {"available": True, "seconds_per_step": seconds, "sequences_per_second": args.batch / seconds,
            "real_tokens_per_second": real / seconds, "padding_share": 1 - real / (args.batch * args.seq),
            "loss": float(loss), "parameters": sum(p.numel() for p in model.parameters()),
            "peak_memory_bytes": torch.cuda.max_memory_allocated() if args.device == "cuda" else None,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "attn_implementation": getattr(model.config, "_attn_implementation", None),
            "reference_compile": getattr(model.config, "reference_compile", None)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="a Hugging Face ModernBertConfig JSON (configs/models/...)")
    p.add_argument("--attention", choices=["sdpa", "eager", "flash_attention_2"], default="sdpa")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--padding-share", type=float, default=0.0)
    p.add_argument("--max-predictions", type=int, default=80)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    row = {"attention": args.attention, "batch": args.batch, "seq": args.seq}
    try:
        row.update(measure(args))
    except Exception as error:  # noqa: BLE001  (any failure is reported, not raised: see the docstring)
        row.update(available=False, reason=f"{type(error).__name__}: {error}".strip())
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
