#include "io/pytorch_checkpoint.h"

#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "io/byte_reader.h"
#include "io/checked_math.h"
#include "io/mapped_file.h"
#include "io/pickle_reader.h"
#include "io/zip_reader.h"
#include "rexnlu/error.h"

namespace rexnlu::io {

namespace {

using Kind = PickleValue::Kind;
using StorageBytes = std::map<std::string, std::span<const std::byte>>;

// The legacy format starts with pickle.dump(0x1950a86a20f9469cfc6c): LONG1 of these 10 bytes.
constexpr unsigned char kLegacyMagic[] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
constexpr int64_t kLegacyProtocolVersion = 1001;

bool starts_with(std::span<const std::byte> bytes, std::initializer_list<unsigned char> prefix) {
  if (bytes.size() < prefix.size()) return false;
  size_t i = 0;
  for (unsigned char c : prefix)
    if (std::to_integer<unsigned char>(bytes[i++]) != c) return false;
  return true;
}

// Bytes of `numel` elements of `dtype`, or an error naming `what`.
uint64_t storage_nbytes(const TorchStorageRef& s, const std::string& where) {
  auto n = checked_mul(static_cast<uint64_t>(s.numel), dtype_size(s.dtype));
  if (!n) throw ModelError(where + ": storage '" + s.key + "' size overflows");
  return *n;
}

// Turns the unpickled state dict into tensor views of the storages' bytes.
void add_tensors(TensorStore& store, const PickleValue& root, const std::map<std::string, TorchStorageRef>& storages,
                 const StorageBytes& bytes, const std::string& where) {
  if (root.kind != Kind::kDict)
    throw ModelError(where + ": the checkpoint holds a " + std::string(kind_name(root.kind)) +
                     ", not a state dict of tensors");
  for (size_t i = 0; i + 1 < root.items.size(); i += 2) {
    const PickleValue& key = *root.items[i];
    const PickleValue& value = *root.items[i + 1];
    if (key.kind != Kind::kString)
      throw ModelError(where + ": state dict key is a " + std::string(kind_name(key.kind)) + ", not a string");
    const std::string ctx = where + ": tensor '" + key.text + "'";
    if (value.kind != Kind::kTensor)
      throw ModelError(ctx + ": value is a " + std::string(kind_name(value.kind)) +
                       ", not a tensor (only state dicts of tensors are supported)");
    const TorchTensorRef& t = value.tensor;
    const TorchStorageRef& storage = storages.at(t.storage_key);  // the pickle reader recorded it
    const std::span<const std::byte> data = bytes.at(t.storage_key);

    auto numel = checked_numel(t.shape.data(), t.shape.size());
    if (!numel) throw ModelError(ctx + ": invalid size " + shape_string(t.shape));
    if (t.stride.size() != t.shape.size())
      throw ModelError(ctx + ": size " + shape_string(t.shape) + " and stride " + shape_string(t.stride) +
                       " have different ranks");
    // Contiguous row-major: each stride is the product of the later sizes (size-1 dims are free;
    // an empty tensor has no layout to check).
    int64_t expected_stride = 1;
    for (size_t d = t.shape.size(); *numel != 0 && d-- > 0;) {
      if (t.shape[d] != 1 && t.stride[d] != expected_stride)
        throw ModelError(ctx + ": size " + shape_string(t.shape) + " with stride " + shape_string(t.stride) +
                         " is not contiguous (only contiguous row-major tensors are supported)");
      expected_stride *= t.shape[d];  // cannot overflow: bounded by numel, which is not 0 here
    }
    if (t.storage_offset < 0 || static_cast<uint64_t>(storage.numel) < *numel ||
        static_cast<uint64_t>(t.storage_offset) > static_cast<uint64_t>(storage.numel) - *numel)
      throw ModelError(ctx + ": storage offset " + std::to_string(t.storage_offset) + " + " + std::to_string(*numel) +
                       " elements is out of range of storage '" + t.storage_key + "' of " +
                       std::to_string(storage.numel) + " elements");
    const size_t esize = dtype_size(t.dtype);
    TensorView view;
    view.dtype = t.dtype;
    view.shape = t.shape;
    view.data = store.aligned_bytes(data.data() + static_cast<uint64_t>(t.storage_offset) * esize, *numel * esize,
                                    t.dtype);
    store.add(key.text, std::move(view));
  }
}

// torch >= 1.6: a zip archive <archive>/{data.pkl, data/<storage key>, byteorder, version}.
void load_zip(TensorStore& store, const MappedFile& file, const std::string& where) {
  ZipReader zip(file.bytes(), where);
  std::string prefix;
  for (const auto& name : zip.entry_names()) {
    const auto slash = name.find('/');
    if (slash == std::string::npos || name.substr(slash) != "/data.pkl") continue;
    if (!prefix.empty()) throw ModelError(where + ": several data.pkl entries ('" + prefix + "/data.pkl', '" + name + "')");
    prefix = name.substr(0, slash);
  }
  if (prefix.empty()) throw ModelError(where + ": zip archive without an <archive>/data.pkl entry (not a torch.save checkpoint)");

  if (zip.contains(prefix + "/byteorder")) {
    auto order = zip.read(prefix + "/byteorder");
    const std::string_view s(reinterpret_cast<const char*>(order.data()), order.size());
    if (s != "little")
      throw ModelError(where + ": byteorder is '" + std::string(s) + "'; only little-endian checkpoints are supported");
  }

  const std::string pkl_name = prefix + "/data.pkl";
  auto pkl = zip.read(pkl_name);
  PickleReader pickle(where + ": " + pkl_name);
  uint64_t consumed = 0;
  const PickleValue* root = pickle.read(pkl, &consumed);
  if (consumed != pkl.size())
    throw ModelError(where + ": " + pkl_name + ": " + std::to_string(pkl.size() - consumed) + " bytes after STOP");

  StorageBytes bytes;
  for (const auto& [key, storage] : pickle.storages()) {
    const std::string entry = prefix + "/data/" + key;
    if (!zip.contains(entry)) throw ModelError(where + ": storage '" + key + "' has no zip entry '" + entry + "'");
    auto data = zip.read(entry);
    const uint64_t need = storage_nbytes(storage, where);
    if (data.size() != need)
      throw ModelError(where + ": zip entry '" + entry + "' has " + std::to_string(data.size()) + " bytes, but storage of " +
                       std::to_string(storage.numel) + " " + std::string(dtype_name(storage.dtype)) + " needs " +
                       std::to_string(need));
    bytes[key] = data;
  }
  add_tensors(store, *root, pickle.storages(), bytes, where);
}

// Before torch 1.6: pickles of magic number, protocol version, sys info, the state dict and
// the storage keys, then for each key an int64 element count and the raw bytes.
void load_legacy(TensorStore& store, const MappedFile& file, const std::string& where) {
  const auto all = file.bytes();
  PickleReader pickle(where);
  uint64_t pos = 0;
  auto next = [&](const char* what) {
    uint64_t consumed = 0;
    try {
      const PickleValue* v = pickle.read(all.subspan(pos), &consumed);
      pos += consumed;
      return v;
    } catch (const Error& e) {
      throw ModelError(std::string(e.what()) + " (in the " + what + " pickle at byte " + std::to_string(pos) + ")");
    }
  };
  const PickleValue* magic = next("magic number");
  if (magic->kind != Kind::kBigInt || magic->text.size() != sizeof kLegacyMagic ||
      std::memcmp(magic->text.data(), kLegacyMagic, sizeof kLegacyMagic) != 0)
    throw ModelError(where + ": wrong magic number (not a legacy torch.save checkpoint)");
  const PickleValue* protocol = next("protocol version");
  if (protocol->kind != Kind::kInt || protocol->integer != kLegacyProtocolVersion)
    throw ModelError(where + ": unsupported legacy protocol version (expected 1001)");
  const PickleValue* sys_info = next("sys info");
  if (sys_info->kind != Kind::kDict) throw ModelError(where + ": legacy sys info is not a dict");
  for (size_t i = 0; i + 1 < sys_info->items.size(); i += 2) {
    const PickleValue* k = sys_info->items[i];
    const PickleValue* v = sys_info->items[i + 1];
    if (k->kind == Kind::kString && k->text == "little_endian" && !(v->kind == Kind::kBool && v->boolean))
      throw ModelError(where + ": only little-endian checkpoints are supported");
  }
  const PickleValue* root = next("state dict");
  const PickleValue* keys = next("storage keys");
  if (keys->kind != Kind::kList) throw ModelError(where + ": legacy storage key list is not a list");

  ByteReader raw(all, where + ": legacy storages", pos);
  StorageBytes bytes;
  for (const PickleValue* key : keys->items) {
    if (key->kind != Kind::kString) throw ModelError(where + ": legacy storage key is not a string");
    auto it = pickle.storages().find(key->text);
    if (it == pickle.storages().end())
      throw ModelError(where + ": legacy storage '" + key->text + "' is not used by any tensor");
    const uint64_t numel = raw.u64("storage '" + key->text + "' element count");
    if (numel != static_cast<uint64_t>(it->second.numel))
      throw ModelError(where + ": legacy storage '" + key->text + "' has " + std::to_string(numel) +
                       " elements, the pickle says " + std::to_string(it->second.numel));
    if (!bytes.emplace(key->text, raw.bytes(storage_nbytes(it->second, where), "storage '" + key->text + "'")).second)
      throw ModelError(where + ": legacy storage '" + key->text + "' listed twice");
  }
  for (const auto& [key, storage] : pickle.storages())
    if (!bytes.count(key)) throw ModelError(where + ": legacy storage '" + key + "' is missing from the key list");
  if (!raw.at_end())
    throw ModelError(where + ": " + std::to_string(raw.remaining()) + " unexpected bytes after the last storage");
  add_tensors(store, *root, pickle.storages(), bytes, where);
}

}  // namespace

TensorStore load_pytorch_bin(const std::filesystem::path& path) {
  auto file = std::make_shared<const MappedFile>(path);
  const std::string where = path.string();
  TensorStore store;
  store.set_source(path);
  if (starts_with(file->bytes(), {'P', 'K', 0x03, 0x04})) {
    load_zip(store, *file, where);
  } else if (starts_with(file->bytes(), {0x80, 0x02, 0x8a, 0x0a})) {
    load_legacy(store, *file, where);
  } else {
    throw ModelError(where + ": not a torch.save checkpoint (neither a zip archive nor the legacy pickle format)");
  }
  store.keep_alive(std::move(file));
  return store;
}

}  // namespace rexnlu::io
