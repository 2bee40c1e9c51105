// Hugging Face `tokenizers` (Node.js binding) encode throughput on the lines of a file, for
// scripts/bench/tokenizer: one warm-up pass, then the best of three timed passes of encodeBatch
// without special tokens (run with RAYON_NUM_THREADS=1 and pinned to one core by the script).
//   node tools/bpe_throughput_hf.mjs NODE_MODULES LINES_FILE vocab.json merges.txt
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [modules, linesFile, vocab, merges] = process.argv.slice(2);
const tk = createRequire(path.join(path.resolve(modules), 'noop.js'))('tokenizers');
const model = await tk.BPE.fromFile(vocab, merges);
const t = new tk.Tokenizer(model);
t.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));
t.addSpecialTokens(['<|endoftext|>']);
const text = fs.readFileSync(linesFile, 'utf8');
const lines = text.split('\n');
if (lines[lines.length - 1] === '') lines.pop();
const bytes = Buffer.byteLength(text) - lines.length;
let tokens = 0;
const pass = async () => {
  tokens = 0;
  for (let i = 0; i < lines.length; i += 1000) {
    for (const e of await t.encodeBatch(lines.slice(i, i + 1000), { addSpecialTokens: false })) tokens += e.getLength();
  }
};
await pass();
let best = Infinity;
for (let i = 0; i < 3; ++i) {
  const start = process.hrtime.bigint();
  await pass();
  best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
}
console.log(`hf-bpe     lines ${lines.length}  bytes ${bytes}  tokens ${tokens}  ${best.toFixed(3)} s  ` +
            `${(lines.length / best).toFixed(0)} lines/s  ${(bytes / best / 1e6).toFixed(2)} MB/s  ` +
            `${(tokens / best / 1e6).toFixed(2)} M tokens/s`);
