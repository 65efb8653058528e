#include "io_test_util.h"

#include <atomic>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace rexnlu::io {

std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("rexnlu_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void expect_error(ErrorKind kind, const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
    for (const auto& needle : needles)
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "message does not mention '" << needle << "': " << e.what();
    return;
  }
  ADD_FAILURE() << "no rexnlu::Error thrown";
}

}  // namespace rexnlu::io
