#include "text/vocab_table.h"

namespace rexnlu::text {

uint64_t VocabTable::hash_of(std::string_view key) {
  // FNV-1a, then a final mix so that the low bits used for the slot index are well spread.
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char ch : key) {
    h ^= static_cast<uint8_t>(ch);
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

void VocabTable::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.id < 0) continue;
    size_t i = s.hash & mask;
    while (slots_[i].id >= 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

bool VocabTable::insert(std::string_view key, int32_t id) {
  if (find(key) >= 0) return false;
  if ((count_ + 1) * 2 > slots_.size()) grow();
  const uint64_t h = hash_of(key);
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  while (slots_[i].id >= 0) i = (i + 1) & mask;
  slots_[i] = Slot{h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), id};
  arena_.append(key);
  ++count_;
  if (key.size() > max_key_bytes_) max_key_bytes_ = key.size();
  return true;
}

int32_t VocabTable::find(std::string_view key) const {
  if (slots_.empty()) return -1;
  const uint64_t h = hash_of(key);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash == h && key_of(s) == key) return s.id;
  }
}

}  // namespace rexnlu::text
