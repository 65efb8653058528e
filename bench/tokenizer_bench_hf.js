#!/usr/bin/env node
// Baseline for tokenizer_bench: HF tokenizers (the Rust library, through its official node
// bindings, npm package "tokenizers") with the same BERT tokenizer of the RexUniNLU checkpoint
// (tests/text/make_hf_cases.js builds its tokenizer.json), single thread, same texts.
//   npm install --prefix /tmp/hf tokenizers@0.23.2
//   RAYON_NUM_THREADS=1 HF=/tmp/hf/node_modules/tokenizers node bench/tokenizer_bench_hf.js [TEXTS_JSONL]
// encodeBatch runs the whole list in one call, so it shows the Rust code's speed with little
// binding overhead; encode (one call per text) adds the per-call cost of the bindings.
'use strict';
const fs = require('fs');
const path = require('path');
process.env.RAYON_NUM_THREADS = process.env.RAYON_NUM_THREADS || '1';
const { Tokenizer } = require(process.env.HF || 'tokenizers');
const { tokenizerJson } = require(path.join(__dirname, '..', 'tests', 'text', 'make_hf_cases.js'));

const textsPath = process.argv[2] || path.join(__dirname, '..', '..', 'shared', 'data', 'cluener2020', 'train.json');
const texts = fs.readFileSync(textsPath, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l).text);
const bytes = texts.reduce((s, t) => s + Buffer.byteLength(t, 'utf8'), 0);
const tok = Tokenizer.fromString(tokenizerJson({ do_lower_case: true, strip_accents: null, tokenize_chinese_chars: true }));

async function measure(what, pass) {
  let tokens = await pass();  // warm-up
  const start = process.hrtime.bigint();
  let passes = 0, seconds = 0;
  do {
    tokens = await pass();
    ++passes;
    seconds = Number(process.hrtime.bigint() - start) / 1e9;
  } while (seconds < 2);
  const perPass = seconds / passes;
  console.log(`${what.padEnd(34)} ${(texts.length / perPass).toFixed(0).padStart(12)} ${(tokens / perPass).toFixed(0).padStart(14)} ` +
    `${(bytes / perPass / 1e6).toFixed(1).padStart(10)} ${(perPass / texts.length * 1e6).toFixed(2).padStart(12)}`);
}

(async () => {
  console.log(`texts: ${texts.length} from ${textsPath} (${(bytes / 1e6).toFixed(2)} MB UTF-8), HF tokenizers, RAYON_NUM_THREADS=${process.env.RAYON_NUM_THREADS}`);
  console.log(`${'what'.padEnd(34)} ${'texts/s'.padStart(12)} ${'tokens/s'.padStart(14)} ${'MB/s'.padStart(10)} ${'us/text'.padStart(12)}`);
  await measure('encodeBatch(texts) [CLS] t [SEP]', async () => (await tok.encodeBatch(texts)).reduce((s, e) => s + e.getLength(), 0));
  await measure('encode(text) [CLS] t [SEP]', async () => {
    let n = 0;
    for (const t of texts) n += (await tok.encode(t)).getLength();
    return n;
  });
})();
