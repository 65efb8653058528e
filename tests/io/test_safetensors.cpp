#include <gtest/gtest.h>

#include <cmath>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "io_test_util.h"
#include "rexnlu/error.h"

namespace rexnlu::io {
namespace {

TEST(Safetensors, LoadsTinyModel) {
  TensorStore store = load_safetensors(tiny_model_dir() / "model.safetensors");
  EXPECT_EQ(store.size(), 47u);
  const TensorView& emb = store.at("plm.embeddings.word_embeddings.weight");
  EXPECT_EQ(emb.dtype, DType::kF32);
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{12804, 64}));
  EXPECT_EQ(store.at("plm.encoder.conv.conv.weight").shape, (std::vector<int64_t>{64, 64, 3}));
  // rotary_emb.freqs = 1 / 10000^(2m / 64), computed by torch in float32 (spec section 2).
  const TensorView& freqs = store.at("rotary_emb.freqs");
  ASSERT_EQ(freqs.shape, (std::vector<int64_t>{32}));
  for (int m = 0; m < 32; ++m)
    EXPECT_NEAR(freqs.f32()[m], 1.0 / std::pow(10000.0, 2.0 * m / 64.0), 1e-6) << m;
}

TEST(Checkpoint, PrefersSafetensors) {
  TensorStore store = load_checkpoint(tiny_model_dir());
  EXPECT_EQ(store.source().filename(), "model.safetensors");
}

TEST(Checkpoint, MissingWeightsNameTheDirectoryAndFiles) {
  TempDir dir;
  expect_model_error([&] { load_checkpoint(dir.path()); },
                     {dir.path().string(), "model.safetensors", "pytorch_model.bin"});
}

// A safetensors file from a header text and a data section.
std::vector<uint8_t> make_safetensors(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void expect_safetensors_error(const std::vector<uint8_t>& bytes, const std::vector<std::string>& needles) {
  TempDir dir;
  write_bytes(dir / "model.safetensors", bytes);
  expect_model_error([&] { load_safetensors(dir / "model.safetensors"); }, needles);
}

TEST(Safetensors, MetadataIsIgnoredAndMisalignedDataIsCopied) {
  // A 3-byte header padding leaves the F32 data at an odd file offset.
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("n":{"dtype":"I64","shape":[],"data_offsets":[8,16]}} )";
  std::vector<uint8_t> data = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 7, 0, 0, 0, 0, 0, 0, 0};
  TempDir dir;
  write_bytes(dir / "model.safetensors", make_safetensors(header, data));
  TensorStore store = load_safetensors(dir / "model.safetensors");
  ASSERT_EQ(store.names(), (std::vector<std::string>{"n", "x"}));
  const TensorView& x = store.at("x");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(x.data) % 4, 0u);
  EXPECT_EQ(x.f32()[0], 1.0f);
  EXPECT_EQ(x.f32()[1], 2.0f);
  EXPECT_EQ(store.at("n").shape, std::vector<int64_t>{});
  EXPECT_EQ(*reinterpret_cast<const int64_t*>(store.at("n").data), 7);
}

// Checkpoints stored in 16 bits load as F32: every F16 / BF16 value widens exactly (subnormals,
// infinities and the largest half included), and the store still says what the file held.
TEST(Safetensors, SixteenBitTensorsAreWidenedToF32) {
  const std::string header =
      R"({"h":{"dtype":"F16","shape":[6],"data_offsets":[0,12]},)"
      R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[12,18]},"f":{"dtype":"F32","shape":[1],"data_offsets":[20,24]}})";
  const std::vector<uint16_t> halves = {0x3c00, 0xc000, 0x0001, 0x7c00, 0x3555, 0x7bff, 0x3f80, 0xc0a0, 0x0001, 0};
  std::vector<uint8_t> data;
  for (uint16_t h : halves) data.insert(data.end(), {static_cast<uint8_t>(h & 0xff), static_cast<uint8_t>(h >> 8)});
  data.insert(data.end(), {0, 0, 0x40, 0x40});  // F32 3.0
  TempDir dir;
  write_bytes(dir / "model.safetensors", make_safetensors(header, data));
  TensorStore store = load_safetensors(dir / "model.safetensors");
  const TensorView& h = store.at("h");
  ASSERT_EQ(h.dtype, DType::kF32);
  EXPECT_EQ(h.nbytes(), 24u);
  EXPECT_EQ(h.f32()[0], 1.0f);
  EXPECT_EQ(h.f32()[1], -2.0f);
  EXPECT_EQ(h.f32()[2], std::ldexp(1.0f, -24));  // the smallest subnormal half
  EXPECT_TRUE(std::isinf(h.f32()[3]) && h.f32()[3] > 0);
  EXPECT_EQ(h.f32()[4], 0.333251953125f);
  EXPECT_EQ(h.f32()[5], 65504.0f);
  const TensorView& b = store.at("b");
  ASSERT_EQ(b.dtype, DType::kF32);
  EXPECT_EQ(b.f32()[0], 1.0f);
  EXPECT_EQ(b.f32()[1], -5.0f);
  EXPECT_EQ(b.f32()[2], std::ldexp(1.0f, -133));  // a float subnormal
  EXPECT_EQ(store.at("f").f32()[0], 3.0f);
  EXPECT_EQ(store.stored_dtype("h"), DType::kF16);
  EXPECT_EQ(store.stored_dtype("b"), DType::kBF16);
  EXPECT_EQ(store.stored_dtype("f"), DType::kF32);
}

TEST(Safetensors, TruncatedFileIsReported) {
  const auto good = read_bytes(tiny_model_dir() / "model.safetensors");
  for (size_t cut : {size_t{0}, size_t{5}, size_t{8}, size_t{100}, size_t{4952}, size_t{5000}, good.size() / 2,
                     good.size() - 1}) {
    SCOPED_TRACE(cut);
    expect_safetensors_error(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut)),
                             {"model.safetensors", "truncated"});
  }
}

TEST(Safetensors, BadHeadersAreReported) {
  const std::vector<uint8_t> data(16);
  expect_safetensors_error(make_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                            R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                            data),
                           {"'a' [0, 8]", "'b' [4, 12]", "overlapping"});
  expect_safetensors_error(make_safetensors(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})", data),
                           {"'a'", "[8, 24]", "out of range"});
  expect_safetensors_error(make_safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data),
                           {"'a'", "needs 12"});
  expect_safetensors_error(
      make_safetensors(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", data),
      {"'a'", "too large"});
  expect_safetensors_error(make_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data),
                           {"'a'", "begin > end"});
  expect_safetensors_error(make_safetensors(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", data),
                           {"'a'", "unsupported dtype 'Q4'"});
  expect_safetensors_error(make_safetensors(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data),
                           {"'a'", "shape"});
  expect_safetensors_error(make_safetensors(R"({"a":{"dtype":"F32","shape":[2]}})", data), {"'a'", "data_offsets"});
  expect_safetensors_error(make_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", data),
                           {"not valid JSON"});
  expect_safetensors_error(make_safetensors("[]", data), {"not a JSON object"});
  // A shape nested 100,000 deep crashed the loader (stack overflow quoting it in the message).
  expect_safetensors_error(make_safetensors(R"({"a":{"dtype":"F32","shape":)" + std::string(100000, '[') + "2" +
                                                std::string(100000, ']') + R"(,"data_offsets":[0,8]}})",
                                            data),
                           {"model.safetensors", "nested deeper than the limit of 64"});
  std::vector<uint8_t> huge = make_safetensors("{}", data);
  huge[7] = 0x10;  // header length ~1e18
  expect_safetensors_error(huge, {"header length"});
}

}  // namespace
}  // namespace rexnlu::io
