// A small, strict reader of the zip archives torch.save writes (torch >= 1.6): stored
// (uncompressed) entries only, zip64 records understood, every central directory entry
// cross-checked against its local header, CRC-32 verified on access. Entries are views into
// the caller's bytes (a memory-mapped file), never copies.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace rexnlu::io {

class ZipReader {
 public:
  // `bytes` must outlive the reader. `name` (the file) prefixes error messages.
  // Throws rexnlu::Error (kInvalidModel) when the archive structure is malformed.
  ZipReader(std::span<const std::byte> bytes, std::string name);

  std::vector<std::string> entry_names() const;  // sorted
  bool contains(const std::string& entry) const { return entries_.count(entry) != 0; }
  // The entry's bytes, after checking their CRC-32. Throws when absent or corrupt.
  std::span<const std::byte> read(const std::string& entry) const;

 private:
  struct Entry {
    uint64_t data_offset;
    uint64_t size;
    uint32_t crc32;
  };
  std::span<const std::byte> bytes_;
  std::string name_;
  std::map<std::string, Entry> entries_;
};

}  // namespace rexnlu::io
