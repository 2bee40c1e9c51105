#!/usr/bin/python3
"""Writes the PyTorch parity fixtures of Loom (tests/fixtures/parity/) and checks Loom files in PyTorch.

Run by hand, never in CI (CI has no torch): tools/setup-parity installs Debian's python3-torch and
python3-numpy, then

    /usr/bin/python3 tools/make_parity_fixtures.py              # regenerate every fixture
    /usr/bin/python3 tools/make_parity_fixtures.py --check-loom-file runs/x/model.safetensors \
        --config configs/models/bert-tiny.json                 # Loom-written weights load in PyTorch

The model below is a line-by-line twin of Hugging Face transformers' `BertForPreTraining` (eager
attention) in plain torch, with exactly its module tree, so `state_dict()` yields Hugging Face's
parameter names: post-LN encoder layers, GELU per `hidden_act` ("gelu" = erf; "gelu_new",
"gelu_fast", "gelu_pytorch_tanh" = tanh), LayerNorm with the config's eps, additive key mask
`(1 - mask) * finfo(dtype).min`, pooler tanh on [CLS], NSP Linear(H, 2), MLM transform
dense+GELU+LayerNorm, decoder tied to the word embeddings plus `cls.predictions.bias`
(`decoder.bias` is the same tensor), CrossEntropyLoss(ignore_index=-100) mean for MLM and NSP,
loss = mlm + nsp. Expected values are computed in float64 from float32 weights, so they measure
Loom's error alone.

Each case directory holds the `loom debug-step` inputs (config.json, model.safetensors, batch.json)
and the expected outputs in its OUT.json / GRADS.safetensors contract (expected.json,
expected_grads.safetensors; docs/checkpoints.md). safetensors files are written by the independent
writer below, laid out like the reference Rust writer (tensors sorted by dtype size then name,
header padded to 8 bytes, {"format": "pt"} metadata), so Loom's reader meets a file it did not write.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARITY_DIR = os.path.join(REPO, "tests", "fixtures", "parity")
SAFETENSORS_DIR = os.path.join(REPO, "tests", "fixtures", "safetensors")

# --------------------------------------------------------------------------------------------
# safetensors without the safetensors package (not in Debian 12)

DTYPES = {  # torch dtype -> (safetensors name, element size)
    torch.float64: ("F64", 8), torch.float32: ("F32", 4), torch.float16: ("F16", 2),
    torch.bfloat16: ("BF16", 2), torch.int64: ("I64", 8), torch.int32: ("I32", 4),
    torch.int16: ("I16", 2), torch.int8: ("I8", 1), torch.uint8: ("U8", 1), torch.bool: ("BOOL", 1),
}
BY_NAME = {name: dtype for dtype, (name, _) in DTYPES.items()}


def tensor_bytes(tensor):
    tensor = tensor.detach().contiguous().cpu()
    if tensor.dtype == torch.bfloat16:  # numpy has no bfloat16: reinterpret the bits
        tensor = tensor.view(torch.int16)
    return tensor.numpy().astype(tensor.numpy().dtype.newbyteorder("<")).tobytes()


def save_safetensors(tensors, path, metadata=None):
    """Writes {name: tensor} like the reference writer: sort by (dtype size desc, name)."""
    order = sorted(tensors, key=lambda n: (-DTYPES[tensors[n].dtype][1], n))
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in order:
        blob = tensor_bytes(tensors[name])
        header[name] = {"dtype": DTYPES[tensors[name].dtype][0], "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_safetensors(path):
    """Reads a safetensors file into {name: tensor} (and its metadata), checking the layout."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    metadata = header.pop("__metadata__", {})
    body = data[8 + length:]
    tensors, covered = {}, 0
    for name, info in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):
        begin, end = info["data_offsets"]
        assert begin == covered, f"{path}: gap or overlap at {name}"
        covered = end
        dtype = BY_NAME[info["dtype"]]
        raw_dtype = torch.int16 if dtype == torch.bfloat16 else dtype
        array = np.frombuffer(body[begin:end], dtype=torch.empty(0, dtype=raw_dtype).numpy().dtype.newbyteorder("<"))
        tensor = torch.from_numpy(array.copy()).view(dtype) if dtype == torch.bfloat16 else torch.from_numpy(array.copy())
        tensors[name] = tensor.reshape(info["shape"])
    assert covered == len(body), f"{path}: trailing bytes"
    return tensors, metadata


# --------------------------------------------------------------------------------------------
# The Hugging Face BertForPreTraining twin (transformers/models/bert/modeling_bert.py, eager)

def activation(name):
    if name == "gelu":
        return lambda x: F.gelu(x)  # erf form
    if name == "gelu_pytorch_tanh":
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "gelu_new":
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if name == "gelu_fast":
        return lambda x: 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))
    raise ValueError(f"hidden_act {name!r} not supported")


# bf16-mixed / fp16-mixed emulation (--measure only): every GEMM rounds its operands to bfloat16 or
# float16 and accumulates in float32, forward and backward, as Loom's 16-bit precisions do;
# everything else (LayerNorm, softmax, GELU, losses, gradients) stays float32. Gradients entering an
# fp16 GEMM carry the loss scale `loom debug-step` uses (1024), so they are rounded as Loom rounds them.
EMULATE_DTYPE = None
FP16_LOSS_SCALE = 1024.0


def rounded(x, scale=1.0):
    return (x * scale).to(EMULATE_DTYPE).to(torch.float32) / scale


class RoundedMatMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.matmul(rounded(a), rounded(b))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        g = rounded(grad, FP16_LOSS_SCALE if EMULATE_DTYPE == torch.float16 else 1.0)
        return torch.matmul(g, rounded(b).transpose(-1, -2)), torch.matmul(rounded(a).transpose(-1, -2), g)


def matmul(a, b):
    return RoundedMatMul.apply(a, b) if EMULATE_DTYPE is not None else torch.matmul(a, b)


def dense(linear, x):
    """nn.Linear through `matmul` (x flattened to rows so the weight gradient needs no reduction)."""
    if EMULATE_DTYPE is None:
        return linear(x)
    rows = matmul(x.reshape(-1, x.shape[-1]), linear.weight.t()).reshape(*x.shape[:-1], linear.weight.shape[0])
    return rows if linear.bias is None else rows + linear.bias


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c.get("pad_token_id", 0))
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).expand((1, -1)),
                             persistent=False)

    def forward(self, input_ids, token_type_ids):
        positions = self.position_ids[:, : input_ids.shape[1]]
        embeddings = (self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
                      + self.position_embeddings(positions))
        return self.LayerNorm(embeddings)  # dropout off


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c["num_attention_heads"]
        self.head_size = c["hidden_size"] // self.heads
        self.query = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.key = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.value = nn.Linear(c["hidden_size"], c["hidden_size"])

    def split(self, x):
        return x.view(x.shape[0], x.shape[1], self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, hidden, extended_mask):
        q, k, v = (self.split(dense(self.query, hidden)), self.split(dense(self.key, hidden)),
                   self.split(dense(self.value, hidden)))
        scores = matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + extended_mask
        context = matmul(nn.functional.softmax(scores, dim=-1), v)
        return context.permute(0, 2, 1, 3).contiguous().view(hidden.shape)


class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, hidden, residual):
        return self.LayerNorm(dense(self.dense, hidden) + residual)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, hidden, extended_mask):
        return self.output(self.self(hidden, extended_mask), hidden)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = activation(c["hidden_act"])

    def forward(self, hidden):
        return self.act(dense(self.dense, hidden))


class BertOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["intermediate_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, hidden, residual):
        return self.LayerNorm(dense(self.dense, hidden) + residual)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, hidden, extended_mask):
        attention = self.attention(hidden, extended_mask)
        return self.output(self.intermediate(attention), attention)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, hidden, extended_mask):
        for layer in self.layer:
            hidden = layer(hidden, extended_mask)
        return hidden


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, hidden):
        return torch.tanh(dense(self.dense, hidden[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c)

    def forward(self, input_ids, token_type_ids, attention_mask):
        dtype = self.embeddings.word_embeddings.weight.dtype
        # get_extended_attention_mask: [B, 1, 1, T], 0 for keys to attend, finfo.min for padding.
        extended = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        sequence = self.encoder(self.embeddings(input_ids, token_type_ids), extended)
        return sequence, self.pooler(sequence)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.act = activation(c["hidden_act"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, hidden):
        return self.LayerNorm(self.act(dense(self.dense, hidden)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transform = BertPredictionHeadTransform(c)
        self.decoder = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        self.decoder.bias = self.bias  # one tensor, two names (as in transformers)

    def forward(self, hidden):
        return dense(self.decoder, self.transform(hidden))


class BertPreTrainingHeads(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.predictions = BertLMPredictionHead(c)
        self.seq_relationship = nn.Linear(c["hidden_size"], 2)

    def forward(self, sequence, pooled):
        return self.predictions(sequence), dense(self.seq_relationship, pooled)


class BertForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.cls = BertPreTrainingHeads(c)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight  # tie_weights()
        self.vocab_size = c["vocab_size"]

    def forward(self, input_ids, token_type_ids, attention_mask, labels, next_sentence_label):
        sequence, pooled = self.bert(input_ids, token_type_ids, attention_mask)
        prediction_scores, seq_relationship_score = self.cls(sequence, pooled)
        loss_fct = nn.CrossEntropyLoss()  # ignore_index=-100, mean over non-ignored
        mlm_loss = loss_fct(prediction_scores.view(-1, self.vocab_size), labels.view(-1))
        nsp_loss = loss_fct(seq_relationship_score.view(-1, 2), next_sentence_label.view(-1))
        return mlm_loss + nsp_loss, mlm_loss, nsp_loss, prediction_scores, seq_relationship_score


def parameter_names(model):
    """Names save_pretrained writes: the state dict minus tied aliases (decoder.weight/bias)."""
    return [n for n, _ in model.named_parameters()]  # named_parameters() lists a shared tensor once


# --------------------------------------------------------------------------------------------
# Fixtures

# name: (config overrides, batch, seq, padded rows' lengths (None = no padding), HF extras in the file)
CASES = {
    # odd head count and head size 12, vocab 83 (not a multiple of 8), erf GELU, padding, and the
    # tensors torch.save writes besides the parameters (position_ids, tied decoder copies)
    "h36-heads3-erf-pad": (dict(hidden_size=36, num_attention_heads=3, num_hidden_layers=2, intermediate_size=50,
                                vocab_size=83, max_position_embeddings=24, hidden_act="gelu"),
                           3, 11, [11, 7, 4], True),
    # five heads of size 4, the tanh GELU of "gelu_new", LayerNorm eps 1e-5, longest sequence
    "h20-heads5-gelu_new-pad": (dict(hidden_size=20, num_attention_heads=5, num_hidden_layers=2, intermediate_size=28,
                                     vocab_size=61, max_position_embeddings=16, hidden_act="gelu_new",
                                     layer_norm_eps=1e-5),
                                2, 16, [16, 9], False),
    # PyTorch's tanh GELU, one layer, shortest sequence, three token types
    "h24-heads3-gelu_pytorch_tanh": (dict(hidden_size=24, num_attention_heads=3, num_hidden_layers=1,
                                          intermediate_size=37, vocab_size=50, max_position_embeddings=10,
                                          type_vocab_size=3, hidden_act="gelu_pytorch_tanh"),
                                     2, 7, [7, 5], False),
    # no padding, vocab a multiple of 8, three layers
    "h32-heads4-erf-nopad": (dict(hidden_size=32, num_attention_heads=4, num_hidden_layers=3, intermediate_size=64,
                                  vocab_size=96, max_position_embeddings=12, hidden_act="gelu"),
                             2, 9, None, False),
}

BASE_CONFIG = {  # a complete Hugging Face BertConfig, including keys Loom keeps but does not use
    "architectures": ["BertForPreTraining"], "attention_probs_dropout_prob": 0.1, "classifier_dropout": None,
    "hidden_dropout_prob": 0.1, "initializer_range": 0.02, "layer_norm_eps": 1e-12, "model_type": "bert",
    "pad_token_id": 0, "position_embedding_type": "absolute", "torch_dtype": "float32",
    "transformers_version": "4.36.2", "type_vocab_size": 2, "use_cache": True,
}


def random_weights(model, generator):
    """Weights that make every term matter: activations O(1), non-trivial LayerNorm and biases."""
    weights = {}
    for name, parameter in model.named_parameters():
        shape = parameter.shape
        if name.endswith("LayerNorm.weight"):
            value = 1.0 + 0.1 * torch.randn(shape, generator=generator)
        elif name.endswith("bias"):
            value = 0.1 * torch.randn(shape, generator=generator)
        elif "embeddings" in name:
            value = 0.2 * torch.randn(shape, generator=generator)
        else:  # Linear [out, in]
            value = torch.randn(shape, generator=generator) / math.sqrt(shape[1])
        weights[name] = value.float()
    return weights


def random_batch(config, batch, seq, lengths, generator):
    vocab = config["vocab_size"]
    lengths = lengths or [seq] * batch
    ids = [[0] * seq for _ in range(batch)]
    types = [[0] * seq for _ in range(batch)]
    mask = [[0] * seq for _ in range(batch)]
    labels = [[-100] * seq for _ in range(batch)]
    for b, length in enumerate(lengths):
        split = max(1, length // 2)
        for t in range(length):
            # Real tokens avoid id 0 ([PAD]): Hugging Face's padding_idx would zero their embedding
            # gradient, a convention real data never exercises.
            ids[b][t] = int(torch.randint(1, vocab, (1,), generator=generator))
            types[b][t] = min(1 if t >= split else 0, config["type_vocab_size"] - 1)
            mask[b][t] = 1
        candidates = list(range(1, length))
        chosen = [candidates[i] for i in torch.randperm(len(candidates), generator=generator)[: max(1, length // 4)]]
        for t in chosen:
            labels[b][t] = int(torch.randint(0, vocab, (1,), generator=generator))
    labels[0][1] = vocab - 1  # the last real column of the logits is scored
    nsp = [int(torch.randint(0, 2, (1,), generator=generator)) for _ in range(batch)]
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "labels": labels,
            "next_sentence_label": nsp}


def make_case(name, overrides, batch, seq, lengths, hf_extras, seed):
    generator = torch.Generator().manual_seed(seed)
    config = dict(BASE_CONFIG, **overrides)
    model = BertForPreTraining(config)
    weights = random_weights(model, generator)
    model.load_state_dict(weights, strict=False)  # the tied aliases follow their targets
    model = model.double()
    data = random_batch(config, batch, seq, lengths, generator)
    tensors = {key: torch.tensor(value) for key, value in data.items()}
    loss, mlm_loss, nsp_loss, scores, nsp_logits = model(tensors["input_ids"], tensors["token_type_ids"],
                                                         tensors["attention_mask"], tensors["labels"],
                                                         tensors["next_sentence_label"])
    loss.backward()

    directory = os.path.join(PARITY_DIR, name)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as out:
        json.dump(dict(sorted(config.items())), out, indent=2)
        out.write("\n")
    stored = dict(weights)
    if hf_extras:  # what torch.save(model.state_dict()) of transformers < 4.31 holds besides parameters
        stored["cls.predictions.decoder.weight"] = weights["bert.embeddings.word_embeddings.weight"]
        stored["cls.predictions.decoder.bias"] = weights["cls.predictions.bias"]
        stored["bert.embeddings.position_ids"] = torch.arange(config["max_position_embeddings"])[None, :]
    save_safetensors(stored, os.path.join(directory, "model.safetensors"), {"format": "pt"})
    with open(os.path.join(directory, "batch.json"), "w") as out:
        out.write("{\n" + ",\n".join(f'  "{key}": {json.dumps(value)}' for key, value in data.items()) + "\n}\n")

    labelled = tensors["labels"] != -100  # (batch, position) row-major, as OUT.json lists them
    expected = {
        "description": f"PyTorch twin of BertForPreTraining, float64; {name}",
        "loss": loss.item(), "mlm_loss": mlm_loss.item(), "nsp_loss": nsp_loss.item(),
        "seq_relationship_logits": nsp_logits.tolist(),
        "masked_prediction_logits": scores[labelled].tolist(),
    }
    with open(os.path.join(directory, "expected.json"), "w") as out:
        json.dump(expected, out)
        out.write("\n")
    grads = {n: p.grad.float() for n, p in model.named_parameters()}
    save_safetensors(grads, os.path.join(directory, "expected_grads.safetensors"), {"format": "pt"})
    print(f"{name}: loss {loss.item():.6f} (mlm {mlm_loss.item():.6f}, nsp {nsp_loss.item():.6f}), "
          f"{int(labelled.sum())} labelled positions, {len(grads)} gradients")


def make_dtype_fixture():
    """One tensor of every dtype with values the C++ test recomputes: floats (k - 5) / 4, signed
    integers k - 5, unsigned k, bool k % 3 == 0, for k = 0, 1, ... in row-major order."""
    shapes = {torch.float64: [2, 3], torch.float32: [4, 5], torch.float16: [3, 3], torch.bfloat16: [7],
              torch.int64: [2, 2], torch.int32: [3], torch.int16: [5], torch.int8: [2, 3], torch.uint8: [9],
              torch.bool: [4]}
    tensors = {}
    for dtype, shape in shapes.items():
        k = torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape)
        if dtype.is_floating_point:
            value = (k - 5) / 4
        elif dtype == torch.bool:
            value = k % 3 == 0
        elif dtype == torch.uint8:
            value = k
        else:
            value = k - 5
        tensors[DTYPES[dtype][0].lower()] = value.to(dtype)
    tensors["scalar"] = torch.tensor(3.5, dtype=torch.float32)
    tensors["empty"] = torch.zeros([0, 4], dtype=torch.float32)
    path = os.path.join(SAFETENSORS_DIR, "python_written.safetensors")
    save_safetensors(tensors, path, {"format": "pt", "producer": "tools/make_parity_fixtures.py"})
    print(f"{path}: {len(tensors)} tensors")


def check_loom_file(path, config_path, fixture=None):
    """Loads a Loom-written safetensors into the twin the way from_pretrained does; with a fixture
    directory, also runs its batch and compares the outputs with its expected.json."""
    with open(config_path) as f:
        config = dict(BASE_CONFIG, **json.load(f))
    model = BertForPreTraining(config)
    tensors, metadata = load_safetensors(path)
    if metadata.get("format") not in ("pt", "tf", "flax", "mlx"):
        sys.exit(f"{path}: __metadata__ format {metadata.get('format')!r}; Hugging Face refuses such a file")
    result = model.load_state_dict({n: t.float() for n, t in tensors.items()}, strict=False)
    tied = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
    missing = [n for n in result.missing_keys if n not in tied]
    if missing or result.unexpected_keys:
        sys.exit(f"{path}: missing {missing}, unexpected {result.unexpected_keys}")
    print(f"{path}: {len(tensors)} tensors load into BertForPreTraining by name and shape; "
          f"tied decoder = word embeddings: "
          f"{model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight}")
    if fixture:
        with open(os.path.join(fixture, "batch.json")) as f:
            batch = {key: torch.tensor(value) for key, value in json.load(f).items()}
        with open(os.path.join(fixture, "expected.json")) as f:
            expected = json.load(f)
        loss, mlm, nsp, scores, nsp_logits = model.double()(batch["input_ids"], batch["token_type_ids"],
                                                            batch["attention_mask"], batch["labels"],
                                                            batch["next_sentence_label"])
        errors = {"loss": relative_error(loss.item(), expected["loss"]),
                  "seq_relationship_logits": relative_error(nsp_logits.detach(), expected["seq_relationship_logits"]),
                  "masked_prediction_logits": relative_error(scores[batch["labels"] != -100].detach(),
                                                             expected["masked_prediction_logits"])}
        print(f"{path}: outputs on {fixture}: " + ", ".join(f"{k} rel.err {v:.1e}" for k, v in errors.items()))
        if max(errors.values()) > 1e-6:
            sys.exit(f"{path}: outputs differ from {fixture}/expected.json")


def relative_error(actual, expected, floor=1e-6):
    """Normwise relative error, as loom_parity_compare computes it (floor: see parity_comparison.hpp)."""
    actual, expected = torch.as_tensor(actual, dtype=torch.float64), torch.as_tensor(expected, dtype=torch.float64)
    return float((actual - expected).abs().max() / max(float(expected.abs().max()), floor))


def measure_precision(case_dir, emulate_dtype):
    """Worst error of the float32 twin (16-bit GEMMs emulated or not) against a fixture's float64 values."""
    global EMULATE_DTYPE
    with open(os.path.join(case_dir, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(case_dir, "batch.json")) as f:
        batch = {key: torch.tensor(value) for key, value in json.load(f).items()}
    with open(os.path.join(case_dir, "expected.json")) as f:
        expected = json.load(f)
    expected_grads, _ = load_safetensors(os.path.join(case_dir, "expected_grads.safetensors"))
    weights, _ = load_safetensors(os.path.join(case_dir, "model.safetensors"))
    model = BertForPreTraining(config)
    model.load_state_dict({n: w for n, w in weights.items() if n in expected_grads}, strict=False)
    EMULATE_DTYPE = emulate_dtype
    try:
        loss, mlm, nsp, scores, nsp_logits = model(batch["input_ids"], batch["token_type_ids"],
                                                   batch["attention_mask"], batch["labels"],
                                                   batch["next_sentence_label"])
        loss.backward()
    finally:
        EMULATE_DTYPE = None
    labelled = batch["labels"] != -100
    losses = max(relative_error(value.item(), expected[key])
                 for key, value in (("loss", loss), ("mlm_loss", mlm), ("nsp_loss", nsp)))
    logits = max(relative_error(nsp_logits.detach(), expected["seq_relationship_logits"]),
                 relative_error(scores[labelled].detach(), expected["masked_prediction_logits"]))
    floor = 1e-2 * max(float(g.abs().max()) for g in expected_grads.values())
    grads = max((relative_error(p.grad, expected_grads[n], floor), n) for n, p in model.named_parameters())
    return losses, logits, grads


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check-loom-file", help="a Loom-written model.safetensors to load into the twin")
    parser.add_argument("--config", help="its config.json (with --check-loom-file)")
    parser.add_argument("--fixture", help="with --check-loom-file: a fixture directory whose batch to run and "
                                          "whose expected.json to match")
    parser.add_argument("--measure", action="store_true",
                        help="print the float32, bf16- and fp16-emulated twin's errors against every fixture")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.measure:
        for name in sorted(os.listdir(PARITY_DIR)):
            for label, emulate in (("fp32", None), ("bf16-emulated", torch.bfloat16),
                                   ("fp16-emulated", torch.float16)):
                losses, logits, (grads, worst) = measure_precision(os.path.join(PARITY_DIR, name), emulate)
                print(f"{name:32s} {label:14s} losses {losses:.2e}  logits {logits:.2e}  "
                      f"grads {grads:.2e} ({worst})")
        return
    if args.check_loom_file:
        check_loom_file(args.check_loom_file, args.config, args.fixture)
        return
    for seed, (name, (overrides, batch, seq, lengths, hf_extras)) in enumerate(CASES.items()):
        make_case(name, overrides, batch, seq, lengths, hf_extras, 1000 + seed)
    make_dtype_fixture()


if __name__ == "__main__":
    main()
