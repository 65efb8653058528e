#!/usr/bin/env node
// Writes tests/data/text/hf_rule_cases.jsonl: reference outputs of HF tokenizers (the Rust
// library, through its official node bindings) for the BERT tokenizer of the RexUniNLU
// checkpoint, on strings aimed at each normalization / pre-tokenization rule plus seeded
// random strings, and pair windows from a pre-0.23 release (spec 5.2).
//
// Not needed to build or test rexnlu; rerun only to extend the cases:
//   mkdir -p /tmp/hf && cd /tmp/hf && npm install tokenizers@0.23.2
//   mkdir -p /tmp/hf13 && cd /tmp/hf13 && npm install tokenizers@0.13.3 tokenizers-linux-x64-gnu@0.13.4-rc2
//   HF_NEW=/tmp/hf/node_modules/tokenizers HF_OLD=/tmp/hf13/node_modules/tokenizers \
//     node tests/text/make_hf_cases.js > tests/data/text/hf_rule_cases.jsonl
//   HF_NEW=/tmp/hf/node_modules/tokenizers node tests/text/make_hf_cases.js --char-table \
//     > tests/data/text/hf_char_table.txt
//
// --char-table runs every code point through each normalizer step and the pre-tokenizer alone
// and writes what HF does with it, where that is not "keep it unchanged" (see charTable()).
//
// Record kinds:
//   {"kind":"single","config":{...},"text","input_ids","offsets"}      tokenizer(text), 0.23.2
//   {"kind":"windows","hint","text","max_len","stride","windows":[{"input_ids","offsets",
//    "token_type_ids"}...]}  tokenizer(hint, text, truncation only_second, overflow), 0.13.x
'use strict';
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..', '..');
const VOCAB = path.join(ROOT, 'models', 'rexuninlu_tiny', 'vocab.txt');
const REX_TOKENS = ['[PREFIX]', '[TYPE]', '[CLASSIFY]', '[MULTICLASSIFY]'];

const vocabLines = fs.readFileSync(VOCAB, 'utf8').split('\n');
if (vocabLines[vocabLines.length - 1] === '') vocabLines.pop();

// The tokenizer.json transformers builds for this checkpoint (BertConverter + added tokens).
function tokenizerJson(config) {
  const vocab = {};
  vocabLines.forEach((t, i) => { vocab[t] = i; });
  const added = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map((t) => ({ id: vocab[t], content: t }));
  REX_TOKENS.forEach((t, k) => added.push({ id: vocabLines.length + k, content: t }));
  for (const a of added) Object.assign(a, { single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const S = (id, type_id) => ({ SpecialToken: { id, type_id } });
  const Q = (id, type_id) => ({ Sequence: { id, type_id } });
  const lower = config.do_lower_case;
  return JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: added,
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: config.tokenize_chinese_chars,
      strip_accents: config.strip_accents, lowercase: lower },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'TemplateProcessing', single: [S('[CLS]', 0), Q('A', 0), S('[SEP]', 0)],
      pair: [S('[CLS]', 0), Q('A', 0), S('[SEP]', 0), Q('B', 1), S('[SEP]', 1)],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]'] } } },
    decoder: null,
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  });
}

const DEFAULT_CONFIG = { do_lower_case: true, strip_accents: null, tokenize_chinese_chars: true };
const cp = (...cps) => String.fromCodePoint(...cps);

// Strings aimed at one rule each (comments say which).
const RULE_TEXTS = [
  '', ' ', '\t\n\r', 'a b', 'Hello, World!', 'hello world', '[cls] [CLS] [Cls]',
  // added tokens: raw text, anywhere, case-sensitive, leftmost-longest
  'abc[SEP]def', 'x[CLS]y[PAD]z[UNK]w[MASK]v', '[PREFIX][TYPE]人物', '[CLASSIFY]好[MULTICLASSIFY]', '[[SEP]]',
  '[SEP', 'SEP]', '[ SEP ]', '[sep]', '[Prefix]', '[PREFIX', 'A[PREFIX]B', '[ＳＥＰ]', 'é[SEP]é', '\u0301[SEP]\u0301',
  // CJK padding ranges (Rust table: 2B920, not 2B820)
  cp(0x4E00, 0x9FFF, 0x3400, 0x4DBF, 0x4DC0), cp(0x20000, 0x2A6DF, 0x2A6E0, 0x2A700, 0x2B73F, 0x2B740),
  cp(0x2B81F, 0x2B820, 0x2B821, 0x2B91F, 0x2B920, 0x2B921), 'a' + cp(0x2B820) + 'b' + cp(0x2B920) + 'c',
  cp(0x2CEAF, 0x2CEB0, 0x2EBE0, 0x30000, 0x31350), cp(0xF8FF, 0xF900, 0xFAFF, 0xFB00), cp(0x2F7FF, 0x2F800, 0x2FA1F, 0x2FA20),
  'x' + cp(0xF900) + 'y' + cp(0x2F800) + 'z',
  // clean text: NUL, U+FFFD, Cc, Cf (Unicode 8.0), Co removed; Cn kept; whitespace -> space
  'a\u0000b\uFFFDc', 'a\u0001b\u001Fc\u007Fd\u0085e\u009Ff', 'a\u001Cb\u001Dc\u001Ed', 'a\u000Bb\u000Cc',
  'a\u200Bb\u200Cc\u200Dd\u200Ee\u2060f\uFEFFg', 'a\u00ADb\u061Cc\u180Ed', 'a' + cp(0x08E2) + 'b' + cp(0x110CD) + 'c' + cp(0x13430) + 'd',
  'a' + cp(0xE000) + 'b' + cp(0xF8FF) + 'c' + cp(0xF0000) + 'd' + cp(0x10FFFD) + 'e', 'a' + cp(0xE0001) + 'b' + cp(0xE0041) + 'c' + cp(0xE007F),
  'a\u0378b', 'x' + cp(0x10FFFF) + 'y', 'p' + cp(0xE0080) + 'q', 'u' + cp(0x2FFFE) + 'v',
  'a\u00A0b\u1680c\u2000d\u200Ae\u2028f\u2029g\u202Fh\u205Fi\u3000j', 'tab\there', '\u3000全角空格\u3000',
  // punctuation: ASCII symbols count; Unicode P* as of 8.0
  'a$b+c<d=e>f^g`h|i~j', 'a_b-c', 'a\u166Db', 'a' + cp(0x111C9) + 'b', 'a\u2E43b\u2E44c\u2E4Fd\u2E52e\u2E5Df',
  'a' + cp(0x1E95E) + 'b' + cp(0x11A3F) + 'c' + cp(0x16FE2) + 'd', 'a\u00A7b\u00B6c\u00BFd\u00A1e', 'a¿b¡c«d»e‹f›g',
  'a\u2010b\u2014c\u2026d\u3001e\u3002f', '“引号”‘单引号’《书名》【括号】', '１２３，４５６。', 'a\u0F14b\u0F85c', 'a\u058Ab\u05BEc',
  'a\u00B7b\u0387c', 'a\u2E3Ab', 'a\u30FBb\uFF65c', 'a\uFE45b\uFE46c', 'a\u2053b\u301Cc\u3030d',
  // strip accents: NFD (Unicode 9.0) then drop Mn (Unicode 8.0)
  'café naïve Ångström résumé', 'CAFÉ NAÏVE', 'e\u0301 a\u0300 o\u0308', '\u0301abc', '\u0301', 'a\u0301\u0302\u0303b',
  'ǅ ǈ ǋ ǲ', 'ﬁ ﬂ', 'ñ Ñ ç Ç ø Ø ß ẞ', 'Ωμέγα ΣΊΣΥΦΟΣ', 'Привет Ёж й', 'Việt Nam tiếng Việt',
  'a\u1734b', 'a\u1885b\u1886c', 'a\uA9BDb', 'a' + cp(0x1E944) + 'b', 'a' + cp(0x1E944) + '\u0316b', 'a\u0344\u0316b',
  'a' + cp(0x11A01) + 'b' + cp(0x1E2EC) + 'c', 'a' + cp(0x11938) + 'b' + cp(0x11935, 0x11930) + 'c',
  'a' + cp(0x1D15E) + 'b' + cp(0x1D165, 0x1D16D) + 'c', 'a\u0345\u0301b', '\u1F82\u1FB7', 'e\u0316\u0301', 'e\u0301\u0316',
  'a\u0CCAb\u0DDAc', '\u0958\u0959 \u09DC', 'a\uFB1Db\uFB2Ac', 'ḱṷṓn', '\u00C5\u212B\u0041\u030A',
  // Hangul syllables decompose into conjoining jamo under NFD
  '한국어 텍스트', '가', '\uD7A3', '\u1100\u1161\u11A8',
  // lowercase: Rust char::to_lowercase (per char, İ -> i̇)
  'İstanbul İ', 'ΣΑΣ', 'Ꭰ Ꭱ ꭰ', cp(0x1C90, 0x1C91), cp(0x1C89) + ' ' + cp(0xA7CB) + ' ' + cp(0xA7DC) + ' ' + cp(0x10D50) + cp(0x10D51),
  cp(0x16E40) + cp(0x1E900) + cp(0x10400), 'ǄǅǆǇ', 'ΐ ΰ', 'Ⅻ ⅻ Ⓐ ⓐ', 'ＡＢＣ ａｂｃ', 'ǰ ẖ',
  // WordPiece: 100 characters per word at most; unknown words become one [UNK]
  'a'.repeat(99), 'a'.repeat(100), 'a'.repeat(101), 'ab'.repeat(50) + ' ok', '1'.repeat(100), '1'.repeat(101),
  'é'.repeat(100), 'é'.repeat(101), '한'.repeat(33), '한'.repeat(34), 'x' + '\u0301'.repeat(150) + 'y',
  'unaffable', 'playing', 'Cupertino', 'iPhone15', '2023年9月', '1944年', '2.7亿', 'http://example.com/a?b=c&d=e',
  'user@example.com', '#hashtag @mention', 'C++ C# .NET', "don't won't", '¥100 €200 $300', '３.１４',
  // emoji, ZWJ sequences, variation selectors, keycaps, skin tones
  '😀😃 👍🏽 👨‍👩‍👧 ❤️ 1️⃣ 🇨🇳', 'a\uFE0Fb\uFE0Ec', 'a\u20E3b', cp(0x1F3FB) + 'x', cp(0xE0067, 0xE0062),
  // other scripts
  'こんにちは カタカナ ｶﾀｶﾅ', 'مرحبا بالعالم', 'שלום', 'नमस्ते', 'สวัสดี', 'ᠮᠣᠩᠭᠣᠯ', '𠀀𠀁𪚥', '〇〡〩', '㐀㐁',
  'Ⅰ Ⅱ ① ② ㈠', '⺀⺁', '⼀⼁', '㊀㊁', '〆〤', 'ꀀꀁ', '𝐀𝐁𝐂 𝒜', 'µ', 'ﷺ', '\u0640', 'x\u034Fy',
];

// Seeded generator (mulberry32) so that the file is reproducible.
function rng(seed) {
  return () => {
    seed = (seed + 0x6D2B79F5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = rng(20250601);
const pick = (a) => a[Math.floor(rand() * a.length)];
const range = (lo, hi) => () => lo + Math.floor(rand() * (hi - lo + 1));
const one = (...cps) => () => pick(cps);
const POOLS = [
  [8, range(0x20, 0x7E)], [3, one(0x20, 0x20, 0x09, 0x0A)], [4, range(0xC0, 0x24F)], [3, range(0x300, 0x36F)],
  [2, range(0x370, 0x3FF)], [2, range(0x400, 0x4FF)], [10, range(0x4E00, 0x9FFF)], [2, range(0x3400, 0x4DFF)],
  [2, range(0x20000, 0x2000F)], [2, range(0x2B800, 0x2B940)], [1, range(0x2CEA0, 0x2CEBF)], [1, range(0xF8F0, 0xF90F)],
  [1, range(0x2F800, 0x2F80F)], [1, range(0x30000, 0x3000F)], [2, range(0xAC00, 0xD7A3)], [1, range(0x3040, 0x30FF)],
  [3, range(0xFF01, 0xFF65)], [3, range(0x3000, 0x303F)], [2, range(0x2000, 0x206F)], [2, range(0x2E00, 0x2E5D)],
  [1, range(0x0080, 0x00BF)], [1, range(0x0000, 0x001F)], [1, one(0xFFFD, 0xFEFF, 0x200D, 0xE000, 0xF0000, 0x10FFFD, 0x10FFFF, 0x0378, 0xE0080)],
  [2, range(0x1F300, 0x1F64F)], [1, one(0x1F3FB, 0x1F3FF, 0xFE0F, 0x20E3)],
  [1, one(0x166D, 0x111C9, 0x1734, 0x1885, 0x1886, 0xA9BD, 0x1E944, 0x1E95E, 0x11A3F, 0x08E2, 0x110CD, 0x13430, 0x130, 0x1E9E, 0x13A0, 0x1C90, 0x1C89, 0xA7CB)],
  [1, range(0x1E900, 0x1E95F)], [1, range(0x0E00, 0x0E7F)], [1, range(0x0900, 0x097F)], [1, range(0x0600, 0x06FF)],
  [1, range(0x1D400, 0x1D4FF)], [1, range(0x2460, 0x24FF)], [1, range(0x1100, 0x11FF)],
];
const POOL_WEIGHT = POOLS.reduce((s, [w]) => s + w, 0);
function randomChar() {
  let r = rand() * POOL_WEIGHT;
  for (const [w, f] of POOLS) {
    if ((r -= w) < 0) return String.fromCodePoint(f());
  }
  return 'a';
}
const WORDS = vocabLines.filter((t) => !t.startsWith('[') && !t.startsWith('##'));
const PIECES = ['[SEP]', '[CLS]', '[cls]', '[PREFIX]', '[TYPE]', '[CLASSIFY]', '[MULTICLASSIFY]', '[PAD]', '[UNK]', '[MASK]', '[', ']', '[SEP', 'SEP]', '[PREFIX'];
function randomText() {
  const units = 1 + Math.floor(rand() * 16);
  let s = '';
  for (let i = 0; i < units; ++i) {
    const r = rand();
    if (r < 0.55) s += randomChar();
    else if (r < 0.8) s += pick(WORDS);
    else if (r < 0.88) s += pick(WORDS).toUpperCase();
    else if (r < 0.95) s += pick(PIECES);
    else s += ' ';
  }
  return s;
}

async function singles(Tokenizer, out) {
  const configs = [
    DEFAULT_CONFIG,
    { do_lower_case: true, strip_accents: false, tokenize_chinese_chars: true },
    { do_lower_case: false, strip_accents: null, tokenize_chinese_chars: true },
    { do_lower_case: false, strip_accents: true, tokenize_chinese_chars: false },
  ];
  for (const config of configs) {
    const tok = Tokenizer.fromString(tokenizerJson(config));
    const texts = config === DEFAULT_CONFIG ? RULE_TEXTS.concat(Array.from({ length: 1500 }, randomText)) : RULE_TEXTS;
    for (const text of texts) {
      const e = await tok.encode(text);
      out.push({ kind: 'single', config, text, input_ids: e.getIds(), offsets: e.getOffsets() });
    }
  }
}

// Pair windows from a release before 0.23 (which stops tokenizing the second sequence early).
async function windows(Tokenizer, out) {
  const long = '北大西洋议会春季会议26日在西班牙巴塞罗那闭幕。Apple公司CEO Tim Cook于2023年发布iPhone 15，售价5999元！';
  const cases = [
    ['[PREFIX][TYPE]人物[TYPE]地理位置', long, 40, 8], ['[PREFIX][TYPE]人物', long.repeat(3), 64, 16],
    ['[PREFIX][TYPE]人物', long.repeat(3), 64, 0], ['[PREFIX][TYPE]人物', long, 512, 32],
    ['[PREFIX][TYPE]正向情感[TYPE]负向情感', '[CLASSIFY]' + long.repeat(2), 50, 0], ['短', long.repeat(2), 30, 20],
    ['[PREFIX][TYPE]组织机构', long.repeat(12), 512, 32], ['[PREFIX][TYPE]人物', 'x '.repeat(45), 20, 5],
    ['提示', long, 16, 1], ['提示', long.slice(0, 10), 16, 1],
  ];
  for (const [hint, text, maxLen, stride] of cases) {
    const tok = Tokenizer.fromString(tokenizerJson(DEFAULT_CONFIG));
    tok.setTruncation(maxLen, { stride, strategy: 'OnlySecond' });
    const e = await tok.encode(hint, text);
    const all = [e].concat(e.getOverflowing());
    out.push({ kind: 'windows', hint, text, max_len: maxLen, stride,
      windows: all.map((w) => ({ input_ids: w.getIds(), offsets: w.getOffsets(), token_type_ids: w.getTypeIds() })) });
  }
}

// Lines (hex numbers):  removed LO HI | space LO HI | cjk LO HI | punct LO HI | split LO HI
//                      lower LO HI DELTA (decimal) | lower1 CP OUT... | strip CP [OUT...]
// removed/space: the clean-text step drops the code point / maps it to ' '; cjk: padded with
// spaces; punct / split: the pre-tokenizer isolates it / splits on it; lower: the lowercase step
// maps each code point of LO..HI to itself + DELTA, lower1 to several; strip: NFD + drop Mn gives OUT (empty:
// dropped). Hangul syllables (AC00..D7A3, algorithmic NFD) are left out of the strip lines.
function charTable({ bertNormalizer, bertPreTokenizer }) {
  const N = (o) => bertNormalizer(Object.assign({ cleanText: false, handleChineseChars: false, stripAccents: false, lowercase: false }, o));
  const clean = N({ cleanText: true }), cjk = N({ handleChineseChars: true }), strip = N({ stripAccents: true }), lower = N({ lowercase: true });
  const pre = bertPreTokenizer();
  const hex = (c) => c.toString(16);
  const ranges = { removed: [], space: [], cjk: [], punct: [], split: [] };
  const lowers = [];
  const lines = [];
  const addRange = (list, c, tag = 0) => {
    const last = list[list.length - 1];
    if (last && last[1] === c - 1 && last[2] === tag) last[1] = c;
    else list.push([c, c, tag]);
  };
  for (let c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    const s = String.fromCodePoint(c);
    const cl = clean.normalizeString(s);
    if (cl === '') addRange(ranges.removed, c);
    else if (cl !== s) addRange(ranges.space, c);
    if (cjk.normalizeString(s) !== s) addRange(ranges.cjk, c);
    const pieces = pre.preTokenizeString('a' + s + 'b').length;
    if (pieces === 3) addRange(ranges.punct, c);
    else if (pieces === 2) addRange(ranges.split, c);
    const lo = [...lower.normalizeString(s)].map((x) => x.codePointAt(0));
    if (lo.length !== 1) lines.push(`lower1 ${hex(c)} ${lo.map(hex).join(' ')}`);
    else if (lo[0] !== c) addRange(lowers, c, lo[0] - c);
    const st = strip.normalizeString(s);
    if (st !== s && !(c >= 0xAC00 && c <= 0xD7A3)) lines.push(`strip ${hex(c)} ${[...st].map((x) => hex(x.codePointAt(0))).join(' ')}`.trimEnd());
  }
  for (const [name, list] of Object.entries(ranges)) {
    for (const [lo, hi] of list) lines.push(`${name} ${hex(lo)} ${hex(hi)}`);
  }
  for (const [lo, hi, delta] of lowers) lines.push(`lower ${hex(lo)} ${hex(hi)} ${delta}`);
  return lines;
}

module.exports = { tokenizerJson };
if (require.main !== module) return;

(async () => {
  if (process.argv.includes('--char-table')) {
    for (const l of charTable(require(process.env.HF_NEW || 'tokenizers'))) process.stdout.write(l + '\n');
    return;
  }
  const out = [];
  await singles(require(process.env.HF_NEW || 'tokenizers').Tokenizer, out);
  await windows(require(process.env.HF_OLD).Tokenizer, out);
  for (const r of out) process.stdout.write(JSON.stringify(r) + '\n');
})();
