// String -> id table for vocabulary lookups: open addressing over one contiguous key arena,
// looked up with string_views (no allocation per lookup), copyable as a value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rexnlu::text {

class VocabTable {
 public:
  // Returns false (and changes nothing) when the key is already present.
  bool insert(std::string_view key, int32_t id);
  // -1 when absent.
  int32_t find(std::string_view key) const;

  size_t size() const { return count_; }
  size_t max_key_bytes() const { return max_key_bytes_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t length = 0;
    int32_t id = -1;  // -1: empty slot
  };
  static uint64_t hash_of(std::string_view key);
  std::string_view key_of(const Slot& s) const { return {arena_.data() + s.offset, s.length}; }
  void grow();

  std::string arena_;
  std::vector<Slot> slots_;  // size is a power of two, at most half full
  size_t count_ = 0;
  size_t max_key_bytes_ = 0;
};

}  // namespace rexnlu::text
