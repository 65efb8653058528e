#include "io/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "rexnlu/error.h"

namespace rexnlu::io {

namespace {

const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is not a regular file";
}

std::string size_text(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

RegularFile::RegularFile(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. It does not change
  // reads of a regular file.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw IoError(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw IoError(path.string() + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw ModelError(path.string() + ": " + file_type(st.st_mode) + "; only regular files are read");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ > max_bytes) {
    ::close(fd_);
    throw ModelError(path.string() + ": " + std::to_string(size_) + " bytes is too large for " + std::string(what) +
                     " (the limit is " + size_text(max_bytes) + ")");
  }
}

RegularFile::~RegularFile() { ::close(fd_); }

std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what) {
  const RegularFile file(path, max_bytes, what);
  std::string out(file.size(), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(file.fd(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError(path.string() + ": read error: " + std::strerror(errno));
    if (n == 0) break;  // the file shrank while being read
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

void require_model_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  if (status.type() == std::filesystem::file_type::not_found)
    throw ModelError(dir.string() + ": the model directory does not exist");
  if (ec) throw IoError(dir.string() + ": cannot access the model directory: " + ec.message());
  if (status.type() != std::filesystem::file_type::directory)
    throw ModelError(dir.string() + ": is not a directory");
}

}  // namespace rexnlu::io
