#include "pretty_print.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "rexnlu/tokenizer.h"

namespace rexnlu::apps {
namespace {

// Context shown around a path: the enclosing sentence, but at most this many code points on
// each side of the spans.
constexpr int64_t kMaxContext = 30;

const char* const kReset = "\033[0m";
const char* const kBold = "\033[1m";
const char* const kDim = "\033[2m";
// One color per position in the path (head, tail, ...).
const char* const kSpanColors[] = {"\033[1;31m", "\033[1;32m", "\033[1;34m", "\033[1;35m", "\033[1;36m", "\033[1;33m"};

bool is_sentence_end(char32_t c) {
  return c == U'。' || c == U'！' || c == U'？' || c == U'!' || c == U'?' || c == U'；' || c == U';' ||
         c == U'\n';
}

bool is_marker(const Span& s) { return s.span == "[CLASSIFY]" || s.span == "[MULTICLASSIFY]"; }

// A span highlighted in the context: a real text range (not a classification marker).
bool valid_range(const Span& s, int64_t n) { return !is_marker(s) && s.start >= 0 && s.start < s.end && s.end <= n; }

std::string probability(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", p);
  return buf;
}

std::string visible(char32_t c) {
  if (c == U'\n' || c == U'\r' || c == U'\t') return " ";
  return code_points_to_utf8(std::u32string_view(&c, 1));
}

// The path's spans in their sentence, e.g. "…毕业于北大的[名古屋铁道]会长谷口清太郎…".
std::string context_line(const std::u32string& text, const Path& path, bool color) {
  const auto n = static_cast<int64_t>(text.size());
  int64_t lo = n, hi = 0;
  for (const Span& s : path) {
    if (!valid_range(s, n)) continue;
    lo = std::min(lo, s.start);
    hi = std::max(hi, s.end);
  }
  if (lo >= hi) return {};
  int64_t from = lo, to = hi;
  while (from > 0 && lo - from < kMaxContext && !is_sentence_end(text[static_cast<size_t>(from - 1)])) --from;
  while (to < n && to - hi < kMaxContext && !is_sentence_end(text[static_cast<size_t>(to - 1)])) ++to;
  // Which path element highlights each position (the first one covering it).
  std::vector<int> owner(static_cast<size_t>(to - from), -1);
  for (size_t k = path.size(); k-- > 0;) {
    const Span& s = path[k];
    if (!valid_range(s, n)) continue;
    for (int64_t i = std::max(s.start, from); i < std::min(s.end, to); ++i) owner[static_cast<size_t>(i - from)] = static_cast<int>(k);
  }
  std::string out = from > 0 && !is_sentence_end(text[static_cast<size_t>(from - 1)]) ? "…" : "";
  int current = -1;
  auto close = [&] {
    if (current >= 0) out += color ? kReset : "]";
  };
  for (int64_t i = from; i < to; ++i) {
    const int o = owner[static_cast<size_t>(i - from)];
    if (o != current) {
      close();
      if (o >= 0) out += color ? kSpanColors[static_cast<size_t>(o) % std::size(kSpanColors)] : "[";
      current = o;
    }
    out += visible(text[static_cast<size_t>(i)]);
  }
  close();
  if (to < n) out += "…";
  return out;
}

std::string type_chain(const Path& path) {
  std::string out;
  for (size_t k = 0; k < path.size(); ++k) out += (k ? " → " : "") + path[k].type;
  return out;
}

std::string path_line(const Path& path, bool color) {
  // Appends piece by piece: GCC 12 warns falsely (-Wrestrict) on `"literal" + std::string`.
  std::string spans, offsets, probs;
  for (size_t k = 0; k < path.size(); ++k) {
    const Span& s = path[k];
    if (k) {
      spans += " → ";
      probs += ' ';
    }
    if (is_marker(s)) {  // classification: the label is the type
      spans += color ? std::string(kBold) + s.type + kReset : s.type;
    } else {
      const std::string shown = s.span.empty() ? "\"\"" : s.span;  // e.g. a span linked to [SEP]
      spans += color ? kSpanColors[k % std::size(kSpanColors)] + shown + kReset : shown;
      if (!offsets.empty()) offsets += ' ';
      offsets += '[';
      offsets += std::to_string(s.start);
      offsets += ',';
      offsets += std::to_string(s.end);
      offsets += ')';
    }
    probs += probability(s.probability);
  }
  std::string line = "  ";
  line += spans;
  if (!offsets.empty()) {
    line += "  ";
    line += offsets;
  }
  line += "  ";
  line += color ? std::string(kDim) + "p=" + probs + kReset : "p=" + probs;
  return line;
}

}  // namespace

std::string pretty_result(const std::string& text, const Result& result, bool color) {
  const std::u32string cps = utf8_to_code_points(text, "text");
  std::string out;
  // Groups in the order their first path appears.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Path*>> groups;
  for (const Path& p : result.paths) {
    const std::string key = type_chain(p);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&p);
  }
  if (result.paths.empty()) out += "(nothing found)\n";
  for (const std::string& key : order) {
    const auto& paths = groups[key];
    out += (color ? std::string(kBold) : "") + key + (color ? kReset : "") + " (" + std::to_string(paths.size()) + ")\n";
    for (const Path* p : paths) {
      out += path_line(*p, color) + "\n";
      const std::string context = context_line(cps, *p, color);
      if (!context.empty()) out += "      " + context + "\n";
    }
  }
  return out;
}

}  // namespace rexnlu::apps
