"""Pure-Python BERT WordPiece tokenizer with code-point offsets.

Mirrors what RexUniNLU's fast tokenizer does (spec section 1.3): added special tokens are split
out of the raw text first (case-sensitive), then BertNormalizer (clean text, pad CJK, strip
accents, lowercase), BertPreTokenizer (whitespace + punctuation) and greedy WordPiece.
It exists so that training data can be prepared on a machine without `transformers`; its parity
with the original tokenizer is measured by test_tokenizer.py on tests/data/rexuninlu_vocab_cases.jsonl.
"""
import unicodedata

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ADDED_TOKENS = ["[PREFIX]", "[TYPE]", "[CLASSIFY]", "[MULTICLASSIFY]"]

# CJK ranges of the Rust BertNormalizer (note 0x2B920, not 0x2B820 as in the slow tokenizer).
_CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]
# Unicode White_Space minus the characters that are controls (those are dropped before).
_WHITESPACE = set("\t\n\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000") | {chr(c) for c in range(0x2000, 0x200B)}


def _is_cjk(cp):
    return any(a <= cp <= b for a, b in _CJK)


def _is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf", "Cn", "Co", "Cs")


def _is_punct(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


class BertTokenizer:
    def __init__(self, vocab_path, added_tokens=ADDED_TOKENS):
        with open(vocab_path, encoding="utf-8") as f:
            tokens = f.read().split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
        self.vocab = {t: i for i, t in enumerate(tokens)}
        for t in added_tokens:
            if t not in self.vocab:
                self.vocab[t] = len(self.vocab)
        self.inv_vocab = {i: t for t, i in self.vocab.items()}
        self.specials = [t for t in SPECIAL_TOKENS + list(added_tokens) if t in self.vocab]
        self.cls_id = self.vocab["[CLS]"]
        self.sep_id = self.vocab["[SEP]"]
        self.pad_id = self.vocab["[PAD]"]
        self.unk_id = self.vocab["[UNK]"]
        self._cache = {}

    def token_id(self, tok):
        return self.vocab[tok]

    # ------------------------------------------------------------------ pieces
    def _split_specials(self, text):
        """Yields (is_special, start, end) segments of text."""
        i, n, start = 0, len(text), 0
        while i < n:
            if text[i] == "[":
                hit = None
                for t in self.specials:
                    if text.startswith(t, i) and (hit is None or len(t) > len(hit)):
                        hit = t
                if hit:
                    if start < i:
                        yield False, start, i
                    yield True, i, i + len(hit)
                    i += len(hit)
                    start = i
                    continue
            i += 1
        if start < n:
            yield False, start, n

    def _normalize(self, text, base):
        """Returns [(char, original index)] after BertNormalizer."""
        out = []
        for k, ch in enumerate(text):
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or _is_control(ch):
                continue
            if ch in _WHITESPACE:
                out.append((" ", base + k))
                continue
            if _is_cjk(cp):
                out.extend(((" ", base + k), (ch, base + k), (" ", base + k)))
                continue
            for d in unicodedata.normalize("NFD", ch):
                if unicodedata.category(d) == "Mn":
                    continue
                for low in d.lower():
                    out.append((low, base + k))
        return out

    def _words(self, norm):
        word = []
        for ch, o in norm:
            if ch == " ":
                if word:
                    yield word
                word = []
            elif _is_punct(ch):
                if word:
                    yield word
                yield [(ch, o)]
                word = []
            else:
                word.append((ch, o))
        if word:
            yield word

    def _wordpiece(self, word):
        """word: str -> list of (id, char_start, char_end) in word coordinates."""
        if word in self._cache:
            return self._cache[word]
        if len(word) > 100:
            res = [(self.unk_id, 0, len(word))]
        else:
            res, start = [], 0
            while start < len(word):
                end, cur = len(word), None
                while start < end:
                    sub = word[start:end]
                    if start > 0:
                        sub = "##" + sub
                    if sub in self.vocab:
                        cur = self.vocab[sub]
                        break
                    end -= 1
                if cur is None:
                    res = [(self.unk_id, 0, len(word))]
                    break
                res.append((cur, start, end))
                start = end
        self._cache[word] = res
        return res

    # ------------------------------------------------------------------ public
    def tokenize(self, text):
        """Returns (ids, offsets) without [CLS]/[SEP]; offsets are code-point [start, end)."""
        ids, offs = [], []
        for special, s, e in self._split_specials(text):
            if special:
                ids.append(self.vocab[text[s:e]])
                offs.append((s, e))
                continue
            for word in self._words(self._normalize(text[s:e], s)):
                w = "".join(c for c, _ in word)
                for tid, a, b in self._wordpiece(w):
                    ids.append(tid)
                    offs.append((word[a][1], word[b - 1][1] + 1))
        return ids, offs

    def encode(self, text):
        ids, offs = self.tokenize(text)
        return [self.cls_id] + ids + [self.sep_id], [(0, 0)] + offs + [(0, 0)]

    def ntok(self, text):
        """len(tokenizer(text).input_ids) - 1, as the original hint builder counts."""
        return len(self.tokenize(text)[0]) + 1
