#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/json_input.h"
#include "io/checked_math.h"
#include "io/mapped_file.h"
#include "rexnlu/error.h"

namespace rexnlu::io {

namespace {

// The reference implementation refuses headers above 100 MB; so do we, before parsing.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

std::optional<DType> parse_dtype(const std::string& s) {
  static const std::pair<const char*, DType> kNames[] = {
      {"F32", DType::kF32}, {"F16", DType::kF16}, {"BF16", DType::kBF16}, {"F64", DType::kF64},
      {"I64", DType::kI64}, {"I32", DType::kI32}, {"I16", DType::kI16},   {"I8", DType::kI8},
      {"U8", DType::kU8},   {"BOOL", DType::kBool}};
  for (const auto& [name, dtype] : kNames)
    if (s == name) return dtype;
  return std::nullopt;
}

// "[begin, end]" for messages (built with appends: GCC 12 gives a false -Wrestrict on "[" + ...).
std::string offsets_string(uint64_t begin, uint64_t end) {
  std::string s = "[";
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  s += "]";
  return s;
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;  // relative to the start of the data section
};

Entry parse_entry(const std::string& where, const std::string& name, const nlohmann::json& j,
                  uint64_t data_size) {
  const std::string ctx = where + ": tensor '" + name + "'";
  if (!j.is_object()) throw ModelError(ctx + ": header entry is not a JSON object");
  Entry e{name, DType::kF32, {}, 0, 0};

  auto dt = j.find("dtype");
  if (dt == j.end() || !dt->is_string()) throw ModelError(ctx + ": missing or non-string 'dtype'");
  auto dtype = parse_dtype(dt->get<std::string>());
  if (!dtype) throw ModelError(ctx + ": unsupported dtype '" + dt->get<std::string>() + "'");
  e.dtype = *dtype;

  auto sh = j.find("shape");
  if (sh == j.end() || !sh->is_array()) throw ModelError(ctx + ": missing or non-array 'shape'");
  for (const auto& d : *sh) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      throw ModelError(ctx + ": 'shape' must hold non-negative integers, found " + d.dump());
    e.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
  }

  auto off = j.find("data_offsets");
  if (off == j.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    throw ModelError(ctx + ": 'data_offsets' must be [begin, end] with non-negative integers");
  e.begin = (*off)[0].get<uint64_t>();
  e.end = (*off)[1].get<uint64_t>();
  const std::string range = offsets_string(e.begin, e.end);
  if (e.begin > e.end) throw ModelError(ctx + ": data_offsets " + range + " has begin > end");
  if (e.end > data_size)
    throw ModelError(ctx + ": data_offsets " + range + " out of range: the data section has " +
                     std::to_string(data_size) + " bytes (file truncated?)");

  auto numel = checked_numel(e.shape.data(), e.shape.size());
  auto nbytes = numel ? checked_mul(*numel, dtype_size(e.dtype)) : std::nullopt;
  if (!nbytes) throw ModelError(ctx + ": shape " + shape_string(e.shape) + " is too large");
  if (*nbytes != e.end - e.begin)
    throw ModelError(ctx + ": data_offsets " + range + " span " + std::to_string(e.end - e.begin) +
                     " bytes but shape " + shape_string(e.shape) + " of " +
                     std::string(dtype_name(e.dtype)) + " needs " + std::to_string(*nbytes));
  return e;
}

}  // namespace

TensorStore load_safetensors(const std::filesystem::path& path) {
  auto file = std::make_shared<const MappedFile>(path);
  const std::string where = path.string();
  const uint64_t size = file->size();
  if (size < 8)
    throw ModelError(where + ": truncated safetensors file: " + std::to_string(size) +
                     " bytes, the 8-byte header length alone needs 8");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | std::to_integer<uint64_t>(file->data()[i]);
  if (header_len > kMaxHeaderBytes)
    throw ModelError(where + ": safetensors header length " + std::to_string(header_len) +
                     " exceeds the 100 MB limit (not a safetensors file?)");
  if (!range_fits(8, header_len, size))
    throw ModelError(where + ": truncated safetensors file: header of " + std::to_string(header_len) +
                     " bytes announced, but the file has only " + std::to_string(size) + " bytes");

  const char* header_begin = reinterpret_cast<const char*>(file->data() + 8);
  nlohmann::json header;
  try {
    header = parse_json(std::string_view(header_begin, header_len));
  } catch (const nlohmann::json::exception& e) {
    throw ModelError(where + ": safetensors header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw ModelError(where + ": safetensors header is not a JSON object");

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = size - data_start;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") continue;  // free-form string map, not a tensor
    entries.push_back(parse_entry(where, name, value, data_size));
  }

  // Each byte of the data section belongs to at most one tensor.
  std::vector<const Entry*> by_offset;
  for (const auto& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const Entry& a = *by_offset[i - 1];
    const Entry& b = *by_offset[i];
    if (b.begin < a.end)
      throw ModelError(where + ": tensors '" + a.name + "' " + offsets_string(a.begin, a.end) + " and '" +
                       b.name + "' " + offsets_string(b.begin, b.end) + " have overlapping data_offsets");
  }

  TensorStore store;
  store.set_source(path);
  const std::byte* data = file->data() + data_start;
  for (auto& e : entries) {
    TensorView v;
    v.dtype = e.dtype;
    v.shape = std::move(e.shape);
    v.data = store.aligned_bytes(data + e.begin, e.end - e.begin, e.dtype);
    store.add(std::move(e.name), std::move(v));
  }
  store.keep_alive(std::move(file));
  return store;
}

}  // namespace rexnlu::io
