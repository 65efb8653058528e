#include "uie/prompt.h"

#include <algorithm>
#include <unordered_map>

#include "rexnlu/error.h"

namespace rexnlu::uie {

SpecialIds SpecialIds::of(const text::Tokenizer& tokenizer) {
  // The Rex family's prompt tokens (models/rex/rex_family.h), added to the vocabulary at load.
  return SpecialIds{tokenizer.cls_id(), tokenizer.sep_id(), tokenizer.token_to_id("[PREFIX]"),
                    tokenizer.token_to_id("[TYPE]")};
}

namespace {
struct PrefixSegment {
  std::vector<int32_t> span;                // [PREFIX] and the prefix string's tokens
  std::vector<std::vector<int32_t>> types;  // each: [TYPE] and the type name's tokens
};
}  // namespace

void fill_positions_and_mask(models::SequenceInput& seq, const SpecialIds& special) {
  const std::vector<int32_t>& ids = seq.ids;
  const int32_t L = seq.length();
  std::vector<PrefixSegment> prefixes;
  std::vector<int32_t> text;
  int32_t last_special = special.cls;
  for (int32_t i = 1; i < L; ++i) {
    const int32_t t = ids[i];
    if (t == special.prefix) {
      prefixes.push_back(PrefixSegment{{i}, {}});
      last_special = t;
    } else if (t == special.type && !prefixes.empty()) {
      prefixes.back().types.push_back({i});
      last_special = t;
    } else if (t == special.sep) {
      text.push_back(i);
      last_special = t;
    } else if (last_special == special.prefix) {
      prefixes.back().span.push_back(i);
    } else if (last_special == special.type) {
      prefixes.back().types.back().push_back(i);
    } else {
      text.push_back(i);  // the original asserts a [SEP] came before; a hint always starts with [PREFIX]
    }
  }

  // Positions, in the same segment order as the original (cls, prefixes with their types, text).
  std::vector<int32_t> pos{0};
  pos.reserve(L);
  int32_t max_pos = 0;
  for (const auto& p : prefixes) {
    const auto lp = static_cast<int32_t>(p.span.size());
    for (int32_t k = 0; k < lp; ++k) pos.push_back(1 + k);
    max_pos = std::max(max_pos, lp);
    for (const auto& type : p.types) {
      const auto lt = static_cast<int32_t>(type.size());
      for (int32_t k = 0; k < lt; ++k) pos.push_back(1 + lp + k);
      max_pos = std::max(max_pos, lp + lt);
    }
  }
  for (size_t k = 0; k < text.size(); ++k) pos.push_back(max_pos + 1 + static_cast<int32_t>(k));
  if (static_cast<int32_t>(pos.size()) != L) throw InternalError("prompt segmentation lost tokens");
  seq.position_ids = std::move(pos);

  seq.mask.assign(static_cast<size_t>(L) * L, 1);
  auto clear = [&](int32_t r0, int32_t r1, int32_t c0, int32_t c1) {  // inclusive ranges
    for (int32_t r = r0; r <= r1; ++r) std::fill_n(seq.mask.begin() + static_cast<size_t>(r) * L + c0, c1 - c0 + 1, 0);
  };
  auto prefix_end = [](const PrefixSegment& p) {
    return p.types.empty() ? p.span.back() : p.types.back().back();
  };
  for (size_t i = 0; i < prefixes.size(); ++i) {
    for (size_t j = 0; j < prefixes.size(); ++j) {
      if (i != j) clear(prefixes[i].span[0], prefix_end(prefixes[i]), prefixes[j].span[0], prefix_end(prefixes[j]));
    }
  }
  for (const auto& p : prefixes) {
    for (size_t a = 0; a < p.types.size(); ++a) {
      for (size_t b = 0; b < p.types.size(); ++b) {
        if (a != b) clear(p.types[a].front(), p.types[a].back(), p.types[b].front(), p.types[b].back());
      }
    }
  }
}

models::SequenceInput make_sequence(std::vector<int32_t> ids, const SpecialIds& special) {
  models::SequenceInput seq;
  seq.ids = std::move(ids);
  fill_positions_and_mask(seq, special);
  return seq;
}

std::vector<int32_t> type_token_indices(const text::Encoding& hint_raw, const HintChunk& chunk) {
  std::unordered_map<int32_t, int32_t> token_at_char;
  for (size_t i = 0; i < hint_raw.offsets.size(); ++i) {
    token_at_char[hint_raw.offsets[i].start] = static_cast<int32_t>(i) + 1;  // +1: [CLS]
  }
  std::vector<int32_t> indices;
  indices.reserve(chunk.slots.size());
  for (const TypeSlot& slot : chunk.slots) {
    auto it = token_at_char.find(slot.char_pos);
    indices.push_back(it == token_at_char.end() ? -1 : it->second);
  }
  return indices;
}

}  // namespace rexnlu::uie
