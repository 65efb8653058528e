#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "io/pytorch_checkpoint.h"
#include "io/safetensors.h"
#include "io_test_util.h"

namespace rexnlu::io {
namespace {

// The four files of the tiny model were written by torch / safetensors from the same tensors:
// every reader must give the same names, dtypes, shapes and bit-identical bytes.
void expect_same_tensors(const TensorStore& a, const TensorStore& b) {
  ASSERT_EQ(a.names(), b.names()) << a.source() << " vs " << b.source();
  for (const auto& name : a.names()) {
    const TensorView& x = a.at(name);
    const TensorView& y = b.at(name);
    EXPECT_EQ(x.dtype, y.dtype) << name;
    ASSERT_EQ(x.shape, y.shape) << name;
    EXPECT_EQ(std::memcmp(x.data, y.data, x.nbytes()), 0) << name << " differs";
  }
}

TEST(PytorchCheckpoint, AllFormatsGiveIdenticalTensors) {
  TensorStore st = load_safetensors(tiny_model_dir() / "model.safetensors");
  ASSERT_EQ(st.size(), 47u);
  for (const auto& p : {tiny_model_dir() / "pytorch_model.bin",
                        tiny_data_dir() / "bin_variants" / "pytorch_model_ordereddict.bin",
                        tiny_data_dir() / "bin_variants" / "pytorch_model_legacy.bin"}) {
    SCOPED_TRACE(p.string());
    TensorStore bin = load_pytorch_bin(p);
    expect_same_tensors(st, bin);
  }
}

std::filesystem::path zip_bin() { return tiny_model_dir() / "pytorch_model.bin"; }
std::filesystem::path legacy_bin() { return tiny_data_dir() / "bin_variants" / "pytorch_model_legacy.bin"; }

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

void expect_bin_error(const std::vector<uint8_t>& bytes, const std::vector<std::string>& needles) {
  TempDir dir;
  write_bytes(dir / "pytorch_model.bin", bytes);
  expect_model_error([&] { load_pytorch_bin(dir / "pytorch_model.bin"); }, needles);
}

// The tiny zip checkpoint re-zipped by our test writer after `edit` changed its entries.
std::vector<uint8_t> rezipped(const std::function<void(ZipEntries&)>& edit) {
  ZipEntries entries = read_zip_entries(zip_bin());
  edit(entries);
  return make_zip(entries);
}

TEST(PytorchCheckpoint, RezippedUnalignedCopyStillLoads) {
  // Our writer does not pad entries to 64 bytes: the reader must copy misaligned storages.
  TempDir dir;
  write_bytes(dir / "pytorch_model.bin", rezipped([](ZipEntries&) {}));
  expect_same_tensors(load_pytorch_bin(zip_bin()), load_pytorch_bin(dir / "pytorch_model.bin"));
}

TEST(PytorchCheckpoint, TruncatedZipIsReported) {
  const auto good = read_bytes(zip_bin());
  expect_bin_error({}, {"not a torch.save checkpoint"});
  for (size_t cut : {size_t{10}, size_t{100}, size_t{5000}, good.size() / 2, good.size() - 300, good.size() - 100,
                     good.size() - 30, good.size() - 1}) {
    SCOPED_TRACE(cut);
    expect_bin_error(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut)),
                     {"pytorch_model.bin", "truncated"});
  }
}

TEST(PytorchCheckpoint, TruncatedLegacyIsReported) {
  const auto good = read_bytes(legacy_bin());
  for (size_t cut : {size_t{5}, size_t{20}, size_t{100}, size_t{1000}, size_t{5797}, size_t{6000}, size_t{6560},
                     good.size() / 2, good.size() - 1}) {
    SCOPED_TRACE(cut);
    expect_bin_error(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut)),
                     {"pytorch_model.bin", "truncated"});
  }
}

TEST(PytorchCheckpoint, WrongMagicIsReported) {
  auto zip = read_bytes(zip_bin());
  zip[0] = 'X';
  expect_bin_error(zip, {"not a torch.save checkpoint"});
  auto legacy = read_bytes(legacy_bin());
  legacy[5] ^= 0x01;  // inside the 10-byte magic number
  expect_bin_error(legacy, {"wrong magic number"});
  legacy = read_bytes(legacy_bin());
  legacy.push_back(0);
  expect_bin_error(legacy, {"1 unexpected bytes after the last storage"});
}

TEST(PytorchCheckpoint, CorruptZipEntryFailsItsCrc) {
  auto bytes = read_bytes(zip_bin());
  bytes[6000] ^= 0x20;  // inside pytorch_model/data/0 (the word embeddings), stored at 5632
  expect_bin_error(bytes, {"'pytorch_model/data/0' is corrupt", "CRC-32"});
  bytes = read_bytes(zip_bin());
  bytes[100] ^= 0x01;  // inside data.pkl, stored at 64
  expect_bin_error(bytes, {"'pytorch_model/data.pkl' is corrupt", "CRC-32"});
}

TEST(PytorchCheckpoint, CompressedEntriesAreRejected) {
  expect_bin_error(make_zip(read_zip_entries(zip_bin()), 8), {"compression method 8 (deflate)", "stored"});
}

TEST(PytorchCheckpoint, PickleProblemsAreReported) {
  // An opcode torch.save never writes for a state dict (NEWOBJ in place of EMPTY_DICT).
  expect_bin_error(rezipped([](ZipEntries& e) { replace_first(entry(e, "/data.pkl"), {0x80, 0x02, '}'}, {0x80, 0x02, 0x81}); }),
                   {"pytorch_model/data.pkl", "byte 2", "unsupported pickle opcode 0x81 (NEWOBJ)"});
  // A global outside the allowlist.
  expect_bin_error(rezipped([](ZipEntries& e) {
                     replace_first(entry(e, "/data.pkl"), bytes_of("ccollections\nOrderedDict\n"), bytes_of("cos\nsystem\n"));
                   }),
                   {"forbidden global 'os.system'"});
  // Bytes after STOP.
  expect_bin_error(rezipped([](ZipEntries& e) { entry(e, "/data.pkl").push_back('N'); }), {"1 bytes after STOP"});
}

TEST(PytorchCheckpoint, TensorLayoutProblemsAreReported) {
  // The word embeddings [12804, 64] with stride (1, 64) instead of (64, 1).
  expect_bin_error(rezipped([](ZipEntries& e) {
                     replace_first(entry(e, "/data.pkl"), {'K', 64, 'K', 1, 0x86}, {'K', 1, 'K', 64, 0x86});
                   }),
                   {"'plm.embeddings.word_embeddings.weight'", "stride [1, 64]", "not contiguous"});
  // Storage offset 5 + 819456 elements in a storage of 819456.
  expect_bin_error(rezipped([](ZipEntries& e) { replace_first(entry(e, "/data.pkl"), {'Q', 'K', 0}, {'Q', 'K', 5}); }),
                   {"'plm.embeddings.word_embeddings.weight'", "storage offset 5 + 819456", "out of range"});
  // A storage entry shorter than the persistent id says.
  expect_bin_error(rezipped([](ZipEntries& e) { entry(e, "/data/1").resize(252); }),
                   {"'pytorch_model/data/1' has 252 bytes", "needs 256"});
  expect_bin_error(rezipped([](ZipEntries& e) {
                     e.erase(std::find_if(e.begin(), e.end(), [](const auto& x) { return x.first == "pytorch_model/data/1"; }));
                   }),
                   {"storage '1'", "no zip entry"});
  expect_bin_error(rezipped([](ZipEntries& e) { entry(e, "/byteorder") = bytes_of("big"); }), {"little-endian"});
}

TEST(PytorchCheckpoint, EmptyTensorWithHugeDimsLoadsWithoutOverflow) {
  PickleBuilder p;
  p.proto().op('}').mark();
  p.tensor_item("empty", "FloatStorage", "0", 0, 0, {0, int64_t{1} << 62, int64_t{1} << 62}, {7, 1, 1});
  p.op('u').op('.');
  TempDir dir;
  write_bytes(dir / "pytorch_model.bin", make_zip({{"a/data.pkl", p.bytes}, {"a/data/0", {}}}));
  TensorStore store = load_pytorch_bin(dir / "pytorch_model.bin");
  EXPECT_EQ(store.at("empty").numel(), 0);
  // The same dims in another order overflow int64 and are rejected.
  PickleBuilder q;
  q.proto().op('}').mark();
  q.tensor_item("huge", "FloatStorage", "0", 0, 0, {int64_t{1} << 62, int64_t{1} << 62, 0}, {1, 1, 1});
  q.op('u').op('.');
  expect_bin_error(make_zip({{"a/data.pkl", q.bytes}, {"a/data/0", {}}}), {"'huge'", "invalid size"});
}

}  // namespace
}  // namespace rexnlu::io
