#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "rexnlu/error.h"

namespace rexnlu::io {

namespace {

Error io_failure(const std::filesystem::path& path, const char* what) {
  return IoError(path.string() + ": cannot " + what + ": " + std::strerror(errno));
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_failure(path, "open file");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Error e = io_failure(path, "stat file");
    ::close(fd);
    throw e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(path.string() + ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      Error e = io_failure(path, "map file");
      ::close(fd);
      throw e;
    }
    data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace rexnlu::io
