#include "engine/options_json.h"

#include <cmath>
#include <sstream>

#include "rexnlu/error.h"
#include "rexnlu/json.h"
#include "uie/schema.h"

namespace rexnlu {

namespace {

template <typename T>
std::string str(T value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

template <typename T>
void check_range(const char* name, T value, T lo, T hi, const std::string& range) {
  if (!(value >= lo && value <= hi)) {
    throw InputError(std::string("option ") + name + " must be in " + range + ", got " + str(value));
  }
}

}  // namespace

void check_options(const Options& o) {
  check_range("link_threshold", o.link_threshold, -kMaxLinkThreshold, kMaxLinkThreshold,
              "[-20, 20] (a logit: 0 = probability 0.5, +-20 = 1e-9 from 0 or 1)");
  check_range("pointer_threshold", o.pointer_threshold, -kMaxLinkThreshold, kMaxLinkThreshold,
              "[-20, 20] (a logit; SiameseUIE's original threshold is 0.5)");
  check_range("max_len", o.max_len, 8, 512, "[8, 512]");
  check_range("hint_max_len", o.hint_max_len, 4, o.max_len - 2, "[4, max_len - 2 = " + std::to_string(o.max_len - 2) + "]");
  check_range("stride", o.stride, 0, o.max_len - 1, "[0, max_len - 1 = " + std::to_string(o.max_len - 1) + "]");
  check_range("max_batch_cells", o.max_batch_cells, int64_t{1}, kMaxBatchCells, "[1, " + std::to_string(kMaxBatchCells) + "]");
}

void check_limits(const Limits& l) {
  auto positive = [](const char* name, int64_t v) {
    if (v < 1) throw InputError(std::string("limit ") + name + " must be >= 1, got " + std::to_string(v));
  };
  positive("max_text_bytes", l.max_text_bytes);
  positive("max_schema_types", l.max_schema_types);
  positive("max_schema_depth", l.max_schema_depth);
  positive("max_paths", l.max_paths);
  positive("max_output_bytes", l.max_output_bytes);
  positive("max_sequences", l.max_sequences);
  if (l.max_schema_depth > uie::kMaxSchemaDepth) {
    throw InputError("limit max_schema_depth must be at most " + std::to_string(uie::kMaxSchemaDepth) + ", got " +
                     std::to_string(l.max_schema_depth));
  }
}

Options options_from_json(const Json& j, Options o) {
  if (j.is_null()) return o;
  if (!j.is_object()) throw InputError("options must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    // Integers are range-checked before narrowing, so the message shows what the user gave.
    auto integer = [&](int64_t lo, int64_t hi) {
      if (!v.is_number_integer()) throw InputError("option " + k + " must be an integer");
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
        throw InputError("option " + k + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
      }
      const auto n = v.get<int64_t>();
      if (n < lo || n > hi) {
        throw InputError("option " + k + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                         std::to_string(n));
      }
      return n;
    };
    auto boolean = [&]() {
      if (!v.is_boolean()) throw InputError("option " + k + " must be true or false");
      return v.get<bool>();
    };
    if (k == "link_threshold") {
      if (!v.is_number()) throw InputError("option link_threshold must be a number");
      const auto t = v.get<double>();
      if (!(std::abs(t) <= kMaxLinkThreshold)) {
        throw InputError("option link_threshold must be in [-20, 20] (a logit: 0 = probability 0.5), got " + v.dump());
      }
      o.link_threshold = static_cast<float>(t);
    } else if (k == "pointer_threshold") {
      if (!v.is_number()) throw InputError("option pointer_threshold must be a number");
      const auto t = v.get<double>();
      if (!(std::abs(t) <= kMaxLinkThreshold)) {
        throw InputError("option pointer_threshold must be in [-20, 20] (a logit), got " + v.dump());
      }
      o.pointer_threshold = static_cast<float>(t);
    } else if (k == "max_len") {
      o.max_len = static_cast<int>(integer(8, 512));
    } else if (k == "stride") {
      o.stride = static_cast<int>(integer(0, 511));
    } else if (k == "hint_max_len") {
      o.hint_max_len = static_cast<int>(integer(4, 510));
    } else if (k == "max_batch_cells") {
      o.max_batch_cells = integer(1, kMaxBatchCells);
    } else if (k == "dedup") {
      o.dedup = boolean();
    } else if (k == "probabilities") {
      o.probabilities = boolean();
    } else if (k == "byte_offsets") {
      o.byte_offsets = boolean();
    } else {
      throw InputError("unknown option '" + k + "'");
    }
  }
  // The ranges that depend on each other (hint_max_len and stride vs max_len) are checked by the
  // engine on the final options: a CLI's base --options may be completed by each line's options.
  return o;
}

}  // namespace rexnlu
