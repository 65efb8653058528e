#include "text/wordpiece.h"

#include "text/utf8.h"

namespace rexnlu::text {

bool WordPiece::add(std::string_view token, int32_t id) {
  if (token.starts_with(kContinuationPrefix)) {
    return continuation_.insert(token.substr(kContinuationPrefix.size()), id);
  }
  return word_start_.insert(token, id);
}

void WordPiece::tokenize(std::span<const NormChar> word, Encoding& out, Scratch& scratch) const {
  if (word.empty()) return;
  const Offset whole{word.front().start, word.back().end};
  auto emit_unknown = [&] {
    out.ids.push_back(unk_id_);
    out.offsets.push_back(whole);
    out.type_ids.push_back(0);
  };
  if (word.size() > kMaxCharsPerWord) {
    emit_unknown();
    return;
  }

  std::string& utf8 = scratch.utf8;
  std::vector<uint32_t>& char_byte = scratch.char_byte;
  utf8.clear();
  char_byte.clear();
  for (const NormChar& nc : word) {
    char_byte.push_back(static_cast<uint32_t>(utf8.size()));
    append_utf8(nc.cp, utf8);
  }
  char_byte.push_back(static_cast<uint32_t>(utf8.size()));

  const size_t first_piece = out.ids.size();
  const size_t n = word.size();
  size_t start = 0;
  while (start < n) {
    const VocabTable& table = start == 0 ? word_start_ : continuation_;
    int32_t id = -1;
    size_t end = n;
    for (; end > start; --end) {
      const size_t bytes = char_byte[end] - char_byte[start];
      if (bytes > table.max_key_bytes()) continue;  // longer than any entry: cannot match
      id = table.find(std::string_view(utf8).substr(char_byte[start], bytes));
      if (id >= 0) break;
    }
    if (id < 0) {  // the word cannot be covered: HF replaces all of it by one [UNK]
      out.ids.resize(first_piece);
      out.offsets.resize(first_piece);
      out.type_ids.resize(first_piece);
      emit_unknown();
      return;
    }
    out.ids.push_back(id);
    out.offsets.push_back({word[start].start, word[end - 1].end});
    out.type_ids.push_back(0);
    start = end;
  }
}

}  // namespace rexnlu::text
