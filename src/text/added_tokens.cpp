#include "text/added_tokens.h"

#include <algorithm>

namespace rexnlu::text {

void AddedTokens::add(std::u32string token, int32_t id) {
  if (token.empty()) return;
  for (const Token& t : tokens_) {
    if (t.text == token) return;
  }
  const char32_t first = token.front();
  if (first < 128) {
    ascii_first_[first] = true;
  } else {
    any_non_ascii_first_ = true;
  }
  tokens_.push_back({std::move(token), id});
}

AddedTokens::Match AddedTokens::longest_match_at(std::span<const char32_t> text, size_t pos) const {
  Match best;
  const size_t left = text.size() - pos;
  for (const Token& t : tokens_) {
    if (t.text.size() <= best.length || t.text.size() > left) continue;
    if (std::equal(t.text.begin(), t.text.end(), text.begin() + static_cast<ptrdiff_t>(pos))) {
      best = {t.id, t.text.size()};
    }
  }
  return best;
}

}  // namespace rexnlu::text
