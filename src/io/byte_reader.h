// Bounds-checked little-endian reading from a byte span, shared by the binary format readers.
// Every read that would run past the end throws rexnlu::Error (kInvalidModel) saying what was
// being read and at which offset, so a truncated file gives a message, never an overread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "rexnlu/error.h"

namespace rexnlu::io {

class ByteReader {
 public:
  // `context` prefixes messages, e.g. "model.bin: data.pkl".
  ByteReader(std::span<const std::byte> bytes, std::string context, uint64_t pos = 0)
      : bytes_(bytes), context_(std::move(context)), pos_(pos) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return pos_ <= bytes_.size() ? bytes_.size() - pos_ : 0; }
  bool at_end() const { return pos_ >= bytes_.size(); }
  void seek(uint64_t pos, std::string_view what) {
    if (pos > bytes_.size())
      throw ModelError(context_ + ": " + std::string(what) + " at offset " + std::to_string(pos) +
                       " is past the end (" + std::to_string(bytes_.size()) + " bytes)");
    pos_ = pos;
  }

  // The next n bytes, as a view; advances.
  std::span<const std::byte> bytes(uint64_t n, std::string_view what) {
    if (n > remaining())
      throw ModelError(context_ + ": truncated: " + std::string(what) + " at offset " + std::to_string(pos_) +
                       " needs " + std::to_string(n) + " bytes, only " + std::to_string(remaining()) + " left");
    auto out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  std::string_view chars(uint64_t n, std::string_view what) {
    auto b = bytes(n, what);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  uint64_t uint(int nbytes, std::string_view what) {  // little-endian, nbytes <= 8
    auto b = bytes(static_cast<uint64_t>(nbytes), what);
    uint64_t v = 0;
    for (int i = nbytes - 1; i >= 0; --i) v = (v << 8) | std::to_integer<uint64_t>(b[static_cast<size_t>(i)]);
    return v;
  }
  uint8_t u8(std::string_view what) { return static_cast<uint8_t>(uint(1, what)); }
  uint16_t u16(std::string_view what) { return static_cast<uint16_t>(uint(2, what)); }
  uint32_t u32(std::string_view what) { return static_cast<uint32_t>(uint(4, what)); }
  uint64_t u64(std::string_view what) { return uint(8, what); }

  const std::string& context() const { return context_; }

 private:
  std::span<const std::byte> bytes_;
  std::string context_;
  uint64_t pos_;
};

}  // namespace rexnlu::io
