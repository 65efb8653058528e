#include <gtest/gtest.h>

#include "io/zip_reader.h"
#include "io_test_util.h"

namespace rexnlu::io {
namespace {

std::span<const std::byte> span_of(const std::vector<uint8_t>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size()};
}

std::vector<uint8_t> tiny_zip() { return read_bytes(tiny_model_dir() / "pytorch_model.bin"); }

void expect_zip_error(const std::vector<uint8_t>& bytes, const std::vector<std::string>& needles) {
  expect_model_error([&] { ZipReader(span_of(bytes), "test.zip"); }, needles);
}

void put32(std::vector<uint8_t>& b, size_t pos, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[pos + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

TEST(ZipReader, ReadsTorchArchive) {
  const auto bytes = tiny_zip();
  ZipReader zip(span_of(bytes), "test.zip");
  EXPECT_TRUE(zip.contains("pytorch_model/data.pkl"));
  EXPECT_TRUE(zip.contains("pytorch_model/data/46"));
  const auto order = zip.read("pytorch_model/byteorder");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(order.data()), order.size()), "little");
  // torch aligns entry data to 64 bytes.
  EXPECT_EQ((zip.read("pytorch_model/data/0").data() - span_of(bytes).data()) % 64, 0);
  expect_model_error([&] { zip.read("pytorch_model/nope"); }, {"'pytorch_model/nope' not found"});
}

// Robustness: every cut in the central directory region and a sample of the rest is an error.
TEST(ZipReader, EveryTruncationIsAnError) {
  const auto bytes = tiny_zip();
  for (size_t cut = 0; cut < bytes.size(); cut += cut + 4000 < bytes.size() ? 997 : 1) {
    try {
      ZipReader(span_of(bytes).first(cut), "test.zip");
      ADD_FAILURE() << "prefix of " << cut << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << cut << ": " << e.what();
    }
  }
}

TEST(ZipReader, InconsistentHeadersAreReported) {
  const auto good = tiny_zip();
  const size_t eocd = good.size() - 22;
  auto b = good;
  b[30] = 'q';  // first byte of the first local header's name
  expect_zip_error(b, {"'pytorch_model/data.pkl'", "local header names it 'qytorch_model/data.pkl'"});
  b = good;
  b[eocd + 8] ^= 1;  // entries on disk and total entries of the classic end record
  b[eocd + 10] ^= 1;
  expect_zip_error(b, {"disagree"});
  b = good;
  put32(b, eocd - 20 - 56 + 48, 0x7fffffff);  // zip64 central directory offset...
  put32(b, eocd + 16, 0xffffffff);           // ...with the classic record deferring to it
  expect_zip_error(b, {"out of range"});
  b = good;
  b[64 + 5104 + 4] ^= 1;  // CRC in the data descriptor after data.pkl
  expect_zip_error(b, {"'pytorch_model/data.pkl'", "data descriptor CRC"});
  b = good;
  b[0] = 'X';  // local header signature
  expect_zip_error(b, {"bad local header signature"});
}

TEST(ZipReader, DuplicateAndCompressedEntriesAreRejected) {
  const std::vector<uint8_t> data = {1, 2, 3};
  expect_zip_error(make_zip({{"a/x", data}, {"a/x", data}}), {"duplicate zip entry 'a/x'"});
  expect_zip_error(make_zip({{"a/x", data}}, 8), {"'a/x'", "compression method 8"});
  const auto ok = make_zip({{"a/x", data}});
  ZipReader zip(span_of(ok), "test.zip");
  EXPECT_EQ(zip.read("a/x").size(), 3u);
}

}  // namespace
}  // namespace rexnlu::io
