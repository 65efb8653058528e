// HF tokenizers' BertPreTokenizer: split on whitespace (removed), and make every punctuation
// character a piece of its own.
#pragma once

#include <span>

#include "text/char_classes.h"
#include "text/normalizer.h"

namespace rexnlu::text {

// Calls on_word(std::span<const NormChar>) for each piece of `chars`, in order.
template <class OnWord>
void for_each_pre_token(std::span<const NormChar> chars, OnWord&& on_word) {
  size_t begin = 0;
  bool in_word = false;
  for (size_t i = 0; i < chars.size(); ++i) {
    const char32_t c = chars[i].cp;
    const bool space = is_bert_whitespace(c);
    if (space || is_bert_punctuation(c)) {
      if (in_word) on_word(chars.subspan(begin, i - begin));
      in_word = false;
      if (!space) on_word(chars.subspan(i, 1));
    } else if (!in_word) {
      begin = i;
      in_word = true;
    }
  }
  if (in_word) on_word(chars.subspan(begin));
}

}  // namespace rexnlu::text
