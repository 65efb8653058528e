#include "io/zip_reader.h"

#include <zlib.h>

#include <algorithm>

#include "io/byte_reader.h"
#include "io/checked_math.h"
#include "rexnlu/error.h"

namespace rexnlu::io {

namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndOfCentralDirSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kDataDescriptorSig = 0x08074b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint64_t kEocdSize = 22;
constexpr uint64_t kZip64LocatorSize = 20;
constexpr uint64_t kMaxCommentSize = 0xffff;

constexpr uint16_t kFlagEncrypted = 1u << 0;
constexpr uint16_t kFlagDataDescriptor = 1u << 3;
constexpr uint16_t kFlagStrongEncryption = 1u << 6;
constexpr uint16_t kFlagMaskedHeaders = 1u << 13;

struct Directory {
  uint64_t entries = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
};

std::string hex32(uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xf];
  return s;
}

uint32_t crc32_of(std::span<const std::byte> data) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(data.data()), data.size());
  return static_cast<uint32_t>(crc);
}

// The end of central directory record is the last 22 bytes plus a comment of up to 64 KiB;
// the match must account for the file's last byte exactly.
uint64_t find_eocd(ByteReader& r, std::span<const std::byte> bytes) {
  const uint64_t size = bytes.size();
  if (size < kEocdSize)
    throw ModelError(r.context() + ": not a zip archive or truncated (file too short for its end record)");
  auto byte_at = [&bytes](uint64_t i) { return std::to_integer<uint32_t>(bytes[i]); };
  const uint64_t lowest = size - kEocdSize > kMaxCommentSize ? size - kEocdSize - kMaxCommentSize : 0;
  for (uint64_t pos = size - kEocdSize + 1; pos-- > lowest;) {
    // Plain byte compares here: this loop may visit 64 KiB of candidates.
    if (byte_at(pos) != 0x50 || byte_at(pos + 1) != 0x4b || byte_at(pos + 2) != 0x05 || byte_at(pos + 3) != 0x06)
      continue;
    if ((byte_at(pos + 20) | (byte_at(pos + 21) << 8)) == size - pos - kEocdSize) return pos;
  }
  throw ModelError(r.context() + ": not a zip archive or truncated (no end of central directory record found)");
}

Directory read_directory_location(ByteReader& r, std::span<const std::byte> bytes) {
  const uint64_t eocd = find_eocd(r, bytes);
  r.seek(eocd + 4, "end record");
  const uint16_t disk = r.u16("disk number");
  const uint16_t cd_disk = r.u16("central directory disk");
  const uint16_t disk_entries = r.u16("entries on disk");
  const uint16_t total_entries = r.u16("total entries");
  const uint32_t cd_size = r.u32("central directory size");
  const uint32_t cd_offset = r.u32("central directory offset");
  if (disk != 0 || cd_disk != 0 || disk_entries != total_entries)
    throw ModelError(r.context() + ": multi-disk zip archives are not supported");
  Directory dir{total_entries, cd_size, cd_offset};

  // A zip64 locator sits right before the end record when the archive has zip64 records.
  bool has_locator = false;
  if (eocd >= kZip64LocatorSize) {
    r.seek(eocd - kZip64LocatorSize, "zip64 locator");
    has_locator = r.u32("zip64 locator signature") == kZip64LocatorSig;
  }
  if (!has_locator) {
    if (total_entries == 0xffff || cd_size == 0xffffffffu || cd_offset == 0xffffffffu)
      throw ModelError(r.context() + ": the end record needs zip64 values but there is no zip64 locator");
    return dir;
  }
  if (r.u32("zip64 end record disk") != 0) throw ModelError(r.context() + ": multi-disk zip64 archives are not supported");
  const uint64_t z64_offset = r.u64("zip64 end record offset");
  if (!range_fits(z64_offset, 56, eocd - kZip64LocatorSize))
    throw ModelError(r.context() + ": zip64 end record offset " + std::to_string(z64_offset) + " is out of range");
  r.seek(z64_offset, "zip64 end record");
  if (r.u32("zip64 end record signature") != kZip64EndSig)
    throw ModelError(r.context() + ": bad zip64 end record signature at offset " + std::to_string(z64_offset));
  r.u64("zip64 end record size");
  r.u16("version made by");
  r.u16("version needed");
  const uint32_t z_disk = r.u32("disk number");
  const uint32_t z_cd_disk = r.u32("central directory disk");
  const uint64_t z_disk_entries = r.u64("entries on disk");
  const uint64_t z_total = r.u64("total entries");
  const uint64_t z_size = r.u64("central directory size");
  const uint64_t z_offset = r.u64("central directory offset");
  if (z_disk != 0 || z_cd_disk != 0 || z_disk_entries != z_total)
    throw ModelError(r.context() + ": multi-disk zip64 archives are not supported");
  // Where the classic record holds a real value (not the 0xff.. marker) it must agree.
  if ((total_entries != 0xffff && total_entries != z_total) || (cd_size != 0xffffffffu && cd_size != z_size) ||
      (cd_offset != 0xffffffffu && cd_offset != z_offset))
    throw ModelError(r.context() + ": the zip end record and the zip64 end record disagree");
  dir = Directory{z_total, z_size, z_offset};
  // The central directory must end where the zip64 end record starts.
  if (!range_fits(dir.offset, dir.size, z64_offset))
    throw ModelError(r.context() + ": central directory [" + std::to_string(dir.offset) + ", +" +
                     std::to_string(dir.size) + ") is out of range");
  return dir;
}

// Replaces the 0xffffffff markers of a header with the values of its zip64 extra field.
void apply_zip64_extra(ByteReader& extra, const std::string& where, uint64_t& usize, uint64_t& csize,
                       uint64_t* offset) {
  while (!extra.at_end()) {
    const uint16_t id = extra.u16("extra field id");
    const uint16_t len = extra.u16("extra field length");
    auto body = extra.bytes(len, "extra field");
    if (id != kZip64ExtraId) continue;
    ByteReader z(body, where + ": zip64 extra field");
    if (usize == 0xffffffffu) usize = z.u64("uncompressed size");
    if (csize == 0xffffffffu) csize = z.u64("compressed size");
    if (offset && *offset == 0xffffffffu) *offset = z.u64("local header offset");
    return;
  }
  if (usize == 0xffffffffu || csize == 0xffffffffu || (offset && *offset == 0xffffffffu))
    throw ModelError(where + ": 32-bit size or offset marker without a zip64 extra field");
}

}  // namespace

ZipReader::ZipReader(std::span<const std::byte> bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {
  ByteReader r(bytes_, name_);
  const Directory dir = read_directory_location(r, bytes_);
  if (!range_fits(dir.offset, dir.size, r.size()))
    throw ModelError(name_ + ": central directory at offset " + std::to_string(dir.offset) + " (" +
                     std::to_string(dir.size) + " bytes) is out of range of the " + std::to_string(r.size()) +
                     "-byte file");
  ByteReader cd(bytes_.subspan(dir.offset, dir.size), name_ + ": central directory");
  for (uint64_t i = 0; i < dir.entries; ++i) {
    if (cd.u32("central header signature") != kCentralHeaderSig)
      throw ModelError(name_ + ": bad central directory header signature for entry " + std::to_string(i));
    cd.u16("version made by");
    cd.u16("version needed");
    const uint16_t flags = cd.u16("flags");
    const uint16_t method = cd.u16("compression method");
    cd.u32("modification time");
    const uint32_t crc = cd.u32("crc-32");
    uint64_t csize = cd.u32("compressed size");
    uint64_t usize = cd.u32("uncompressed size");
    const uint16_t name_len = cd.u16("name length");
    const uint16_t extra_len = cd.u16("extra length");
    const uint16_t comment_len = cd.u16("comment length");
    const uint16_t disk = cd.u16("disk number");
    cd.u16("internal attributes");
    cd.u32("external attributes");
    uint64_t local_offset = cd.u32("local header offset");
    const std::string entry(cd.chars(name_len, "entry name"));
    const std::string where = name_ + ": zip entry '" + entry + "'";
    ByteReader extra(cd.bytes(extra_len, "extra field"), where);
    cd.bytes(comment_len, "entry comment");
    apply_zip64_extra(extra, where, usize, csize, &local_offset);

    if (disk != 0 && disk != 0xffff) throw ModelError(where + ": multi-disk archives are not supported");
    if (flags & (kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedHeaders))
      throw ModelError(where + ": encrypted entries are not supported");
    if (method != 0)
      throw ModelError(where + ": compression method " + std::to_string(method) +
                       (method == 8 ? " (deflate)" : "") +
                       " is not supported; only stored entries (method 0) are read, as torch.save writes them");
    if (csize != usize)
      throw ModelError(where + ": stored entry with compressed size " + std::to_string(csize) +
                       " != uncompressed size " + std::to_string(usize));

    // The local header repeats name, flags and method; sizes and CRC too unless a data
    // descriptor follows the data (torch sets that flag and leaves them 0).
    if (!range_fits(local_offset, 30, dir.offset))
      throw ModelError(where + ": local header offset " + std::to_string(local_offset) + " is out of range");
    ByteReader local(bytes_.subspan(0, dir.offset), where + ": local header", local_offset);
    if (local.u32("signature") != kLocalHeaderSig)
      throw ModelError(where + ": bad local header signature at offset " + std::to_string(local_offset));
    local.u16("version needed");
    const uint16_t l_flags = local.u16("flags");
    const uint16_t l_method = local.u16("compression method");
    local.u32("modification time");
    const uint32_t l_crc = local.u32("crc-32");
    uint64_t l_csize = local.u32("compressed size");
    uint64_t l_usize = local.u32("uncompressed size");
    const uint16_t l_name_len = local.u16("name length");
    const uint16_t l_extra_len = local.u16("extra length");
    const std::string_view l_name = local.chars(l_name_len, "name");
    ByteReader l_extra(local.bytes(l_extra_len, "extra field"), where + ": local header");
    if (l_name != entry) throw ModelError(where + ": local header names it '" + std::string(l_name) + "'");
    if (l_flags != flags || l_method != method)
      throw ModelError(where + ": local header flags/method differ from the central directory");
    const bool descriptor = flags & kFlagDataDescriptor;
    if (l_usize == 0xffffffffu || l_csize == 0xffffffffu) apply_zip64_extra(l_extra, where, l_usize, l_csize, nullptr);
    const bool local_zeroed = descriptor && l_crc == 0 && l_csize == 0 && l_usize == 0;
    if (!local_zeroed && (l_crc != crc || l_csize != csize || l_usize != usize))
      throw ModelError(where + ": local header size/CRC differ from the central directory");

    const uint64_t data_offset = local.pos();
    if (!range_fits(data_offset, csize, dir.offset))
      throw ModelError(where + ": data at offset " + std::to_string(data_offset) + " (" + std::to_string(csize) +
                       " bytes) runs past the central directory at " + std::to_string(dir.offset) +
                       " (file truncated or corrupt)");
    if (descriptor) {
      ByteReader desc(bytes_.subspan(0, dir.offset), where + ": data descriptor", data_offset + csize);
      uint32_t d_crc = desc.u32("crc-32 or signature");
      if (d_crc == kDataDescriptorSig) d_crc = desc.u32("crc-32");
      if (d_crc != crc) throw ModelError(where + ": data descriptor CRC differs from the central directory");
    }
    if (!entries_.emplace(entry, Entry{data_offset, csize, crc}).second)
      throw ModelError(name_ + ": duplicate zip entry '" + entry + "'");
  }
  if (!cd.at_end())
    throw ModelError(name_ + ": central directory has " + std::to_string(cd.remaining()) +
                     " bytes after its announced " + std::to_string(dir.entries) + " entries");
}

std::vector<std::string> ZipReader::entry_names() const {
  std::vector<std::string> names;
  for (const auto& [entry_name, entry] : entries_) names.push_back(entry_name);
  return names;
}

std::span<const std::byte> ZipReader::read(const std::string& entry) const {
  auto it = entries_.find(entry);
  if (it == entries_.end()) throw ModelError(name_ + ": zip entry '" + entry + "' not found");
  auto data = bytes_.subspan(it->second.data_offset, it->second.size);
  const uint32_t actual = crc32_of(data);
  if (actual != it->second.crc32)
    throw ModelError(name_ + ": zip entry '" + entry + "' is corrupt: CRC-32 " + hex32(actual) + " != stored " +
                     hex32(it->second.crc32));
  return data;
}

}  // namespace rexnlu::io
