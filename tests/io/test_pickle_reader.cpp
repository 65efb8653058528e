#include <gtest/gtest.h>

#include "io/pickle_reader.h"
#include "io_test_util.h"

namespace rexnlu::io {
namespace {

std::span<const std::byte> span_of(const std::vector<uint8_t>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size()};
}

void expect_pickle_error(const std::vector<uint8_t>& bytes, const std::vector<std::string>& needles) {
  expect_model_error([&] { PickleReader("test.pkl").read(span_of(bytes)); }, needles);
}

std::vector<uint8_t> tiny_data_pkl(const std::filesystem::path& zip) {
  ZipEntries entries = read_zip_entries(zip);
  return entry(entries, "/data.pkl");
}

TEST(PickleReader, ReadsATensorDict) {
  PickleBuilder p;
  p.proto().op('}').mark().tensor_item("w", "HalfStorage", "7", 12, 2, {2, 5}, {5, 1}).op('u').op('.');
  PickleReader reader("test.pkl");
  const PickleValue* root = reader.read(span_of(p.bytes));
  ASSERT_EQ(root->kind, PickleValue::Kind::kDict);
  ASSERT_EQ(root->items.size(), 2u);
  EXPECT_EQ(root->items[0]->text, "w");
  const TorchTensorRef& t = root->items[1]->tensor;
  EXPECT_EQ(t.storage_key, "7");
  EXPECT_EQ(t.dtype, DType::kF16);
  EXPECT_EQ(t.storage_offset, 2);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(t.stride, (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(reader.storages().at("7").numel, 12);
}

TEST(PickleReader, IntegerEncodings) {
  for (int64_t v : {int64_t{0}, int64_t{255}, int64_t{-1}, int64_t{70000}, int64_t{-70000}, int64_t{1} << 40,
                    -(int64_t{1} << 40)}) {
    PickleBuilder p;
    p.proto().integer(v).op('.');
    EXPECT_EQ(PickleReader("t").read(span_of(p.bytes))->integer, v);
  }
  PickleBuilder p;  // LONG1 with 1 byte 0xfe = -2
  p.proto().op(0x8a).op(1).op(0xfe).op('.');
  EXPECT_EQ(PickleReader("t").read(span_of(p.bytes))->integer, -2);
}

TEST(PickleReader, ForbiddenGlobalsAreNamed) {
  for (const auto& [module, name] : std::vector<std::pair<std::string, std::string>>{
           {"os", "system"}, {"posix", "system"}, {"builtins", "eval"}, {"subprocess", "Popen"},
           {"torch", "load"}, {"torch._utils", "_rebuild_device_tensor_from_numpy"}, {"collections", "defaultdict"}}) {
    SCOPED_TRACE(module + "." + name);
    PickleBuilder via_global;
    via_global.proto().global(module, name).str("echo pwned").op(0x85).op('R').op('.');
    expect_pickle_error(via_global.bytes, {"test.pkl", "byte 2", "forbidden global '" + module + "." + name + "'"});
    PickleBuilder via_stack;  // protocol 4 style
    via_stack.proto().str(module).str(name).op(0x93).op('.');
    expect_pickle_error(via_stack.bytes, {"STACK_GLOBAL", "forbidden global '" + module + "." + name + "'"});
  }
}

TEST(PickleReader, UnsupportedOpcodesAreNamed) {
  const std::vector<std::pair<uint8_t, std::string>> cases = {
      {'i', "0x69 (INST)"},   {'o', "0x6f (OBJ)"},       {0x81, "0x81 (NEWOBJ)"}, {0x92, "0x92 (NEWOBJ_EX)"},
      {0x82, "0x82 (EXT1)"},  {'S', "0x53 (STRING)"},    {'P', "0x50 (PERSID)"},  {'B', "0x42 (BINBYTES)"},
      {0x97, "0x97 (NEXT_BUFFER)"}, {0xff, "0xff (not a pickle opcode)"}};
  for (const auto& [op, text] : cases) {
    SCOPED_TRACE(text);
    PickleBuilder p;
    p.proto().op(op).op('.');
    expect_pickle_error(p.bytes, {"byte 2", "unsupported pickle opcode " + text});
  }
}

TEST(PickleReader, MalformedStacksAreReported) {
  expect_pickle_error(PickleBuilder().proto().op('R').op('.').bytes, {"stack underflow"});
  expect_pickle_error(PickleBuilder().proto().op('h').op(3).op('.').bytes, {"memo index 3"});
  expect_pickle_error(PickleBuilder().proto().op('t').op('.').bytes, {"no MARK"});
  expect_pickle_error(PickleBuilder().proto().op('N').op('N').op('.').bytes, {"malformed stack"});
  expect_pickle_error(PickleBuilder().proto().op(']').op('N').op('N').op('s').op('.').bytes, {"must be a dict"});
  expect_pickle_error(PickleBuilder().proto().global("torch", "FloatStorage").op(')').op('R').op('.').bytes,
                      {"'torch.FloatStorage' cannot be called"});
  // A persistent id that is not a storage reference.
  expect_pickle_error(PickleBuilder().proto().mark().str("module").str("x").op('t').op('Q').op('.').bytes,
                      {"persistent id"});
  // _rebuild_tensor_v2 with a non-tuple size.
  PickleBuilder p;
  p.proto().global("torch._utils", "_rebuild_tensor_v2").mark();
  p.mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu").integer(4).op('t').op('Q');
  p.integer(0).str("size").int_tuple({4}).op(0x89).op('}').op('t').op('R').op('.');
  expect_pickle_error(p.bytes, {"tensor size must be a tuple, found a string"});
}

// A pickle of nothing but EMPTY_DICT (or MARK, or MEMOIZE) opcodes would make a value per byte:
// 30 MB of them ran into bad_alloc. The reader stops at 2^18 values, stack entries, marks or memo
// entries, at once and with a message that says so.
TEST(PickleReader, ValueCountIsBounded) {
  for (const uint8_t opcode : {uint8_t{'}'}, uint8_t{'('}, uint8_t{0x94}}) {
    SCOPED_TRACE(static_cast<int>(opcode));
    PickleBuilder p;
    p.proto().op('}');  // MEMOIZE needs something on the stack
    p.bytes.insert(p.bytes.end(), (size_t{1} << 18) + 10, opcode);
    p.op('.');
    expect_pickle_error(p.bytes, {"more than 262144", "not a torch.save checkpoint?"});
  }
}

// Robustness: every prefix of a real data.pkl must be an error, not a crash or an overread.
TEST(PickleReader, EveryTruncationIsAnError) {
  for (const auto& zip : {tiny_model_dir() / "pytorch_model.bin",
                          tiny_data_dir() / "bin_variants" / "pytorch_model_ordereddict.bin"}) {
    const auto pkl = tiny_data_pkl(zip);
    ASSERT_GT(pkl.size(), 5000u);
    { PickleReader("data.pkl").read(span_of(pkl)); }  // the whole pickle reads
    for (size_t cut = 0; cut < pkl.size(); ++cut) {
      const std::vector<uint8_t> prefix(pkl.begin(), pkl.begin() + static_cast<std::ptrdiff_t>(cut));
      try {
        PickleReader("data.pkl").read(span_of(prefix));
        ADD_FAILURE() << "prefix of " << cut << " bytes was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
      }
    }
  }
}

// Robustness: any single-byte change either still reads or is a rexnlu::Error.
TEST(PickleReader, SingleByteMutationsNeverCrash) {
  const auto pkl = tiny_data_pkl(tiny_data_dir() / "bin_variants" / "pytorch_model_ordereddict.bin");
  size_t errors = 0;
  for (size_t pos = 0; pos < pkl.size(); ++pos) {
    for (uint8_t value : {uint8_t{0xff}, static_cast<uint8_t>(pkl[pos] ^ 0x01)}) {
      auto mutated = pkl;
      mutated[pos] = value;
      try {
        PickleReader("data.pkl").read(span_of(mutated));
      } catch (const Error&) {
        ++errors;
      }
    }
  }
  EXPECT_GT(errors, pkl.size() / 2);  // many mutations must be caught
}

}  // namespace
}  // namespace rexnlu::io
