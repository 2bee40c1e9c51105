// Generates the Hugging Face parity fixture for `loom tokenize` (tests/fixtures/tokenize/):
//   hf_parity_input.txt      one input per line: adversarial Unicode (adversarial.txt, with \uXXXX
//                            escapes decoded) then a deterministic sample of the real corpora
//   hf_parity_expected.txt   the ids Hugging Face `tokenizers` (the Rust library behind
//                            BertTokenizerFast, via its node binding) gives, in `loom tokenize`'s
//                            format ("[1, 2, 3]" per line, no [CLS]/[SEP])
// It also runs tokenizers.js (@huggingface/tokenizers) and prints where the two disagree.
// Usage (after scripts/fetch-data): cd tools/hf-parity && npm ci && node make_fixture.mjs
// The tokenizer is built from data/vocab/bert-base-uncased.txt as bert-base-uncased's
// tokenizer.json describes it; nothing is downloaded from a model hub.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer as RustTokenizer } from "tokenizers";
import { Tokenizer as JsTokenizer } from "@huggingface/tokenizers";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const data = process.env.LOOM_DATA ?? path.join(root, "data");
const outDir = path.join(root, "tests/fixtures/tokenize");
const linesPerCorpus = 60;
const maxLineChars = 600;

function tokenizerJson(vocabTokens) {
  const vocab = Object.fromEntries(vocabTokens.map((t, i) => [t, i]));
  const special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].map((content) => ({
    id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
  }));
  return {
    version: "1.0", truncation: null, padding: null, added_tokens: special,
    normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: { type: "BertProcessing", sep: ["[SEP]", vocab["[SEP]"]], cls: ["[CLS]", vocab["[CLS]"]] },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab },
  };
}

// Cuts a long line at whitespace so the fixture stays small (parity does not depend on length).
function shorten(line) {
  if (line.length <= maxLineChars) return line;
  const cut = line.lastIndexOf(" ", maxLineChars);
  return line.slice(0, cut > 0 ? cut : maxLineChars);
}

function corpusLines(files) {
  const lines = [];
  for (const file of files)
    for (const line of fs.readFileSync(file, "utf8").split("\n")) if (line.trim()) lines.push(shorten(line));
  const step = Math.max(1, Math.floor(lines.length / linesPerCorpus));
  return lines.filter((_, i) => i % step === 0).slice(0, linesPerCorpus);
}

function listFiles(dir) {
  return fs.readdirSync(dir).sort().map((f) => path.join(dir, f));
}

const vocabTokens = fs.readFileSync(path.join(data, "vocab/bert-base-uncased.txt"), "utf8").split("\n").slice(0, -1);
const json = JSON.stringify(tokenizerJson(vocabTokens));
const rust = RustTokenizer.fromString(json);
const js = new JsTokenizer(JSON.parse(json), { do_lower_case: true, model_max_length: 512 });

const adversarial = fs.readFileSync(path.join(here, "adversarial.txt"), "utf8").split("\n").filter((l) => l.length)
  .map((l) => l.replace(/\\u([0-9a-fA-F]{4})/g, (_, h) => String.fromCharCode(parseInt(h, 16))));
const spam = fs.readFileSync(path.join(data, "tasks/spam/test.tsv"), "utf8").split("\n").slice(1)
  .filter((l) => l).map((l) => l.slice(l.indexOf("\t") + 1));
fs.mkdirSync(path.join(outDir), { recursive: true });
const tmp = path.join(outDir, ".spam-sample.txt");
fs.writeFileSync(tmp, spam.join("\n"));
const inputs = [
  ...adversarial,
  ...corpusLines(listFiles(path.join(data, "raw/sotu"))),
  ...corpusLines(listFiles(path.join(data, "raw/moby-dick"))),
  ...corpusLines([tmp]),
];
fs.rmSync(tmp);

const expected = [];
let disagreements = 0;
for (const [i, line] of inputs.entries()) {
  const ids = (await rust.encode(line, null, { addSpecialTokens: false })).getIds();
  const jsIds = js.encode(line, { add_special_tokens: false }).ids;
  if (JSON.stringify(ids) !== JSON.stringify(jsIds)) {
    ++disagreements;
    console.log(`line ${i + 1}: tokenizers (Rust) and tokenizers.js disagree:\n  ${line.slice(0, 120)}`);
  }
  expected.push(`[${ids.join(", ")}]`);
}
fs.writeFileSync(path.join(outDir, "hf_parity_input.txt"), inputs.join("\n") + "\n");
fs.writeFileSync(path.join(outDir, "hf_parity_expected.txt"), expected.join("\n") + "\n");
console.log(`${inputs.length} lines (${adversarial.length} adversarial); Rust vs JS disagreements: ${disagreements}`);
