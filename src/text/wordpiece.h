// WordPiece model of HF tokenizers: greedy longest-match-first over one pre-token, "##" marks
// a piece that continues a word, and a word that cannot be covered (or is longer than 100
// characters) becomes a single unknown token spanning the whole word.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/encoding.h"
#include "text/normalizer.h"
#include "text/vocab_table.h"

namespace rexnlu::text {

class WordPiece {
 public:
  static constexpr size_t kMaxCharsPerWord = 100;
  static constexpr std::string_view kContinuationPrefix = "##";

  // Adds a vocab.txt entry. Returns false when the entry is a duplicate.
  bool add(std::string_view token, int32_t id);
  void set_unk_id(int32_t id) { unk_id_ = id; }

  struct Scratch {
    std::string utf8;
    std::vector<uint32_t> char_byte;  // byte offset of each character in utf8, plus the end
  };
  // Appends the pieces of `word` (normalized characters with their original alignment).
  void tokenize(std::span<const NormChar> word, Encoding& out, Scratch& scratch) const;

 private:
  // Id of the entry for piece text [begin, end) of the word, -1 when absent.
  int32_t find(std::span<const NormChar> word, size_t begin, size_t end, const Scratch& scratch) const;

  static constexpr char32_t kDirectLimit = 0x10000;
  VocabTable word_start_;    // pieces that may start a word
  VocabTable continuation_;  // "##x" entries, keyed by "x"
  // One-character pieces below U+10000 by code point ([0] start, [1] continuation), -1 when
  // absent: most Chinese words are one character, and this skips hashing for them.
  std::vector<int32_t> single_char_[2];
  int32_t unk_id_ = -1;
};

}  // namespace rexnlu::text
