#include "text/wordpiece.h"

#include "text/utf8.h"

namespace rexnlu::text {

bool WordPiece::add(std::string_view token, int32_t id) {
  const bool continuation = token.starts_with(kContinuationPrefix);
  const std::string_view piece = continuation ? token.substr(kContinuationPrefix.size()) : token;
  if (!(continuation ? continuation_ : word_start_).insert(piece, id)) return false;
  std::vector<char32_t> cps;
  decode_utf8(piece, cps);
  if (cps.size() == 1 && cps[0] < kDirectLimit) {
    auto& direct = single_char_[continuation ? 1 : 0];
    if (direct.empty()) direct.assign(kDirectLimit, -1);
    direct[cps[0]] = id;
  }
  return true;
}

int32_t WordPiece::find(std::span<const NormChar> word, size_t begin, size_t end, const Scratch& scratch) const {
  const bool continuation = begin > 0;
  if (end - begin == 1 && word[begin].cp < kDirectLimit) {
    const auto& direct = single_char_[continuation ? 1 : 0];
    return direct.empty() ? -1 : direct[word[begin].cp];
  }
  const VocabTable& table = continuation ? continuation_ : word_start_;
  const size_t bytes = scratch.char_byte[end] - scratch.char_byte[begin];
  if (bytes > table.max_key_bytes()) return -1;  // longer than any entry
  return table.find(std::string_view(scratch.utf8).substr(scratch.char_byte[begin], bytes));
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
  if (word.size() == 1 && word[0].cp < kDirectLimit) {  // no UTF-8 needed
    const int32_t id = find(word, 0, 1, scratch);
    if (id < 0) {
      emit_unknown();
    } else {
      out.ids.push_back(id);
      out.offsets.push_back(whole);
      out.type_ids.push_back(0);
    }
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
    int32_t id = -1;
    size_t end = n;
    for (; end > start; --end) {
      id = find(word, start, end, scratch);
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
