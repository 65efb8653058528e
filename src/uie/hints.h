// Level hint strings (spec 5.1): the prefixes of one recursion level and the child types each
// prefix asks for, packed into hint chunks of at most hint_max_len tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "uie/schema.h"

namespace rexnlu::uie {

// One already extracted (type, span) of the path a prefix stands for.
struct PrefixItem {
  std::string type;
  std::string span;                  // UTF-8
  int64_t start = 0, end = 0;        // [start, end) in code points of the request text
  std::optional<double> confidence;  // classification path only (it is part of the prefix key there)
  double probability = 0;            // reported with the item; not part of the prefix key
};
using Prefix = std::vector<PrefixItem>;

// One key of the level hint map: a prefix and the schema node whose children it asks for.
struct LevelEntry {
  Prefix prefix;
  int node = Schema::kRoot;
};

// A [TYPE] marker of a chunk: which entry and child type it asks for, and where it sits.
struct TypeSlot {
  int entry = 0;          // index into the level's entries
  int type_node = 0;      // schema node of the type
  int32_t char_pos = 0;   // code-point offset of its "[TYPE]" inside the chunk's hint string
};

struct HintChunk {
  std::string text;              // "[PREFIX]ps[TYPE]t1[TYPE]t2[PREFIX]..."
  std::vector<TypeSlot> slots;   // in hint order
};

struct HintLimits {
  int hint_max_len = 256;       // tokens per hint chunk, counting [CLS] and [SEP]
  int prefix_max_tokens = 125;  // prefix_string_max_len of the original
  int type_max_tokens = 125;    // info_type_max_len of the original
};

// Number of tokens of a string without [CLS]/[SEP] (the tokenizer's encode_raw size).
using TokenCounter = std::function<int(std::string_view)>;

// "t1: s1,t2: s2" (empty at level 0).
std::string prefix_string(const Prefix& prefix);

// Packs the entries, in their order, into chunks. Types are sorted by code point within a
// prefix. Prefixes and types longer than the limits are skipped as the original does; each skip
// adds a line to `warnings`.
std::vector<HintChunk> split_hints(const std::vector<LevelEntry>& entries, const Schema& schema,
                                   const TokenCounter& count_tokens, const HintLimits& limits,
                                   std::vector<std::string>& warnings);

}  // namespace rexnlu::uie
