#!/usr/bin/env python3
"""Reference data of HF tokenizers (the Rust library, through its official Python bindings from
PyPI) for the BERT tokenizer of the RexUniNLU checkpoint.

Writes tests/data/text/hf_rule_cases.jsonl: tokenizers 0.23.2 on strings aimed at each
normalization / pre-tokenization rule plus seeded random strings, and pair windows from a
pre-0.23 release, 0.13.3 (spec 5.2). With --char-table, writes tests/data/text/hf_char_table.txt:
every code point through each normalizer step and the pre-tokenizer alone (see char_table()).

Not needed to build or test rexnlu (ctest hf_reference_data_reproduces checks that a rerun gives
the committed files byte for byte); rerun only to extend the cases, from the repository root:
  "$(scripts/python_env.sh hf-tokenizers)" tests/text/make_hf_cases.py > tests/data/text/hf_rule_cases.jsonl
  "$(scripts/python_env.sh hf-tokenizers)" tests/text/make_hf_cases.py --char-table \\
    > tests/data/text/hf_char_table.txt
The first command takes the windows records from a second run of this script under
"$(scripts/python_env.sh hf-tokenizers-0.13)" ... --windows (it starts that run itself).

Record kinds (one JSON object a line, serialized as JavaScript's JSON.stringify does it, which
wrote the first version of the file: no spaces, non-ASCII characters unescaped):
  {"kind":"single","config":{...},"text","input_ids","offsets"}      tokenizer(text), 0.23.2
  {"kind":"windows","hint","text","max_len","stride","windows":[{"input_ids","offsets",
   "token_type_ids"}...]}  tokenizer(hint, text, truncation only_second, overflow), 0.13.3
Offsets count code points (Python's str indices).
"""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VOCAB = ROOT / 'models' / 'rexuninlu_tiny' / 'vocab.txt'
REX_TOKENS = ['[PREFIX]', '[TYPE]', '[CLASSIFY]', '[MULTICLASSIFY]']
NEW_VERSION = '0.23.2'  # tools/requirements/hf-tokenizers.txt
OLD_VERSION = '0.13.3'  # tools/requirements/hf-tokenizers-0.13.txt

VOCAB_LINES = VOCAB.read_text(encoding='utf-8').split('\n')
if VOCAB_LINES[-1] == '':
    VOCAB_LINES.pop()


def to_json(value):
    """JSON text as JavaScript's JSON.stringify writes it (what the committed files hold): same
    escapes (\\n, \\t, ..., \\u001f lower case; nothing above U+001F but " and \\). JavaScript would
    also escape a lone surrogate; no string here has one."""
    return json.dumps(value, ensure_ascii=False, separators=(',', ':'))


def tokenizer_json(config):
    """The tokenizer.json transformers builds for this checkpoint (BertConverter + added tokens)."""
    vocab = {}
    for i, t in enumerate(VOCAB_LINES):
        vocab[t] = i
    added = [{'id': vocab[t], 'content': t} for t in ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']]
    added += [{'id': len(VOCAB_LINES) + k, 'content': t} for k, t in enumerate(REX_TOKENS)]
    for a in added:
        a.update(single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)

    def special(id_, type_id):
        return {'SpecialToken': {'id': id_, 'type_id': type_id}}

    def sequence(id_, type_id):
        return {'Sequence': {'id': id_, 'type_id': type_id}}

    return to_json({
        'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': added,
        'normalizer': {'type': 'BertNormalizer', 'clean_text': True,
                       'handle_chinese_chars': config['tokenize_chinese_chars'],
                       'strip_accents': config['strip_accents'], 'lowercase': config['do_lower_case']},
        'pre_tokenizer': {'type': 'BertPreTokenizer'},
        'post_processor': {
            'type': 'TemplateProcessing',
            'single': [special('[CLS]', 0), sequence('A', 0), special('[SEP]', 0)],
            'pair': [special('[CLS]', 0), sequence('A', 0), special('[SEP]', 0), sequence('B', 1),
                     special('[SEP]', 1)],
            'special_tokens': {
                '[CLS]': {'id': '[CLS]', 'ids': [vocab['[CLS]']], 'tokens': ['[CLS]']},
                '[SEP]': {'id': '[SEP]', 'ids': [vocab['[SEP]']], 'tokens': ['[SEP]']}}},
        'decoder': None,
        'model': {'type': 'WordPiece', 'unk_token': '[UNK]', 'continuing_subword_prefix': '##',
                  'max_input_chars_per_word': 100, 'vocab': vocab},
    })


def load_tokenizers(version):
    """The tokenizers module, checked to be `version` (the pinned one the data was made with)."""
    import tokenizers
    if tokenizers.__version__ != version:
        sys.exit(f'make_hf_cases.py: needs tokenizers {version}, this python ({sys.executable}) has '
                 f'{tokenizers.__version__}; see the usage at the top of {__file__}')
    return tokenizers


DEFAULT_CONFIG = {'do_lower_case': True, 'strip_accents': None, 'tokenize_chinese_chars': True}


def cp(*cps):
    return ''.join(map(chr, cps))


# Strings aimed at one rule each (comments say which).
RULE_TEXTS = [
    '', ' ', '\t\n\r', 'a b', 'Hello, World!', 'hello world', '[cls] [CLS] [Cls]',
    # added tokens: raw text, anywhere, case-sensitive, leftmost-longest
    'abc[SEP]def', 'x[CLS]y[PAD]z[UNK]w[MASK]v', '[PREFIX][TYPE]人物', '[CLASSIFY]好[MULTICLASSIFY]', '[[SEP]]',
    '[SEP', 'SEP]', '[ SEP ]', '[sep]', '[Prefix]', '[PREFIX', 'A[PREFIX]B', '[ＳＥＰ]', 'é[SEP]é', '\u0301[SEP]\u0301',
    # CJK padding ranges (Rust table: 2B920, not 2B820)
    cp(0x4E00, 0x9FFF, 0x3400, 0x4DBF, 0x4DC0), cp(0x20000, 0x2A6DF, 0x2A6E0, 0x2A700, 0x2B73F, 0x2B740),
    cp(0x2B81F, 0x2B820, 0x2B821, 0x2B91F, 0x2B920, 0x2B921), 'a' + cp(0x2B820) + 'b' + cp(0x2B920) + 'c',
    cp(0x2CEAF, 0x2CEB0, 0x2EBE0, 0x30000, 0x31350), cp(0xF8FF, 0xF900, 0xFAFF, 0xFB00), cp(0x2F7FF, 0x2F800, 0x2FA1F, 0x2FA20),
    'x' + cp(0xF900) + 'y' + cp(0x2F800) + 'z',
    # clean text: NUL, U+FFFD, Cc, Cf (Unicode 8.0), Co removed; Cn kept; whitespace -> space
    'a\u0000b\uFFFDc', 'a\u0001b\u001Fc\u007Fd\u0085e\u009Ff', 'a\u001Cb\u001Dc\u001Ed', 'a\u000Bb\u000Cc',
    'a\u200Bb\u200Cc\u200Dd\u200Ee\u2060f\uFEFFg', 'a\u00ADb\u061Cc\u180Ed', 'a' + cp(0x08E2) + 'b' + cp(0x110CD) + 'c' + cp(0x13430) + 'd',
    'a' + cp(0xE000) + 'b' + cp(0xF8FF) + 'c' + cp(0xF0000) + 'd' + cp(0x10FFFD) + 'e', 'a' + cp(0xE0001) + 'b' + cp(0xE0041) + 'c' + cp(0xE007F),
    'a\u0378b', 'x' + cp(0x10FFFF) + 'y', 'p' + cp(0xE0080) + 'q', 'u' + cp(0x2FFFE) + 'v',
    'a\u00A0b\u1680c\u2000d\u200Ae\u2028f\u2029g\u202Fh\u205Fi\u3000j', 'tab\there', '\u3000全角空格\u3000',
    # punctuation: ASCII symbols count; Unicode P* as of 8.0
    'a$b+c<d=e>f^g`h|i~j', 'a_b-c', 'a\u166Db', 'a' + cp(0x111C9) + 'b', 'a\u2E43b\u2E44c\u2E4Fd\u2E52e\u2E5Df',
    'a' + cp(0x1E95E) + 'b' + cp(0x11A3F) + 'c' + cp(0x16FE2) + 'd', 'a\u00A7b\u00B6c\u00BFd\u00A1e', 'a¿b¡c«d»e‹f›g',
    'a\u2010b\u2014c\u2026d\u3001e\u3002f', '“引号”‘单引号’《书名》【括号】', '１２３，４５６。', 'a\u0F14b\u0F85c', 'a\u058Ab\u05BEc',
    'a\u00B7b\u0387c', 'a\u2E3Ab', 'a\u30FBb\uFF65c', 'a\uFE45b\uFE46c', 'a\u2053b\u301Cc\u3030d',
    # strip accents: NFD (Unicode 9.0) then drop Mn (Unicode 8.0)
    'café naïve Ångström résumé', 'CAFÉ NAÏVE', 'e\u0301 a\u0300 o\u0308', '\u0301abc', '\u0301', 'a\u0301\u0302\u0303b',
    'ǅ ǈ ǋ ǲ', 'ﬁ ﬂ', 'ñ Ñ ç Ç ø Ø ß ẞ', 'Ωμέγα ΣΊΣΥΦΟΣ', 'Привет Ёж й', 'Việt Nam tiếng Việt',
    'a\u1734b', 'a\u1885b\u1886c', 'a\uA9BDb', 'a' + cp(0x1E944) + 'b', 'a' + cp(0x1E944) + '\u0316b', 'a\u0344\u0316b',
    'a' + cp(0x11A01) + 'b' + cp(0x1E2EC) + 'c', 'a' + cp(0x11938) + 'b' + cp(0x11935, 0x11930) + 'c',
    'a' + cp(0x1D15E) + 'b' + cp(0x1D165, 0x1D16D) + 'c', 'a\u0345\u0301b', '\u1F82\u1FB7', 'e\u0316\u0301', 'e\u0301\u0316',
    'a\u0CCAb\u0DDAc', '\u0958\u0959 \u09DC', 'a\uFB1Db\uFB2Ac', 'ḱṷṓn', '\u00C5\u212B\u0041\u030A',
    # Hangul syllables decompose into conjoining jamo under NFD
    '한국어 텍스트', '가', '\uD7A3', '\u1100\u1161\u11A8',
    # lowercase: Rust char::to_lowercase (per char, İ -> i̇)
    'İstanbul İ', 'ΣΑΣ', 'Ꭰ Ꭱ ꭰ', cp(0x1C90, 0x1C91), cp(0x1C89) + ' ' + cp(0xA7CB) + ' ' + cp(0xA7DC) + ' ' + cp(0x10D50) + cp(0x10D51),
    cp(0x16E40) + cp(0x1E900) + cp(0x10400), 'ǄǅǆǇ', 'ΐ ΰ', 'Ⅻ ⅻ Ⓐ ⓐ', 'ＡＢＣ ａｂｃ', 'ǰ ẖ',
    # WordPiece: 100 characters per word at most; unknown words become one [UNK]
    'a' * 99, 'a' * 100, 'a' * 101, 'ab' * 50 + ' ok', '1' * 100, '1' * 101,
    'é' * 100, 'é' * 101, '한' * 33, '한' * 34, 'x' + '\u0301' * 150 + 'y',
    'unaffable', 'playing', 'Cupertino', 'iPhone15', '2023年9月', '1944年', '2.7亿', 'http://example.com/a?b=c&d=e',
    'user@example.com', '#hashtag @mention', 'C++ C# .NET', "don't won't", '¥100 €200 $300', '３.１４',
    # emoji, ZWJ sequences, variation selectors, keycaps, skin tones
    '😀😃 👍🏽 👨‍👩‍👧 ❤️ 1️⃣ 🇨🇳', 'a\uFE0Fb\uFE0Ec', 'a\u20E3b', cp(0x1F3FB) + 'x', cp(0xE0067, 0xE0062),
    # other scripts
    'こんにちは カタカナ ｶﾀｶﾅ', 'مرحبا بالعالم', 'שלום', 'नमस्ते', 'สวัสดี', 'ᠮᠣᠩᠭᠣᠯ', '𠀀𠀁𪚥', '〇〡〩', '㐀㐁',
    'Ⅰ Ⅱ ① ② ㈠', '⺀⺁', '⼀⼁', '㊀㊁', '〆〤', 'ꀀꀁ', '𝐀𝐁𝐂 𝒜', 'µ', 'ﷺ', '\u0640', 'x\u034Fy',
]

U32 = 0xFFFFFFFF


def mulberry32(seed):
    """The seeded generator of the first (JavaScript) version, bit for bit: floats in [0, 1)."""
    state = seed & U32

    def rand():
        nonlocal state
        state = (state + 0x6D2B79F5) & U32
        t = ((state ^ (state >> 15)) * (1 | state)) & U32
        t = ((t + (((t ^ (t >> 7)) * (61 | t)) & U32)) & U32) ^ t
        return (t ^ (t >> 14)) / 4294967296

    return rand


def random_texts(count):
    """`count` seeded random strings: characters from weighted pools, vocabulary words (some upper
    case), added tokens and their fragments, spaces."""
    rand = mulberry32(20250601)

    def pick(a):
        return a[int(rand() * len(a))]

    def span(lo, hi):
        return lambda: lo + int(rand() * (hi - lo + 1))

    def one(*cps):
        return lambda: pick(cps)

    pools = [
        (8, span(0x20, 0x7E)), (3, one(0x20, 0x20, 0x09, 0x0A)), (4, span(0xC0, 0x24F)), (3, span(0x300, 0x36F)),
        (2, span(0x370, 0x3FF)), (2, span(0x400, 0x4FF)), (10, span(0x4E00, 0x9FFF)), (2, span(0x3400, 0x4DFF)),
        (2, span(0x20000, 0x2000F)), (2, span(0x2B800, 0x2B940)), (1, span(0x2CEA0, 0x2CEBF)), (1, span(0xF8F0, 0xF90F)),
        (1, span(0x2F800, 0x2F80F)), (1, span(0x30000, 0x3000F)), (2, span(0xAC00, 0xD7A3)), (1, span(0x3040, 0x30FF)),
        (3, span(0xFF01, 0xFF65)), (3, span(0x3000, 0x303F)), (2, span(0x2000, 0x206F)), (2, span(0x2E00, 0x2E5D)),
        (1, span(0x0080, 0x00BF)), (1, span(0x0000, 0x001F)),
        (1, one(0xFFFD, 0xFEFF, 0x200D, 0xE000, 0xF0000, 0x10FFFD, 0x10FFFF, 0x0378, 0xE0080)),
        (2, span(0x1F300, 0x1F64F)), (1, one(0x1F3FB, 0x1F3FF, 0xFE0F, 0x20E3)),
        (1, one(0x166D, 0x111C9, 0x1734, 0x1885, 0x1886, 0xA9BD, 0x1E944, 0x1E95E, 0x11A3F, 0x08E2, 0x110CD, 0x13430,
                0x130, 0x1E9E, 0x13A0, 0x1C90, 0x1C89, 0xA7CB)),
        (1, span(0x1E900, 0x1E95F)), (1, span(0x0E00, 0x0E7F)), (1, span(0x0900, 0x097F)), (1, span(0x0600, 0x06FF)),
        (1, span(0x1D400, 0x1D4FF)), (1, span(0x2460, 0x24FF)), (1, span(0x1100, 0x11FF)),
    ]
    pool_weight = sum(w for w, _ in pools)
    words = [t for t in VOCAB_LINES if not t.startswith('[') and not t.startswith('##')]
    pieces = ['[SEP]', '[CLS]', '[cls]', '[PREFIX]', '[TYPE]', '[CLASSIFY]', '[MULTICLASSIFY]', '[PAD]', '[UNK]',
              '[MASK]', '[', ']', '[SEP', 'SEP]', '[PREFIX']

    def random_char():
        r = rand() * pool_weight
        for w, f in pools:
            r -= w
            if r < 0:
                return chr(f())
        return 'a'

    def random_text():
        s = ''
        for _ in range(1 + int(rand() * 16)):
            r = rand()
            if r < 0.55:
                s += random_char()
            elif r < 0.8:
                s += pick(words)
            elif r < 0.88:
                s += pick(words).upper()
            elif r < 0.95:
                s += pick(pieces)
            else:
                s += ' '
        return s

    return [random_text() for _ in range(count)]


def singles(tokenizers):
    configs = [
        DEFAULT_CONFIG,
        {'do_lower_case': True, 'strip_accents': False, 'tokenize_chinese_chars': True},
        {'do_lower_case': False, 'strip_accents': None, 'tokenize_chinese_chars': True},
        {'do_lower_case': False, 'strip_accents': True, 'tokenize_chinese_chars': False},
    ]
    records = []
    for config in configs:
        tok = tokenizers.Tokenizer.from_str(tokenizer_json(config))
        texts = RULE_TEXTS + random_texts(1500) if config is DEFAULT_CONFIG else RULE_TEXTS
        for text in texts:
            e = tok.encode(text)
            records.append({'kind': 'single', 'config': config, 'text': text, 'input_ids': e.ids,
                            'offsets': e.offsets})
    return records


def windows(tokenizers):
    """Pair windows from a release before 0.23 (which stops tokenizing the second sequence early)."""
    long = '北大西洋议会春季会议26日在西班牙巴塞罗那闭幕。Apple公司CEO Tim Cook于2023年发布iPhone 15，售价5999元！'
    cases = [
        ('[PREFIX][TYPE]人物[TYPE]地理位置', long, 40, 8), ('[PREFIX][TYPE]人物', long * 3, 64, 16),
        ('[PREFIX][TYPE]人物', long * 3, 64, 0), ('[PREFIX][TYPE]人物', long, 512, 32),
        ('[PREFIX][TYPE]正向情感[TYPE]负向情感', '[CLASSIFY]' + long * 2, 50, 0), ('短', long * 2, 30, 20),
        ('[PREFIX][TYPE]组织机构', long * 12, 512, 32), ('[PREFIX][TYPE]人物', 'x ' * 45, 20, 5),
        ('提示', long, 16, 1), ('提示', long[:10], 16, 1),
    ]
    records = []
    for hint, text, max_len, stride in cases:
        tok = tokenizers.Tokenizer.from_str(tokenizer_json(DEFAULT_CONFIG))
        tok.enable_truncation(max_len, stride=stride, strategy='only_second')
        e = tok.encode(hint, text)
        records.append({'kind': 'windows', 'hint': hint, 'text': text, 'max_len': max_len, 'stride': stride,
                        'windows': [{'input_ids': w.ids, 'offsets': w.offsets, 'token_type_ids': w.type_ids}
                                    for w in [e] + e.overflowing]})
    return records


def char_table(tokenizers):
    """Lines (hex numbers):  removed LO HI | space LO HI | cjk LO HI | punct LO HI | split LO HI
                            lower LO HI DELTA (decimal) | lower1 CP OUT... | strip CP [OUT...]
    removed/space: the clean-text step drops the code point / maps it to ' '; cjk: padded with
    spaces; punct / split: the pre-tokenizer isolates it / splits on it; lower: the lowercase step
    maps each code point of LO..HI to itself + DELTA, lower1 to several; strip: NFD + drop Mn gives
    OUT (empty: dropped). Hangul syllables (AC00..D7A3, algorithmic NFD) are left out of the strip
    lines. Everything else HF keeps unchanged."""
    def step(**on):
        flags = dict(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=False)
        return tokenizers.normalizers.BertNormalizer(**{**flags, **on}).normalize_str

    clean, cjk = step(clean_text=True), step(handle_chinese_chars=True)
    strip, lower = step(strip_accents=True), step(lowercase=True)
    pre = tokenizers.pre_tokenizers.BertPreTokenizer().pre_tokenize_str
    ranges = {'removed': [], 'space': [], 'cjk': [], 'punct': [], 'split': []}
    lowers = []
    lines = []

    def add_range(spans, c, tag=0):
        if spans and spans[-1][1] == c - 1 and spans[-1][2] == tag:
            spans[-1][1] = c
        else:
            spans.append([c, c, tag])

    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        s = chr(c)
        cl = clean(s)
        if cl == '':
            add_range(ranges['removed'], c)
        elif cl != s:
            add_range(ranges['space'], c)
        if cjk(s) != s:
            add_range(ranges['cjk'], c)
        pieces = len(pre('a' + s + 'b'))
        if pieces == 3:
            add_range(ranges['punct'], c)
        elif pieces == 2:
            add_range(ranges['split'], c)
        lo = lower(s)
        if len(lo) != 1:
            lines.append(f'lower1 {c:x} ' + ' '.join(f'{ord(x):x}' for x in lo))
        elif ord(lo) != c:
            add_range(lowers, c, ord(lo) - c)
        st = strip(s)
        if st != s and not 0xAC00 <= c <= 0xD7A3:
            lines.append(f'strip {c:x} {" ".join(f"{ord(x):x}" for x in st)}'.rstrip())
    for name, spans in ranges.items():
        lines += [f'{name} {lo:x} {hi:x}' for lo, hi, _ in spans]
    lines += [f'lower {lo:x} {hi:x} {delta}' for lo, hi, delta in lowers]
    return lines


def write_lines(lines):
    sys.stdout.buffer.write(''.join(line + '\n' for line in lines).encode('utf-8'))


def main(args):
    if args == ['--char-table']:
        write_lines(char_table(load_tokenizers(NEW_VERSION)))
    elif args == ['--windows']:
        write_lines(map(to_json, windows(load_tokenizers(OLD_VERSION))))
    elif not args:
        records = singles(load_tokenizers(NEW_VERSION))
        old_python = subprocess.run([ROOT / 'scripts' / 'python_env.sh', 'hf-tokenizers-0.13'], check=True,
                                    stdout=subprocess.PIPE, text=True).stdout.strip()
        old = subprocess.run([old_python, __file__, '--windows'], check=True, stdout=subprocess.PIPE).stdout
        write_lines(map(to_json, records))
        sys.stdout.buffer.write(old)
    else:
        sys.exit(f'usage: {sys.argv[0]} [--char-table | --windows]')


if __name__ == '__main__':
    main(sys.argv[1:])
