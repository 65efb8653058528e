// Helpers for the io tests: where the tiny model is, temporary directories, byte patching,
// and checking that a call throws a rexnlu::Error whose message names the problem.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "rexnlu/error.h"

namespace rexnlu::io {

inline std::filesystem::path tiny_model_dir() { return std::filesystem::path(REXNLU_MODELS_DIR) / "rexuninlu_tiny"; }
inline std::filesystem::path tiny_data_dir() { return std::filesystem::path(REXNLU_TEST_DATA) / "rexuninlu_tiny"; }

std::vector<uint8_t> read_bytes(const std::filesystem::path& p);
void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& bytes);

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Runs `f`, expects a rexnlu::Error of kind kInvalidModel whose message contains every needle.
void expect_error(ErrorKind kind, const std::function<void()>& f, const std::vector<std::string>& needles);
inline void expect_model_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  expect_error(ErrorKind::kInvalidModel, f, needles);
}

}  // namespace rexnlu::io
