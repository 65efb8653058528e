#include "uie/hints.h"

#include <algorithm>

#include "uie/utf8.h"

namespace rexnlu::uie {

namespace {
constexpr std::string_view kPrefixToken = "[PREFIX]";
constexpr std::string_view kTypeToken = "[TYPE]";
}  // namespace

std::string prefix_string(const Prefix& prefix) {
  std::string s;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (i > 0) s += ',';
    s += prefix[i].type;
    s += ": ";
    s += prefix[i].span;
  }
  return s;
}

std::vector<HintChunk> split_hints(const std::vector<LevelEntry>& entries, const Schema& schema,
                                   const TokenCounter& count_tokens, const HintLimits& limits,
                                   std::vector<std::string>& warnings) {
  std::vector<HintChunk> chunks;
  HintChunk chunk;
  int32_t chunk_chars = 0;  // code points of chunk.text
  int n = 2;                // tokens of the chunk so far, counting [CLS] and [SEP]
  auto append = [&](std::string_view piece) {
    chunk.text += piece;
    chunk_chars += static_cast<int32_t>(count_code_points(piece));
  };

  for (int e = 0; e < static_cast<int>(entries.size()); ++e) {
    const LevelEntry& entry = entries[e];
    std::vector<int> types = schema.node(entry.node).children;
    std::stable_sort(types.begin(), types.end(),
                     [&](int a, int b) { return schema.node(a).type < schema.node(b).type; });
    const std::string ps = prefix_string(entry.prefix);
    const int lp = count_tokens(ps) + 1;  // +1 for [PREFIX]
    if (lp > limits.prefix_max_tokens) {
      warnings.push_back("prefix '" + ps + "' skipped: " + std::to_string(lp) + " tokens > " +
                         std::to_string(limits.prefix_max_tokens));
      continue;
    }
    bool first = true;
    for (int t : types) {
      const std::string& type = schema.node(t).type;
      const int lt = count_tokens(type) + 1;  // +1 for [TYPE]
      if (lt > limits.type_max_tokens) {
        warnings.push_back("type '" + type + "' skipped: " + std::to_string(lt) + " tokens > " +
                           std::to_string(limits.type_max_tokens));
        continue;
      }
      const bool starts_new_chunk = first ? n + lp + lt > limits.hint_max_len : n + lt > limits.hint_max_len;
      if (starts_new_chunk) {
        // The original asserts here; we skip the type instead of failing the request.
        if (2 + lp + lt > limits.hint_max_len) {
          warnings.push_back("type '" + type + "' skipped: prefix and type need " + std::to_string(2 + lp + lt) +
                             " tokens > hint_max_len " + std::to_string(limits.hint_max_len));
          continue;
        }
        if (!chunk.text.empty()) chunks.push_back(std::move(chunk));
        chunk = HintChunk{};
        chunk_chars = 0;
        append(kPrefixToken);
        append(ps);
        n = 2 + lp + lt;
      } else if (first) {
        append(kPrefixToken);
        append(ps);
        n += lp + lt;
      } else {
        n += lt;
      }
      chunk.slots.push_back(TypeSlot{e, t, chunk_chars});
      append(kTypeToken);
      append(type);
      first = false;
    }
  }
  if (!chunk.text.empty()) chunks.push_back(std::move(chunk));
  return chunks;
}

}  // namespace rexnlu::uie
