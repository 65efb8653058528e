// A model directory that is not what it should be: every file must be refused quickly with a
// message naming it (no blocking on a FIFO, no reading /dev/zero, no sizing by absurd config
// values), and weights that cannot give answers are refused (NaN, Inf) or warned about (zeros).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <limits>

#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "rexnlu/engine.h"

namespace rexnlu::io {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The tiny model's files (safetensors weights) copied into `dir`.
void copy_tiny_model(const fs::path& dir) {
  for (const char* name : {"config.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
                           "model.safetensors"})
    fs::copy_file(tiny_model_dir() / name, dir / name);
}

// Engine::load must fail within a few seconds with an error of `kind` naming every needle.
void expect_load_error(const fs::path& dir, ErrorKind kind, const std::vector<std::string>& needles) {
  const auto start = Clock::now();
  expect_error(kind, [&] { Engine::load(dir); }, needles);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST(ModelFiles, MissingModelDirectoryIsNamedAsSuch) {
  TempDir tmp;
  expect_load_error(tmp / "no-such-model", ErrorKind::kInvalidModel, {"no-such-model", "model directory does not exist"});
  copy_tiny_model(tmp.path());
  expect_load_error(tmp / "config.json", ErrorKind::kInvalidModel, {"config.json", "is not a directory"});
}

TEST(ModelFiles, DirectoryInsteadOfAFileIsNamed) {
  for (const char* name : {"config.json", "vocab.txt", "tokenizer_config.json", "model.safetensors"}) {
    SCOPED_TRACE(name);
    TempDir tmp;
    copy_tiny_model(tmp.path());
    fs::remove(tmp / name);
    fs::create_directory(tmp / name);
    expect_load_error(tmp.path(), ErrorKind::kInvalidModel, {name, "is a directory"});
  }
}

// Opening a FIFO for reading used to wait forever for a writer. If the loader does block, the test
// writes to the FIFO itself so that it fails instead of hanging.
TEST(ModelFiles, FifoIsRefusedWithoutBlocking) {
  for (const char* name : {"config.json", "vocab.txt", "special_tokens_map.json", "model.safetensors"}) {
    SCOPED_TRACE(name);
    TempDir tmp;
    copy_tiny_model(tmp.path());
    fs::remove(tmp / name);
    ASSERT_EQ(::mkfifo((tmp / name).c_str(), 0600), 0) << std::strerror(errno);
    auto done = std::async(std::launch::async, [&] {
      expect_error(ErrorKind::kInvalidModel, [&] { Engine::load(tmp.path()); }, {name, "FIFO"});
    });
    if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      ADD_FAILURE() << "loading blocked on the FIFO " << name;
      const int fd = ::open((tmp / name).c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) ::close(fd);  // the reader sees end of file and goes on
    }
    done.wait();
  }
}

// /dev/zero never ends: reading it whole ran into bad_alloc after 15-30 s.
TEST(ModelFiles, DeviceFilesAreRefusedQuickly) {
  for (const char* name : {"config.json", "vocab.txt", "tokenizer_config.json", "model.safetensors"}) {
    SCOPED_TRACE(name);
    TempDir tmp;
    copy_tiny_model(tmp.path());
    fs::remove(tmp / name);
    fs::create_symlink("/dev/zero", tmp / name);
    expect_load_error(tmp.path(), ErrorKind::kInvalidModel, {name, "character device"});
  }
}

TEST(ModelFiles, OversizedFilesAreRefusedBeforeReading) {
  TempDir tmp;
  copy_tiny_model(tmp.path());
  fs::resize_file(tmp / "config.json", (uint64_t{1} << 20) + 1);  // sparse: no disk used
  expect_load_error(tmp.path(), ErrorKind::kInvalidModel,
                    {"config.json", "1048577 bytes is too large for a model config", "1 MiB"});
  // config.json back to its size: Engine::load reads it first (to pick the model family).
  const auto config = read_bytes(tiny_model_dir() / "config.json");
  write_bytes(tmp / "config.json", config);
  fs::resize_file(tmp / "vocab.txt", (uint64_t{64} << 20) + 1);
  expect_load_error(tmp.path(), ErrorKind::kInvalidModel, {"vocab.txt", "too large", "64 MiB"});
}

// The registry reads config.json first to pick the model family; a deeply nested model_type once
// reached its error message (dump(): recursion as deep as the input). Refused before parsing.
TEST(ModelFiles, DeeplyNestedConfigIsRefusedByTheRegistry) {
  TempDir tmp;
  copy_tiny_model(tmp.path());
  const std::string text = "{\"model_type\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  write_bytes(tmp / "config.json", std::vector<uint8_t>(text.begin(), text.end()));
  expect_load_error(tmp.path(), ErrorKind::kInvalidModel, {"config.json", "not valid JSON", "nested deeper than the limit of 64"});
}

// num_hidden_layers 1e9 ran 15-30 s into bad_alloc (a tensor list sized by it).
TEST(ModelFiles, AbsurdConfigValueIsRefusedQuickly) {
  TempDir tmp;
  copy_tiny_model(tmp.path());
  const auto bytes = read_bytes(tmp / "config.json");
  nlohmann::json config = nlohmann::json::parse(bytes.begin(), bytes.end());
  config["num_hidden_layers"] = 1000000000;
  const std::string text = config.dump();
  write_bytes(tmp / "config.json", std::vector<uint8_t>(text.begin(), text.end()));
  expect_load_error(tmp.path(), ErrorKind::kInvalidModel, {"num_hidden_layers", "found 1000000000", "at most 256"});
}

// The byte range of tensor `name` in a safetensors file.
std::pair<size_t, size_t> tensor_bytes(const std::vector<uint8_t>& file, const std::string& name) {
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file[static_cast<size_t>(i)];
  const auto header = nlohmann::json::parse(file.begin() + 8, file.begin() + 8 + static_cast<std::ptrdiff_t>(header_len));
  const auto& offsets = header.at(name).at("data_offsets");
  return {8 + header_len + offsets[0].get<size_t>(), 8 + header_len + offsets[1].get<size_t>()};
}

void set_floats(std::vector<uint8_t>& file, const std::string& name, float value, bool all) {
  const auto [begin, end] = tensor_bytes(file, name);
  for (size_t at = begin; at < (all ? end : begin + 4); at += 4) std::memcpy(&file[at], &value, 4);
}

const char* const kWeight = "plm.encoder.layer.1.attention.self.query_proj.weight";

TEST(ModelFiles, NonFiniteWeightsAreRefused) {
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
    SCOPED_TRACE(bad);
    TempDir tmp;
    copy_tiny_model(tmp.path());
    auto file = read_bytes(tmp / "model.safetensors");
    set_floats(file, kWeight, bad, false);
    write_bytes(tmp / "model.safetensors", file);
    expect_load_error(tmp.path(), ErrorKind::kInvalidModel,
                      {kWeight, std::isnan(bad) ? "NaN" : bad > 0 ? "+Inf" : "-Inf", "at element 0"});
  }
}

TEST(ModelFiles, AllZeroWeightsLoadWithAWarning) {
  TempDir tmp;
  copy_tiny_model(tmp.path());
  auto file = read_bytes(tmp / "model.safetensors");
  set_floats(file, kWeight, 0.0f, true);
  set_floats(file, "plm.encoder.layer.1.attention.self.query_proj.bias", 0.0f, true);  // biases may be 0
  write_bytes(tmp / "model.safetensors", file);
  const Engine engine = Engine::load(tmp.path());
  ASSERT_EQ(engine.load_warnings().size(), 1u);
  const std::string& w = engine.load_warnings()[0];
  EXPECT_NE(w.find("1 weight tensor(s) hold only zeros"), std::string::npos) << w;
  EXPECT_NE(w.find(kWeight), std::string::npos) << w;
  EXPECT_EQ(w.find(".bias"), std::string::npos) << w;
  EXPECT_TRUE(Engine::load(tiny_model_dir()).load_warnings().empty());
}

}  // namespace
}  // namespace rexnlu::io
