// Special tokens matched in the raw text before normalization, case-sensitively and anywhere
// (even inside words), leftmost-longest like HF tokenizers' AddedVocabulary for tokens with
// normalized=false.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rexnlu::text {

class AddedTokens {
 public:
  struct Match {
    int32_t id = -1;
    size_t length = 0;  // in code points
  };

  // `token` must be non-empty; a token added twice keeps its first id.
  void add(std::u32string token, int32_t id);

  // The longest token that starts at text[pos], or {-1, 0}.
  Match match_at(std::span<const char32_t> text, size_t pos) const {
    const char32_t c = text[pos];
    if (c < 128 ? !ascii_first_[c] : !any_non_ascii_first_) return {};
    return longest_match_at(text, pos);
  }

 private:
  Match longest_match_at(std::span<const char32_t> text, size_t pos) const;

  struct Token {
    std::u32string text;
    int32_t id;
  };
  std::vector<Token> tokens_;
  bool ascii_first_[128] = {};  // quick rejection of positions where no token can start
  bool any_non_ascii_first_ = false;
};

}  // namespace rexnlu::text
