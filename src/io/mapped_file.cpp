#include "io/mapped_file.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "io/regular_file.h"
#include "rexnlu/error.h"

namespace rexnlu::io {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  const RegularFile file(path, std::numeric_limits<uint64_t>::max(), "a mapped file");
  size_ = static_cast<size_t>(file.size());
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    if (p == MAP_FAILED) throw IoError(path.string() + ": cannot map file: " + std::strerror(errno));
    data_ = static_cast<const std::byte*>(p);
  }
  // the mapping stays valid after the descriptor is closed
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace rexnlu::io
