#!/usr/bin/python3
"""Writes the RoBERTa parity fixtures of Loom (tests/fixtures/parity-roberta/) and checks Loom files.

Run by hand, never in CI (CI has no torch): tools/setup-parity installs Debian's python3-torch and
python3-numpy, then

    /usr/bin/python3 tools/make_roberta_parity_fixtures.py               # regenerate every fixture
    /usr/bin/python3 tools/make_roberta_parity_fixtures.py --self-check  # finite differences, padding,
                                                                         # positions
    /usr/bin/python3 tools/make_roberta_parity_fixtures.py --measure     # the float32 / 16-bit twin's error
    /usr/bin/python3 tools/make_roberta_parity_fixtures.py --check-loom-file runs/x/model.safetensors \
        --config runs/x/config.json [--fixture tests/fixtures/parity-roberta/CASE]

The model below is an independent float64 twin of Hugging Face transformers' `RobertaForMaskedLM`
(modeling_roberta.py, eval mode, eager attention) in plain torch, with exactly its module tree, so
`state_dict()` yields Hugging Face's parameter names. What differs from BERT
(tools/make_parity_fixtures.py, whose encoder layers it shares: Hugging Face's RoBERTa layers are
copies of BERT's):

- embeddings: position ids from the input ids (create_position_ids_from_input_ids): a token's
  position is padding_idx + the number of non-padding ids up to and including it, and a padding
  id's position is padding_idx itself, padding_idx = `pad_token_id` (1 in RoBERTa's configs); the
  position table has padding_idx too (its row gets no gradient). Token types: the all-zero buffer
  (RoBERTa's tokenizer gives none; `type_vocab_size` is 1).
- no pooler (`add_pooling_layer=False`), no next-sentence task.
- lm_head: layer_norm(gelu(dense(h))) with the erf GELU whatever `hidden_act` says (RobertaLMHead
  calls gelu() itself), then decoder (weight tied to the word embeddings) + lm_head.bias
  (`lm_head.decoder.bias` is the same tensor). Loss: mean cross-entropy over labelled positions.
- RobertaForSequenceClassification (for --check-loom-file on a fine-tuned file): classifier.dense,
  tanh, classifier.out_proj on the first token, no pooler.

Each case directory holds the `loom debug-step` inputs (config.json: a complete Hugging Face
RobertaConfig; model.safetensors: float32 weights under Hugging Face's names, as save_pretrained
writes them — in the `-tied` case also the two tied copies torch.save writes; batch.json:
input_ids, attention_mask, labels; no token_type_ids, as RoBERTa's tokenizer) and the expected
outputs in debug-step's OUT.json / GRADS.safetensors contract: expected.json has `loss` (= `mlm_loss`)
and `masked_prediction_logits` [labelled positions, vocab]; expected_grads.safetensors has the float32
gradient of `loss` for every parameter under its Hugging Face name (the tied decoder's share in
roberta.embeddings.word_embeddings.weight). Expected values are float64 from the float32 weights.
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
import make_parity_fixtures as bert_twin  # noqa: E402
from make_parity_fixtures import BertEncoder, dense, load_safetensors, relative_error, save_safetensors  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(REPO, "tests", "fixtures", "parity-roberta")
WORD = "roberta.embeddings.word_embeddings.weight"
TIED = {"lm_head.decoder.weight": WORD, "lm_head.decoder.bias": "lm_head.bias"}  # alias -> target


# --------------------------------------------------------------------------------------------
# The Hugging Face RobertaForMaskedLM twin (transformers/models/roberta/modeling_roberta.py)

def create_position_ids_from_input_ids(input_ids, padding_idx):
    mask = input_ids.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx


class RobertaEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.padding_idx = c["pad_token_id"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=self.padding_idx)
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"],
                                                padding_idx=self.padding_idx)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, input_ids):
        positions = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        types = torch.zeros_like(input_ids)
        embeddings = (self.word_embeddings(input_ids) + self.token_type_embeddings(types)
                      + self.position_embeddings(positions))
        return self.LayerNorm(embeddings)  # dropout off


class RobertaModel(nn.Module):
    """RobertaModel(config, add_pooling_layer=False): embeddings and the encoder."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = RobertaEmbeddings(c)
        self.encoder = BertEncoder(c)

    def forward(self, input_ids, attention_mask):
        dtype = self.embeddings.word_embeddings.weight.dtype
        extended = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        return self.encoder(self.embeddings(input_ids), extended)


class RobertaLMHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.layer_norm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.decoder = nn.Linear(c["hidden_size"], c["vocab_size"])
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        self.decoder.bias = self.bias

    def forward(self, features):
        x = self.layer_norm(F.gelu(dense(self.dense, features)))  # erf GELU, not hidden_act
        return dense(self.decoder, x)


class RobertaForMaskedLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.roberta = RobertaModel(c)
        self.lm_head = RobertaLMHead(c)
        self.lm_head.decoder.weight = self.roberta.embeddings.word_embeddings.weight  # tie_weights()

    def forward(self, input_ids, attention_mask, labels):
        """(loss, logits [labelled positions, V]) with the positions in batch-major order."""
        hidden = self.roberta(input_ids, attention_mask)
        labelled = labels != -100
        logits = self.lm_head(hidden[labelled])
        return F.cross_entropy(logits, labels[labelled]), logits


class RobertaClassificationHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.out_proj = nn.Linear(c["hidden_size"], c.get("num_labels", len(c.get("id2label") or {0: 0, 1: 1})))

    def forward(self, features):
        return self.out_proj(torch.tanh(self.dense(features[:, 0, :])))  # dropouts off


class RobertaForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.roberta = RobertaModel(c)
        self.classifier = RobertaClassificationHead(c)

    def forward(self, input_ids, attention_mask, labels):
        logits = self.classifier(self.roberta(input_ids, attention_mask))
        if logits.shape[1] == 1:
            return F.mse_loss(logits.squeeze(1), labels.to(logits.dtype)), logits
        return F.cross_entropy(logits, labels), logits


def parameter_names(model):
    """Names save_pretrained writes: named_parameters() lists each tied tensor once, under its target."""
    return [n for n, _ in model.named_parameters()]


# --------------------------------------------------------------------------------------------
# Fixtures

BASE_CONFIG = {  # a complete Hugging Face RobertaConfig, including keys Loom keeps but does not use
    "architectures": ["RobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
    "classifier_dropout": None, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "initializer_range": 0.02, "layer_norm_eps": 1e-5, "model_type": "roberta", "pad_token_id": 1,
    "position_embedding_type": "absolute", "torch_dtype": "float32", "transformers_version": "4.36.2",
    "type_vocab_size": 1, "use_cache": True,
}

# name: (config overrides, batch, seq, real lengths of the rows (None = no padding), tied copies in the file)
CASES = {
    # odd head count and head size 12, vocab 83, padding (lengths 11, 7, 4), max_position_embeddings
    # with room to spare, and the tied copies torch.save writes besides the parameters
    "h36-heads3-erf-tied-pad": (dict(
        vocab_size=83, hidden_size=36, num_attention_heads=3, intermediate_size=50, num_hidden_layers=2,
        max_position_embeddings=20), 3, 11, [11, 7, 4], True),
    # tanh GELU in the layers (the LM head's stays erf), head size 4, eps 1e-12, and
    # max_position_embeddings exactly seq + pad_token_id + 1: the last column uses the last row
    "h20-heads5-gelu_new-tight-pad": (dict(
        vocab_size=61, hidden_size=20, num_attention_heads=5, intermediate_size=28, num_hidden_layers=2,
        max_position_embeddings=18, hidden_act="gelu_new", layer_norm_eps=1e-12), 2, 16, [16, 9], False),
    # three layers, no padding, vocab a multiple of 8
    "h24-heads3-nopad": (dict(
        vocab_size=56, hidden_size=24, num_attention_heads=3, intermediate_size=37, num_hidden_layers=3,
        max_position_embeddings=16), 2, 7, None, False),
}


def random_weights(model, generator):
    """Weights that make every term matter: O(1) activations, non-trivial norms and biases. The
    padding rows of the word and position tables are random too (a loaded file need not zero them)."""
    weights = {}
    for name, parameter in model.named_parameters():
        shape = parameter.shape
        if name.endswith("LayerNorm.weight") or name.endswith("layer_norm.weight"):
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
    """Rows padded on the right with pad_token_id; real tokens avoid it (Hugging Face's padding_idx
    would zero their embedding gradient and their position would not advance); labels on real tokens."""
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
    labels[0][seq - 1] = 3    # so is the last position of the longest row (the last position row)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def read_case(directory):
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(directory, "batch.json")) as f:
        batch = {key: torch.tensor(value) for key, value in json.load(f).items()}
    return config, batch


def load_model(config, tensors, cls=RobertaForMaskedLM):
    """The float64 twin with `tensors` (float32) loaded by name, strictly: every parameter present
    (the tied aliases may be absent, and must equal their target where present), no other key,
    every shape right — what from_pretrained accepts without a missing or unexpected key."""
    model = cls(config)
    expected = dict(model.named_parameters())
    aliases = {alias: target for alias, target in TIED.items() if target in expected}
    for alias, target in aliases.items():
        if alias in tensors and target in tensors and not torch.equal(tensors[alias].float(), tensors[target].float()):
            raise ValueError(f"{alias} differs from {target}, but they are tied")
    missing = [n for n in expected if n not in tensors]
    unexpected = [n for n in tensors if n not in expected and n not in aliases]
    if missing or unexpected:
        raise KeyError(f"missing {missing}, unexpected {unexpected}")
    shapes = [f"{n} {list(tensors[n].shape)}, expected {list(p.shape)}" for n, p in expected.items()
              if tensors[n].shape != p.shape]
    if shapes:
        raise ValueError("shape " + "; ".join(shapes))
    model.load_state_dict({n: tensors[n].float() for n in expected}, strict=False)
    return model.double()


def make_case(name, overrides, batch, seq, lengths, tied_copies, seed):
    generator = torch.Generator().manual_seed(seed)
    config = dict(BASE_CONFIG, **overrides)
    model = RobertaForMaskedLM(config)
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
    in_file = dict(weights)
    if tied_copies:
        in_file.update({alias: weights[target].clone() for alias, target in TIED.items()})
    save_safetensors(in_file, os.path.join(directory, "model.safetensors"), {"format": "pt"})
    with open(os.path.join(directory, "batch.json"), "w") as out:
        out.write("{\n" + ",\n".join(f'  "{key}": {json.dumps(value)}' for key, value in data.items()) + "\n}\n")
    expected = {
        "description": f"PyTorch twin of RobertaForMaskedLM, float64; {name}",
        "loss": loss.item(), "mlm_loss": loss.item(), "masked_prediction_logits": logits.tolist(),
    }
    with open(os.path.join(directory, "expected.json"), "w") as out:
        json.dump(expected, out)
        out.write("\n")
    grads = {n: p.grad.float() for n, p in model.named_parameters()}
    assert not set(TIED) & set(grads) and set(grads) == set(weights)
    save_safetensors(grads, os.path.join(directory, "expected_grads.safetensors"), {"format": "pt"})
    largest = max(float(g.abs().max()) for g in grads.values())
    smallest = min((float(g.abs().max()) / largest, n) for n, g in grads.items())
    print(f"{name}: loss {loss.item():.6f}, {logits.shape[0]} labelled positions, {len(grads)} gradients "
          f"(smallest max/largest: {smallest[0]:.3f}, {smallest[1]})")


# --------------------------------------------------------------------------------------------
# Checks

def self_check(directory):
    """The fixture reproduces; a few gradient entries of every kind of parameter match central
    differences; the labelled logits ignore the ids at padded positions; a real token at column t
    has position pad_token_id + 1 + t and padding has pad_token_id (what Loom's embeddings assume)."""
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

    generator = torch.Generator().manual_seed(7)
    worst = 0.0
    for pname, parameter in model.named_parameters():
        if not any(key in pname for key in ("word_embeddings", "position_embeddings", "token_type", "layer.1.attention",
                                             "layer.0.output", "lm_head.")):
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

    # positions: a real token at column t uses position row pad + 1 + t
    pad = config["pad_token_id"]
    positions = create_position_ids_from_input_ids(ids, pad)
    columns = torch.arange(ids.shape[1])[None, :].expand_as(ids)
    if not torch.equal(positions[mask.bool()], (columns + pad + 1)[mask.bool()]):
        problems.append("position ids of real tokens are not pad_token_id + 1 + column")
    if not bool((positions[~mask.bool()] == pad).all()):
        problems.append("position ids of padding are not pad_token_id")

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

    print(f"{name}: {'OK' if not problems else 'FAIL'}; finite differences worst rel.err {worst:.1e}; "
          f"{padding_note}")
    for problem in problems:
        print(f"  {problem}")
    return not problems


def measure_precision(case_dir, emulate_dtype):
    """Worst error of the float32 twin (16-bit GEMMs emulated or not) against a fixture's float64 values."""
    config, batch = read_case(case_dir)
    with open(os.path.join(case_dir, "expected.json")) as f:
        expected = json.load(f)
    expected_grads, _ = load_safetensors(os.path.join(case_dir, "expected_grads.safetensors"))
    weights, _ = load_safetensors(os.path.join(case_dir, "model.safetensors"))
    model = load_model(config, weights).float()
    bert_twin.EMULATE_DTYPE = emulate_dtype
    try:
        loss, logits = model(batch["input_ids"], batch["attention_mask"], batch["labels"])
        loss.backward()
    finally:
        bert_twin.EMULATE_DTYPE = None
    losses = relative_error(loss.item(), expected["loss"])
    logit_error = relative_error(logits.detach(), expected["masked_prediction_logits"])
    floor = 1e-2 * max(float(g.abs().max()) for g in expected_grads.values())
    grads = max((relative_error(p.grad, expected_grads[n], floor), n) for n, p in model.named_parameters())
    return losses, logit_error, grads


def check_loom_file(path, config_path, fixture=None):
    """Loads a Loom-written safetensors into the twin its config's `architectures` names
    (RobertaForMaskedLM or RobertaForSequenceClassification) by Hugging Face name, strictly, and runs a
    forward: on the fixture's batch, compared with its expected.json, when a fixture directory is
    given, else on a small batch made up here."""
    with open(config_path) as f:
        config = json.load(f)
    if config.get("model_type") != "roberta":
        sys.exit(f"{config_path}: model_type {config.get('model_type')!r}, not roberta")
    config = dict(BASE_CONFIG, **config)
    architecture = (config.get("architectures") or ["RobertaForMaskedLM"])[0]
    classes = {"RobertaForMaskedLM": RobertaForMaskedLM,
               "RobertaForSequenceClassification": RobertaForSequenceClassification}
    if architecture not in classes:
        sys.exit(f"{config_path}: architectures {architecture!r}: this twin has {sorted(classes)}")
    tensors, metadata = load_safetensors(path)
    if metadata.get("format") not in ("pt", "tf", "flax", "mlx"):
        sys.exit(f"{path}: __metadata__ format {metadata.get('format')!r}; Hugging Face refuses such a file")
    try:
        model = load_model(config, tensors, classes[architecture])
    except (KeyError, ValueError, RuntimeError) as error:
        sys.exit(f"{path}: does not load into {architecture}: {error}")
    present = [alias for alias in TIED if alias in tensors]
    print(f"{path}: {len(tensors)} tensors load into {architecture} by name and shape, no missing or "
          f"unexpected key (tied copies in the file: {present or 'none'})")
    if fixture:
        _, batch = read_case(fixture)
        with open(os.path.join(fixture, "expected.json")) as f:
            expected = json.load(f)
    else:
        generator = torch.Generator().manual_seed(0)
        batch = {key: torch.tensor(value) for key, value in random_batch(config, 2, 9, [9, 6], generator).items()}
        if architecture != "RobertaForMaskedLM":
            batch["labels"] = torch.tensor([0, 1]) % model.classifier.out_proj.out_features
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
                        help="check every fixture: reproduction, finite differences, padding, positions")
    parser.add_argument("--measure", action="store_true",
                        help="print the float32, bf16- and fp16-emulated twin's errors against every fixture")
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
    if args.measure:
        for name in sorted(os.listdir(FIXTURE_DIR)):
            for label, emulate in (("fp32", None), ("bf16-emulated", torch.bfloat16),
                                   ("fp16-emulated", torch.float16)):
                losses, logits, (grads, worst) = measure_precision(os.path.join(FIXTURE_DIR, name), emulate)
                print(f"{name:32s} {label:14s} losses {losses:.2e}  logits {logits:.2e}  "
                      f"grads {grads:.2e} ({worst})")
        return
    for seed, (name, (overrides, batch, seq, lengths, tied_copies)) in enumerate(CASES.items()):
        make_case(name, overrides, batch, seq, lengths, tied_copies, 3000 + seed)


if __name__ == "__main__":
    main()
