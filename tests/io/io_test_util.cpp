#include "io_test_util.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "io/mapped_file.h"
#include "io/zip_reader.h"

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

// ---- byte crafting helpers ----

namespace rexnlu::io {

namespace {

void put(std::vector<uint8_t>& out, uint64_t v, int nbytes) {
  for (int i = 0; i < nbytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

void replace_first(std::vector<uint8_t>& bytes, const std::vector<uint8_t>& pattern,
                   const std::vector<uint8_t>& replacement) {
  auto it = std::search(bytes.begin(), bytes.end(), pattern.begin(), pattern.end());
  if (it == bytes.end()) throw std::runtime_error("replace_first: pattern not found");
  const auto pos = it - bytes.begin();
  bytes.erase(it, it + static_cast<std::ptrdiff_t>(pattern.size()));
  bytes.insert(bytes.begin() + pos, replacement.begin(), replacement.end());
}

std::vector<uint8_t> make_zip(const ZipEntries& entries, uint16_t method) {
  std::vector<uint8_t> out, central;
  for (const auto& [name, data] : entries) {
    const uint32_t crc = static_cast<uint32_t>(crc32(0L, data.data(), static_cast<uInt>(data.size())));
    const uint64_t offset = out.size();
    put(out, 0x04034b50, 4);
    put(out, 20, 2);  // version needed
    put(out, 0, 2);   // flags
    put(out, method, 2);
    put(out, 0, 4);  // time, date
    put(out, crc, 4);
    put(out, data.size(), 4);
    put(out, data.size(), 4);
    put(out, name.size(), 2);
    put(out, 0, 2);
    out.insert(out.end(), name.begin(), name.end());
    out.insert(out.end(), data.begin(), data.end());

    put(central, 0x02014b50, 4);
    put(central, 20, 2);
    put(central, 20, 2);
    put(central, 0, 2);
    put(central, method, 2);
    put(central, 0, 4);
    put(central, crc, 4);
    put(central, data.size(), 4);
    put(central, data.size(), 4);
    put(central, name.size(), 2);
    put(central, 0, 2);  // extra
    put(central, 0, 2);  // comment
    put(central, 0, 2);  // disk
    put(central, 0, 2);  // internal attributes
    put(central, 0, 4);  // external attributes
    put(central, offset, 4);
    central.insert(central.end(), name.begin(), name.end());
  }
  const uint64_t cd_offset = out.size();
  out.insert(out.end(), central.begin(), central.end());
  put(out, 0x06054b50, 4);
  put(out, 0, 4);
  put(out, entries.size(), 2);
  put(out, entries.size(), 2);
  put(out, central.size(), 4);
  put(out, cd_offset, 4);
  put(out, 0, 2);
  return out;
}

ZipEntries read_zip_entries(const std::filesystem::path& p) {
  MappedFile file(p);
  ZipReader zip(file.bytes(), p.string());
  ZipEntries out;
  for (const auto& name : zip.entry_names()) {
    auto data = zip.read(name);
    const auto* b = reinterpret_cast<const uint8_t*>(data.data());
    out.emplace_back(name, std::vector<uint8_t>(b, b + data.size()));
  }
  return out;
}

std::vector<uint8_t>& entry(ZipEntries& entries, const std::string& name_suffix) {
  for (auto& [name, data] : entries)
    if (name.size() >= name_suffix.size() && name.compare(name.size() - name_suffix.size(), name_suffix.size(), name_suffix) == 0)
      return data;
  throw std::runtime_error("no zip entry ending in " + name_suffix);
}

PickleBuilder& PickleBuilder::str(const std::string& s) {
  op('X');
  put(bytes, s.size(), 4);
  bytes.insert(bytes.end(), s.begin(), s.end());
  return *this;
}

PickleBuilder& PickleBuilder::integer(int64_t v) {
  if (v >= 0 && v < 256) return op('K').op(static_cast<uint8_t>(v));
  if (v >= INT32_MIN && v <= INT32_MAX) {
    op('J');
    put(bytes, static_cast<uint64_t>(v), 4);
    return *this;
  }
  op(0x8a).op(8);
  put(bytes, static_cast<uint64_t>(v), 8);
  return *this;
}

PickleBuilder& PickleBuilder::global(const std::string& module, const std::string& name) {
  op('c');
  bytes.insert(bytes.end(), module.begin(), module.end());
  bytes.push_back('\n');
  bytes.insert(bytes.end(), name.begin(), name.end());
  bytes.push_back('\n');
  return *this;
}

PickleBuilder& PickleBuilder::int_tuple(const std::vector<int64_t>& v) {
  mark();
  for (int64_t x : v) integer(x);
  return op('t');
}

PickleBuilder& PickleBuilder::tensor_item(const std::string& name, const std::string& storage_type,
                                          const std::string& key, int64_t storage_numel, int64_t offset,
                                          const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  str(name);
  global("torch._utils", "_rebuild_tensor_v2");
  mark();
  mark().str("storage").global("torch", storage_type).str(key).str("cpu").integer(storage_numel).op('t');
  op('Q');  // BINPERSID
  integer(offset).int_tuple(size).int_tuple(stride);
  op(0x89);  // NEWFALSE
  global("collections", "OrderedDict").op(')').op('R');
  op('t').op('R');
  return *this;
}

namespace {

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> stride(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    stride[d] = s;
    s *= shape[d];
  }
  return stride;
}

int64_t element_size(const std::string& storage_type) {
  if (storage_type == "DoubleStorage" || storage_type == "LongStorage") return 8;
  if (storage_type == "FloatStorage" || storage_type == "IntStorage") return 4;
  if (storage_type == "HalfStorage" || storage_type == "BFloat16Storage" || storage_type == "ShortStorage") return 2;
  return 1;
}

}  // namespace

std::vector<uint8_t> torch_state_dict_pickle(const std::vector<FakeTensor>& tensors) {
  PickleBuilder p;
  p.proto().op('}').mark();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    const int64_t numel = static_cast<int64_t>(t.data.size()) / element_size(t.storage_type);
    p.tensor_item(t.name, t.storage_type, std::to_string(i), numel, 0, t.shape, contiguous_strides(t.shape));
  }
  p.op('u').op('.');
  return p.bytes;
}

std::vector<uint8_t> make_torch_zip(const std::vector<FakeTensor>& tensors) {
  ZipEntries entries;
  entries.emplace_back("archive/data.pkl", torch_state_dict_pickle(tensors));
  entries.emplace_back("archive/byteorder", std::vector<uint8_t>{'l', 'i', 't', 't', 'l', 'e'});
  for (size_t i = 0; i < tensors.size(); ++i) entries.emplace_back("archive/data/" + std::to_string(i), tensors[i].data);
  entries.emplace_back("archive/version", std::vector<uint8_t>{'3', '\n'});
  return make_zip(entries);
}

}  // namespace rexnlu::io
