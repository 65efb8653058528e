// A whole file mapped read-only into memory (RAII). Checkpoint readers hand out tensor views
// that point straight into the mapping, so loading a model copies no weight bytes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace rexnlu::io {

class MappedFile {
 public:
  // Throws rexnlu::Error naming the file when it cannot be opened or mapped (kIo) or is not a
  // regular file (kInvalidModel; see RegularFile).
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }  // nullptr for an empty file
  size_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rexnlu::io
