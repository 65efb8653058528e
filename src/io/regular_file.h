// Opening the files of a model directory safely: only regular files are read (a FIFO cannot stall
// the loader, /dev/zero cannot fill memory, a directory is named as such), each with a size limit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace rexnlu::io {

// Size limits of the files read whole into memory (docs/options.md, "Model files").
inline constexpr uint64_t kMaxConfigBytes = uint64_t{1} << 20;            // config.json
inline constexpr uint64_t kMaxTokenizerJsonBytes = uint64_t{16} << 20;    // tokenizer_config.json, special_tokens_map.json
inline constexpr uint64_t kMaxVocabBytes = uint64_t{64} << 20;            // vocab.txt

// An open, read-only descriptor of a regular file (closed on destruction).
class RegularFile {
 public:
  // Opens `path` without blocking and checks that it is a regular file of at most `max_bytes`.
  // Throws rexnlu::Error naming the path: kIo when it cannot be opened (missing, no permission),
  // kInvalidModel when it is a directory, FIFO, device or socket, or larger than `max_bytes`
  // (`what` names the file's role in that message, e.g. "a model config").
  RegularFile(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole content of a regular file of at most `max_bytes` (see RegularFile).
std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what);

// Throws rexnlu::Error (kInvalidModel) when `dir` does not exist or is not a directory, so a
// mistyped --model is reported as such rather than as its first missing file.
void require_model_dir(const std::filesystem::path& dir);

}  // namespace rexnlu::io
