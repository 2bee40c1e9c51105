#!/usr/bin/python3
"""Writes the ModernBERT parity fixtures of Loom (tests/fixtures/parity-modernbert/) and checks Loom files.

Run by hand, never in CI (CI has no torch): tools/setup-parity installs Debian's python3-torch and
python3-numpy, then

    /usr/bin/python3 tools/make_modernbert_parity_fixtures.py               # regenerate every fixture
    /usr/bin/python3 tools/make_modernbert_parity_fixtures.py --self-check  # finite differences, padding
                                                                            # invariance, window edges
    /usr/bin/python3 tools/make_modernbert_parity_fixtures.py --check-loom-file runs/x/model.safetensors \
        --config runs/x/config.json [--fixture tests/fixtures/parity-modernbert/CASE]

The model below is an independent float64 twin of Hugging Face transformers' `ModernBertForMaskedLM`
(modeling_modernbert.py, eval mode, "eager" attention) in plain torch, with exactly its module tree,
so `state_dict()` yields Hugging Face's parameter names:

- embeddings: LayerNorm(tok_embeddings[input_ids]); no position embeddings. Every LayerNorm has the
  config's `norm_eps` and a bias only when `norm_bias`.
- pre-LN layers: h += Wo(attention(attn_norm(h))); h += mlp(mlp_norm(h)); layer 0's attn_norm is the
  identity (it has no parameters).
- attention: Wqkv(x) viewed as [B, T, 3, heads, head_dim]; rotary embedding on q and k (the
  rotate-half form: inv_freq_i = theta^(-2i/head_dim), angle = position * inv_freq, cos/sin of
  cat(angles, angles), positions 0..T-1 of the padded row), scale head_dim^-0.5, softmax, Wo.
  Global layers use the global theta; local (sliding) layers the local theta and a window: a query
  at i sees a key at j iff |i - j| <= local_attention // 2 (the (w, w) window of the original
  ModernBERT's FlashAttention and of Hugging Face's eager/sdpa mask alike; an odd local_attention
  rounds down). A key is seen iff it is a real token (attention_mask 1) and, in a local layer,
  inside the window; the unseen ones get finfo(float64).min added, so a row that sees nothing
  (a padded query far from every real token) is uniform, as in Hugging Face. Padded queries never
  reach a labelled output, so that choice does not show in the fixtures.
- which layers are global: `layer_types` ("full_attention" / "sliding_attention" per layer) when
  present, else layer i is global iff i % global_attn_every_n_layers == 0 (default 3). Thetas:
  `rope_parameters[kind]["rope_theta"]` (rope_type "default" only) when present, else
  `global_rope_theta` (default 160000) and `local_rope_theta` (default 10000; null = the global
  theta, as transformers 4.48 reads it). Some transformers versions take a layer's window from
  global_attn_every_n_layers even when layer_types is given, so the fixtures that use layer_types
  keep it to that every-third-layer pattern, on which all versions agree.
- mlp: a, g = Wi(x).chunk(2); Wo(act(a) * g), act = `hidden_activation` ("gelu" = erf;
  "gelu_new", "gelu_fast", "gelu_pytorch_tanh" = tanh forms).
- final_norm, then, at the labelled positions only (labels != -100, batch-major), logits =
  decoder(head.norm(act(head.dense(h)))) with act = `classifier_activation`; decoder.weight is
  tok_embeddings.weight (tied), decoder.bias exists iff `decoder_bias`; loss = mean cross-entropy
  over the labelled positions (sparse prediction and dense logits give the same numbers).

The rotary tables are computed in float64 (Hugging Face computes them in float32), so expected
values are float64 from float32 weights and measure Loom's error alone.

Each case directory holds the `loom debug-step` inputs (config.json: a complete Hugging Face
ModernBertConfig; model.safetensors: float32 weights under Hugging Face's names, without the tied
`decoder.weight`, as save_pretrained writes them; batch.json: input_ids, attention_mask, labels) and
the expected outputs in debug-step's OUT.json / GRADS.safetensors contract: expected.json has `loss`
(= `mlm_loss`; there is no NSP) and `masked_prediction_logits` [labelled positions, vocab];
expected_grads.safetensors has the float32 gradient of `loss` for every parameter under its Hugging
Face name, the tied decoder's share included in model.embeddings.tok_embeddings.weight. The
safetensors writer is the one of tools/make_parity_fixtures.py.
"""

import argparse
import json
import math
import os
import sys

import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# safetensors I/O, activations by Hugging Face name, the comparator's error measure
from make_parity_fixtures import activation, load_safetensors, relative_error, save_safetensors  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(REPO, "tests", "fixtures", "parity-modernbert")
TIED = "decoder.weight"


# --------------------------------------------------------------------------------------------
# Configuration: the attention pattern in either spelling

def attention_pattern(c):
    """Per layer: (is_global, rope theta), from either spelling of the config."""
    layers = c["num_hidden_layers"]
    if c.get("layer_types") is not None:
        kinds = list(c["layer_types"])
        if len(kinds) != layers or not set(kinds) <= {"full_attention", "sliding_attention"}:
            raise ValueError(f"layer_types {kinds!r}: need {layers} of full_attention / sliding_attention")
        if "global_attn_every_n_layers" in c:  # both spellings: they must agree
            n = c["global_attn_every_n_layers"]
            if kinds != ["full_attention" if i % n == 0 else "sliding_attention" for i in range(layers)]:
                raise ValueError("layer_types and global_attn_every_n_layers disagree")
    else:
        n = c.get("global_attn_every_n_layers", 3)
        kinds = ["full_attention" if i % n == 0 else "sliding_attention" for i in range(layers)]
    global_theta = c.get("global_rope_theta", 160000.0)
    local_theta = c.get("local_rope_theta", 10000.0)
    thetas = {"full_attention": global_theta,
              "sliding_attention": global_theta if local_theta is None else local_theta}
    for kind, parameters in (c.get("rope_parameters") or {}).items():
        if parameters is None:
            continue
        if parameters.get("rope_type", "default") != "default":
            raise ValueError(f"rope_parameters[{kind!r}]: rope_type {parameters['rope_type']!r} not supported")
        if "rope_theta" in parameters:
            thetas[kind] = parameters["rope_theta"]
    return [(kind == "full_attention", float(thetas[kind])) for kind in kinds]


# --------------------------------------------------------------------------------------------
# The Hugging Face ModernBertForMaskedLM twin (transformers/models/modernbert/modeling_modernbert.py)

class LayerNorm(nn.Module):
    """nn.LayerNorm(H, eps, bias=...) (Debian's torch predates the bias argument)."""

    def __init__(self, size, eps, bias):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


def layer_norm(c):
    return LayerNorm(c["hidden_size"], c.get("norm_eps", 1e-5), c.get("norm_bias", False))


class ModernBertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.tok_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c.get("pad_token_id"))
        self.norm = layer_norm(c)

    def forward(self, input_ids):
        return self.norm(self.tok_embeddings(input_ids))  # dropout off


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotary_tables(theta, head_dim, length, dtype):
    """cos, sin [T, head_dim] of the default RoPE at positions 0..T-1, computed in float64."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(torch.float64) / head_dim))
    angles = torch.arange(length, dtype=torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class ModernBertAttention(nn.Module):
    def __init__(self, c, layer_id):
        super().__init__()
        if c["hidden_size"] % c["num_attention_heads"] != 0:
            raise ValueError("hidden_size is not a multiple of num_attention_heads")
        self.num_heads = c["num_attention_heads"]
        self.head_dim = c["hidden_size"] // self.num_heads
        if self.head_dim % 2 != 0:
            raise ValueError("rotary embeddings need an even head_dim")
        self.is_global, self.theta = attention_pattern(c)[layer_id]
        self.Wqkv = nn.Linear(c["hidden_size"], 3 * c["hidden_size"], bias=c.get("attention_bias", False))
        self.Wo = nn.Linear(c["hidden_size"], c["hidden_size"], bias=c.get("attention_bias", False))

    def forward(self, hidden, global_mask, sliding_mask):
        batch, length, width = hidden.shape
        qkv = self.Wqkv(hidden).view(batch, length, 3, self.num_heads, self.head_dim)
        query, key, value = qkv.transpose(3, 1).unbind(dim=2)  # each [B, heads, T, head_dim]
        cos, sin = rotary_tables(self.theta, self.head_dim, length, hidden.dtype)
        query = query * cos + rotate_half(query) * sin
        key = key * cos + rotate_half(key) * sin
        scores = torch.matmul(query, key.transpose(2, 3)) * self.head_dim ** -0.5
        scores = scores + (global_mask if self.is_global else sliding_mask)
        context = torch.matmul(F.softmax(scores, dim=-1), value)
        return self.Wo(context.transpose(1, 2).contiguous().view(batch, length, width))


class ModernBertMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.Wi = nn.Linear(c["hidden_size"], 2 * c["intermediate_size"], bias=c.get("mlp_bias", False))
        self.act = activation(c.get("hidden_activation", "gelu"))
        self.Wo = nn.Linear(c["intermediate_size"], c["hidden_size"], bias=c.get("mlp_bias", False))

    def forward(self, hidden):
        value, gate = self.Wi(hidden).chunk(2, dim=-1)
        return self.Wo(self.act(value) * gate)


class ModernBertEncoderLayer(nn.Module):
    def __init__(self, c, layer_id):
        super().__init__()
        self.attn_norm = nn.Identity() if layer_id == 0 else layer_norm(c)
        self.attn = ModernBertAttention(c, layer_id)
        self.mlp_norm = layer_norm(c)
        self.mlp = ModernBertMLP(c)

    def forward(self, hidden, global_mask, sliding_mask):
        hidden = hidden + self.attn(self.attn_norm(hidden), global_mask, sliding_mask)
        return hidden + self.mlp(self.mlp_norm(hidden))


class ModernBertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.local_attention = c.get("local_attention", 128)
        self.embeddings = ModernBertEmbeddings(c)
        self.layers = nn.ModuleList([ModernBertEncoderLayer(c, i) for i in range(c["num_hidden_layers"])])
        self.final_norm = layer_norm(c)

    def masks(self, attention_mask, dtype):
        """Additive [B, 1, T, T] masks of the global and the local layers: 0 where a query sees a key,
        finfo.min elsewhere (a real key; in local layers also |i - j| <= local_attention // 2)."""
        length = attention_mask.shape[1]
        real_key = attention_mask.bool()[:, None, None, :]
        positions = torch.arange(length)
        in_window = ((positions[:, None] - positions[None, :]).abs() <= self.local_attention // 2)[None, None]
        minimum = torch.finfo(dtype).min

        def additive(seen):
            return torch.zeros(seen.shape, dtype=dtype).masked_fill(~seen, minimum)

        return additive(real_key.expand(-1, 1, length, -1)), additive(real_key & in_window)

    def forward(self, input_ids, attention_mask):
        hidden = self.embeddings(input_ids)
        global_mask, sliding_mask = self.masks(attention_mask, hidden.dtype)
        for layer in self.layers:
            hidden = layer(hidden, global_mask, sliding_mask)
        return self.final_norm(hidden)


class ModernBertPredictionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"], bias=c.get("classifier_bias", False))
        self.act = activation(c.get("classifier_activation", "gelu"))
        self.norm = layer_norm(c)

    def forward(self, hidden):
        return self.norm(self.act(self.dense(hidden)))


class ModernBertForMaskedLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = ModernBertModel(c)
        self.head = ModernBertPredictionHead(c)
        self.decoder = nn.Linear(c["hidden_size"], c["vocab_size"], bias=c.get("decoder_bias", True))
        self.decoder.weight = self.model.embeddings.tok_embeddings.weight  # tie_weights()

    def forward(self, input_ids, attention_mask, labels):
        """(loss, logits [labelled positions, V]) with the positions in batch-major order."""
        hidden = self.model(input_ids, attention_mask)
        labelled = labels != -100
        logits = self.decoder(self.head(hidden[labelled]))
        return F.cross_entropy(logits, labels[labelled]), logits


def parameter_names(model):
    """Names save_pretrained writes: named_parameters() lists the tied tensor once, under
    model.embeddings.tok_embeddings.weight, so decoder.weight is not among them."""
    return [n for n, _ in model.named_parameters()]


# --------------------------------------------------------------------------------------------
# Fixtures

BASE_CONFIG = {  # a complete Hugging Face ModernBertConfig less the attention-pattern keys
    "architectures": ["ModernBertForMaskedLM"], "model_type": "modernbert", "torch_dtype": "float32",
    "transformers_version": "4.48.0", "attention_dropout": 0.0, "embedding_dropout": 0.0, "mlp_dropout": 0.0,
    "classifier_dropout": 0.0, "classifier_pooling": "cls", "classifier_activation": "gelu",
    "deterministic_flash_attn": False, "initializer_range": 0.02, "initializer_cutoff_factor": 2.0,
    "norm_eps": 1e-5, "pad_token_id": 0, "bos_token_id": 1, "cls_token_id": 1, "eos_token_id": 2,
    "sep_token_id": 2, "reference_compile": None, "sparse_prediction": False, "sparse_pred_ignore_index": -100,
    "tie_word_embeddings": True,
}


def new_spelling(full_theta, sliding_theta, layers):
    """The attention-pattern keys as recent transformers versions write them (the every-third-layer
    pattern; see the docstring), with those versions' other differences: `dtype` for `torch_dtype`,
    no `reference_compile`."""
    return {"layer_types": ["full_attention" if i % 3 == 0 else "sliding_attention" for i in range(layers)],
            "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": full_theta},
                                "sliding_attention": {"rope_type": "default", "rope_theta": sliding_theta}},
            "transformers_version": "5.0.0", "dtype": "float32", "torch_dtype": None, "reference_compile": None}


# name: (config overrides, batch, seq, real lengths per row)
CASES = {
    # old spelling, global layers 0 and 2, window 4 (|i-j| <= 2) at T = 11, every bias on, erf GELU
    "h24-heads3-every2-window4-biases-pad": (dict(
        vocab_size=67, hidden_size=24, num_attention_heads=3, intermediate_size=36, num_hidden_layers=3,
        max_position_embeddings=32, hidden_activation="gelu", local_attention=4,
        global_attn_every_n_layers=2, global_rope_theta=160000.0, local_rope_theta=10000.0,
        norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True, decoder_bias=True),
        3, 11, [11, 8, 5]),
    # new spelling (full, sliding, sliding), small thetas so rotation matters at short T, no bias at
    # all (decoder_bias false), PyTorch's tanh GELU in the MLP and erf GELU in the head
    "h40-heads5-layer_types-tanh-nobias-pad": (dict(
        vocab_size=53, hidden_size=40, num_attention_heads=5, intermediate_size=24, num_hidden_layers=3,
        max_position_embeddings=16, hidden_activation="gelu_pytorch_tanh", local_attention=6,
        **new_spelling(100.0, 10.0, 3),
        norm_bias=False, attention_bias=False, mlp_bias=False, classifier_bias=False, decoder_bias=False),
        2, 13, [13, 9]),
    # old spelling with the default pattern (global 0 and 3 of 4), head_dim 16, gelu_new, norm and
    # MLP biases only, no padding, local window 8 (|i-j| <= 4) at T = 12
    "h32-heads2-every3-gelu_new-nopad": (dict(
        vocab_size=90, hidden_size=32, num_attention_heads=2, intermediate_size=20, num_hidden_layers=4,
        max_position_embeddings=64, hidden_activation="gelu_new", local_attention=8,
        global_attn_every_n_layers=3, global_rope_theta=160000.0, local_rope_theta=10000.0,
        norm_eps=1e-6, norm_bias=True, attention_bias=False, mlp_bias=True, classifier_bias=False,
        decoder_bias=True),
        2, 12, None),
    # new spelling (full, sliding, sliding, full), odd window 5 (|i-j| <= 2), the local theta larger
    # than the global one, head_dim 12, attention and head biases only, a row of 3 real tokens out of
    # 10 (its far padded queries see no key at all in local layers)
    "h36-heads3-layer_types-window5-pad": (dict(
        vocab_size=101, hidden_size=36, num_attention_heads=3, intermediate_size=16, num_hidden_layers=4,
        max_position_embeddings=20, hidden_activation="gelu", local_attention=5,
        **new_spelling(1000.0, 160000.0, 4),
        norm_bias=False, attention_bias=True, mlp_bias=False, classifier_bias=True, decoder_bias=True),
        3, 10, [10, 6, 3]),
}


def random_weights(model, generator):
    """Weights that make every term matter: O(1) activations, non-trivial norms and biases."""
    weights = {}
    for name, parameter in model.named_parameters():
        shape = parameter.shape
        if name.endswith("norm.weight"):
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
    """Real tokens avoid pad_token_id (Hugging Face's padding_idx would zero their embedding
    gradient); padded positions hold pad_token_id; labels only on real tokens."""
    vocab, pad = config["vocab_size"], config["pad_token_id"]
    lengths = lengths or [seq] * batch
    ids = [[pad] * seq for _ in range(batch)]
    mask = [[0] * seq for _ in range(batch)]
    labels = [[-100] * seq for _ in range(batch)]
    for b, length in enumerate(lengths):
        for t in range(length):
            token = int(torch.randint(0, vocab - 1, (1,), generator=generator))
            ids[b][t] = token + (token >= pad)
            mask[b][t] = 1
        chosen = torch.randperm(length, generator=generator)[: max(1, (length + 2) // 3)]
        for t in sorted(int(i) for i in chosen):
            labels[b][t] = int(torch.randint(0, vocab, (1,), generator=generator))
    labels[0][1] = vocab - 1  # the last column of the logits is scored
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def read_case(directory):
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(directory, "batch.json")) as f:
        batch = {key: torch.tensor(value) for key, value in json.load(f).items()}
    return config, batch


def load_model(config, tensors):
    """The float64 twin with `tensors` (float32) loaded by name, strictly: every parameter present
    (decoder.weight may be absent: it is tied), no other key, every shape right."""
    model = ModernBertForMaskedLM(config)
    tok = "model.embeddings.tok_embeddings.weight"
    if TIED in tensors and tok in tensors and not torch.equal(tensors[TIED].float(), tensors[tok].float()):
        raise ValueError(f"{TIED} differs from {tok}, but they are tied")
    expected = dict(model.named_parameters())
    missing = [n for n in expected if n not in tensors]
    unexpected = [n for n in tensors if n not in expected and n != TIED]
    if missing or unexpected:
        raise KeyError(f"missing {missing}, unexpected {unexpected}")
    shapes = [f"{n} {list(tensors[n].shape)}, expected {list(p.shape)}" for n, p in expected.items()
              if tensors[n].shape != p.shape]
    if shapes:
        raise ValueError("shape " + "; ".join(shapes))
    model.load_state_dict({n: tensors[n].float() for n in expected}, strict=False)
    return model.double()


def make_case(name, overrides, batch, seq, lengths, seed):
    generator = torch.Generator().manual_seed(seed)
    config = {key: value for key, value in dict(BASE_CONFIG, **overrides).items()
              if not (key in overrides and value is None)}  # an override of None removes the key
    model = ModernBertForMaskedLM(config)
    weights = random_weights(model, generator)
    model = load_model(config, weights)
    data = random_batch(config, batch, seq, lengths, generator)
    tensors = {key: torch.tensor(value) for key, value in data.items()}
    loss, logits = model(tensors["input_ids"], tensors["attention_mask"], tensors["labels"])
    loss.backward()

    directory = os.path.join(FIXTURE_DIR, name)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as out:
        json.dump(dict(sorted(config.items())), out, indent=2)
        out.write("\n")
    save_safetensors(weights, os.path.join(directory, "model.safetensors"), {"format": "pt"})
    with open(os.path.join(directory, "batch.json"), "w") as out:
        out.write("{\n" + ",\n".join(f'  "{key}": {json.dumps(value)}' for key, value in data.items()) + "\n}\n")
    expected = {
        "description": f"PyTorch twin of ModernBertForMaskedLM, float64; {name}",
        "loss": loss.item(), "mlm_loss": loss.item(), "masked_prediction_logits": logits.tolist(),
    }
    with open(os.path.join(directory, "expected.json"), "w") as out:
        json.dump(expected, out)
        out.write("\n")
    grads = {n: p.grad.float() for n, p in model.named_parameters()}
    assert TIED not in grads and set(grads) == set(weights)
    save_safetensors(grads, os.path.join(directory, "expected_grads.safetensors"), {"format": "pt"})
    largest = max(float(g.abs().max()) for g in grads.values())
    smallest = min((float(g.abs().max()) / largest, n) for n, g in grads.items())
    pattern = "".join("G" if is_global else "L" for is_global, _ in attention_pattern(config))
    print(f"{name}: layers {pattern}, loss {loss.item():.6f}, {logits.shape[0]} labelled positions, "
          f"{len(grads)} gradients (smallest max/largest: {smallest[0]:.3f}, {smallest[1]})")


# --------------------------------------------------------------------------------------------
# Checks

def self_check(directory):
    """The fixture reproduces; a few gradient entries of every kind of parameter match central
    differences; the labelled logits ignore the ids at padded positions; the local window's edges."""
    config, batch = read_case(directory)
    name = os.path.basename(directory)
    weights, _ = load_safetensors(os.path.join(directory, "model.safetensors"))
    expected_grads, _ = load_safetensors(os.path.join(directory, "expected_grads.safetensors"))
    with open(os.path.join(directory, "expected.json")) as f:
        expected = json.load(f)
    model = load_model(config, weights)
    ids, mask, labels = batch["input_ids"], batch["attention_mask"], batch["labels"]
    loss, logits = model(ids, mask, labels)
    loss.backward()
    problems = []
    if relative_error(loss.item(), expected["loss"]) > 1e-12 or \
            relative_error(logits.detach(), expected["masked_prediction_logits"]) > 1e-12:
        problems.append("outputs differ from expected.json")
    if set(expected_grads) != set(parameter_names(model)):
        problems.append("expected_grads.safetensors names differ from the parameters")

    # central differences on a few entries of every kind of parameter
    generator = torch.Generator().manual_seed(7)
    parameters = dict(model.named_parameters())
    worst = 0.0
    for pname, parameter in parameters.items():
        if not any(key in pname for key in ("tok_embeddings", "layers.1.attn.Wqkv", "layers.0.attn.Wo",
                                             "layers.2.mlp.Wi", "attn_norm", "final_norm", "head.", "decoder.")):
            continue
        flat = parameter.data.view(-1)
        for index in torch.randint(0, flat.numel(), (3,), generator=generator).tolist():
            original = flat[index].item()
            step = 1e-5
            with torch.no_grad():
                flat[index] = original + step
                plus = model(ids, mask, labels)[0].item()
                flat[index] = original - step
                minus = model(ids, mask, labels)[0].item()
                flat[index] = original
            numeric = (plus - minus) / (2 * step)
            analytic = parameter.grad.view(-1)[index].item()
            error = abs(numeric - analytic)
            worst = max(worst, error / max(abs(analytic), 1e-3))
            if error > 1e-9 + 1e-6 * abs(analytic):
                problems.append(f"grad {pname}[{index}]: autograd {analytic:.9e}, differences {numeric:.9e}")

    # padding: other ids at padded positions change no labelled logit (only rows with padding count)
    padded = (mask == 0)
    padding_note = "no padding"
    if padded.any():
        other = ids.clone()
        other[padded] = torch.randint(0, config["vocab_size"], (int(padded.sum()),), generator=generator)
        with torch.no_grad():
            _, moved = model(other, mask, labels)
        difference = float((moved - logits.detach()).abs().max())
        padding_note = f"padding ids changed: max |logit change| {difference:.1e}"
        if difference != 0.0:
            problems.append(f"labelled logits moved by {difference:.3e} when only padding ids changed")

    # window: in a one-layer model whose layer is local, the logits at a labelled position u move when
    # the token at u +- local_attention // 2 changes, and stay exactly put when the one at
    # u +- (local_attention // 2 + 1) does
    one_local = dict(config, num_hidden_layers=1, layer_types=["sliding_attention"])
    one_local.pop("global_attn_every_n_layers", None)
    local_model = load_model(one_local, {n: w for n, w in weights.items() if not n.startswith("model.layers.")
                                         or n.startswith("model.layers.0.")})
    half = config["local_attention"] // 2
    inside = outside = 0
    for b, u in (labels != -100).nonzero().tolist():
        only_u = torch.full_like(labels, -100)
        only_u[b, u] = labels[b, u]
        with torch.no_grad():
            _, before = local_model(ids, mask, only_u)
            for t in (u - half, u + half, u - half - 1, u + half + 1):
                if not (0 <= t < ids.shape[1] and mask[b, t]):
                    continue
                changed = ids.clone()
                changed[b, t] = ids[b, t] % (config["vocab_size"] - 1) + 1  # another id, never 0
                moved = float((local_model(changed, mask, only_u)[1] - before).abs().max())
                if abs(t - u) <= half:
                    inside += 1
                    if moved == 0.0:
                        problems.append(f"window: row {b}, key {t} inside the window of query {u} has no effect")
                else:
                    outside += 1
                    if moved != 0.0:
                        problems.append(f"window: row {b}, key {t} outside the window of query {u} moved it")
    window_note = f"window edges: {inside} keys inside move the logits, {outside} outside do not"

    print(f"{name}: {'OK' if not problems else 'FAIL'}; finite differences worst rel.err {worst:.1e}; "
          f"{padding_note}; {window_note}")
    for problem in problems:
        print(f"  {problem}")
    return not problems


def check_loom_file(path, config_path, fixture=None):
    """Loads a Loom-written safetensors into the twin by Hugging Face name, strictly (decoder.weight may
    be absent: it is tied), and runs a forward: on the fixture's batch, compared with its expected.json,
    when a fixture directory is given, else on a small batch made up here."""
    with open(config_path) as f:
        config = json.load(f)
    if config.get("model_type") not in (None, "modernbert"):
        sys.exit(f"{config_path}: model_type {config.get('model_type')!r}, not modernbert")
    config = dict(BASE_CONFIG, **config)
    tensors, metadata = load_safetensors(path)
    if metadata.get("format") not in ("pt", "tf", "flax", "mlx"):
        sys.exit(f"{path}: __metadata__ format {metadata.get('format')!r}; Hugging Face refuses such a file")
    try:
        model = load_model(config, tensors)
    except (KeyError, ValueError, RuntimeError) as error:
        sys.exit(f"{path}: does not load into ModernBertForMaskedLM: {error}")
    print(f"{path}: {len(tensors)} tensors load into ModernBertForMaskedLM by name and shape "
          f"({'with' if TIED in tensors else 'without'} the tied {TIED}); layers "
          + "".join("G" if g else "L" for g, _ in attention_pattern(config)))
    if fixture:
        _, batch = read_case(fixture)
        with open(os.path.join(fixture, "expected.json")) as f:
            expected = json.load(f)
    else:
        generator = torch.Generator().manual_seed(0)
        batch = {key: torch.tensor(value) for key, value in random_batch(config, 2, 9, [9, 6], generator).items()}
    with torch.no_grad():
        loss, logits = model(batch["input_ids"], batch["attention_mask"], batch["labels"])
    if not torch.isfinite(loss) or not torch.isfinite(logits).all():
        sys.exit(f"{path}: forward is not finite")
    print(f"{path}: forward on {'the fixture batch' if fixture else 'a made-up batch'}: loss {loss.item():.6f}, "
          f"logits {list(logits.shape)}")
    if fixture:
        errors = {"loss": relative_error(loss.item(), expected["loss"]),
                  "masked_prediction_logits": relative_error(logits, expected["masked_prediction_logits"])}
        print(f"{path}: outputs on {fixture}: " + ", ".join(f"{k} rel.err {v:.1e}" for k, v in errors.items()))
        if max(errors.values()) > 1e-6:
            sys.exit(f"{path}: outputs differ from {fixture}/expected.json")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check-loom-file", help="a Loom-written model.safetensors to load into the twin")
    parser.add_argument("--config", help="its config.json (with --check-loom-file)")
    parser.add_argument("--fixture", help="with --check-loom-file: a fixture directory whose batch to run and "
                                          "whose expected.json to match")
    parser.add_argument("--self-check", action="store_true",
                        help="check every fixture: reproduction, finite differences, padding, local window")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.check_loom_file:
        if not args.config:
            parser.error("--check-loom-file needs --config")
        check_loom_file(args.check_loom_file, args.config, args.fixture)
        return
    if args.self_check:
        results = [self_check(os.path.join(FIXTURE_DIR, name)) for name in sorted(os.listdir(FIXTURE_DIR))]
        sys.exit(0 if results and all(results) else 1)
    for seed, (name, (overrides, batch, seq, lengths)) in enumerate(CASES.items()):
        make_case(name, overrides, batch, seq, lengths, 2000 + seed)


if __name__ == "__main__":
    main()
