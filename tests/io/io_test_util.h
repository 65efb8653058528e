// Helpers for the io tests: where the tiny model is, temporary directories, byte patching,
// and checking that a call throws a rexnlu::Error whose message names the problem.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "rexnlu/error.h"

namespace rexnlu::io {

inline std::filesystem::path tiny_model_dir() { return std::filesystem::path(REXNLU_MODELS_DIR) / "rexuninlu_tiny"; }
inline std::filesystem::path tiny_data_dir() { return std::filesystem::path(REXNLU_TEST_DATA) / "rexuninlu_tiny"; }

std::vector<uint8_t> read_bytes(const std::filesystem::path& p);
void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& bytes);

// Replaces the first occurrence of `pattern` (which must exist) with `replacement`.
void replace_first(std::vector<uint8_t>& bytes, const std::vector<uint8_t>& pattern,
                   const std::vector<uint8_t>& replacement);

// A zip archive of stored entries with CRCs (no data descriptors, no alignment padding).
// `method` is written into every header (0 = stored; 8 lets a test fake a deflated entry).
using ZipEntries = std::vector<std::pair<std::string, std::vector<uint8_t>>>;
std::vector<uint8_t> make_zip(const ZipEntries& entries, uint16_t method = 0);
// The entries of an existing zip file, read with our ZipReader.
ZipEntries read_zip_entries(const std::filesystem::path& p);
std::vector<uint8_t>& entry(ZipEntries& entries, const std::string& name_suffix);

// Writes pickle opcodes the way torch.save does, for crafting test checkpoints.
class PickleBuilder {
 public:
  PickleBuilder& op(uint8_t opcode) { bytes.push_back(opcode); return *this; }
  PickleBuilder& proto() { return op(0x80).op(2); }
  PickleBuilder& mark() { return op('('); }
  PickleBuilder& str(const std::string& s);
  PickleBuilder& integer(int64_t v);
  PickleBuilder& global(const std::string& module, const std::string& name);
  PickleBuilder& int_tuple(const std::vector<int64_t>& v);
  // key -> _rebuild_tensor_v2(storage(storage_type, key, numel), offset, size, stride, False, OrderedDict())
  PickleBuilder& tensor_item(const std::string& name, const std::string& storage_type, const std::string& key,
                             int64_t storage_numel, int64_t offset, const std::vector<int64_t>& size,
                             const std::vector<int64_t>& stride);
  std::vector<uint8_t> bytes;
};

struct FakeTensor {
  std::string name;
  std::string storage_type;  // "FloatStorage", "LongStorage"...
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};
// A torch.save-like zip checkpoint {name: tensor} with one storage per tensor.
std::vector<uint8_t> make_torch_zip(const std::vector<FakeTensor>& tensors);
// Only the data.pkl of such a checkpoint.
std::vector<uint8_t> torch_state_dict_pickle(const std::vector<FakeTensor>& tensors);

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
