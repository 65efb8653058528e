#include "uie/decode.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rexnlu/error.h"

namespace rexnlu::uie {

double round4(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", x);  // glibc rounds the exact binary value, half-even
  return std::strtod(buf, nullptr);
}

namespace {

float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

// (p1 + p2 + p3) / 3 in float32, as the original's 0-d torch tensors compute it, then rounded.
double mean3(float p1, float p2, float p3) { return round4(static_cast<double>((p1 + p2 + p3) / 3.0f)); }

// The links of a window as the span loop reads them, from a dense Z [L*L] ...
struct DenseLinks {
  const float* z;
  int32_t L;
  float threshold;
  float at(int32_t r, int32_t c) const { return z[static_cast<size_t>(r) * L + c]; }
  // Whether r -> c is a link (Z > threshold), its logit in *v.
  bool link(int32_t r, int32_t c, float* v) const { return (*v = at(r, c)) > threshold; }
  // f(r, c, Z(r, c)) for every link with r >= H and c >= r, by row then column, until f says stop.
  template <class F>
  void each(int32_t H, F&& f) const {
    for (int32_t r = H; r < L; ++r)
      for (int32_t c = r; c < L; ++c)
        if (const float v = at(r, c); v > threshold && !f(r, c, v)) return;
  }
};

// ... or from the links alone (ordered by row, then column; complete above `threshold`).
struct SparseLinks {
  const std::vector<models::Link>& links;
  float threshold;
  std::vector<size_t> row_begin;  // [L+1]: row r's links are links[row_begin[r] .. row_begin[r+1])

  SparseLinks(const models::SequenceLinks& s, float t) : links(s.links), threshold(t), row_begin(s.length + 1, 0) {
    for (const models::Link& l : links) ++row_begin[l.row + 1];
    for (int32_t r = 0; r < s.length; ++r) row_begin[r + 1] += row_begin[r];
  }
  bool link(int32_t r, int32_t c, float* v) const {
    const auto end = links.begin() + static_cast<std::ptrdiff_t>(row_begin[r + 1]);
    const auto it = std::lower_bound(links.begin() + static_cast<std::ptrdiff_t>(row_begin[r]), end, c,
                                     [](const models::Link& l, int32_t col) { return l.col < col; });
    if (it == end || it->col != c) return false;
    *v = it->logit;
    return *v > threshold;
  }
  template <class F>
  void each(int32_t H, F&& f) const {
    if (H >= static_cast<int32_t>(row_begin.size()) - 1) return;
    for (size_t n = row_begin[H]; n < links.size(); ++n) {
      const models::Link& l = links[n];
      if (l.col >= l.row && l.logit > threshold && !f(l.row, l.col, l.logit)) return;
    }
  }
};

// The span loop (spec 6 and 7) over `links`; kClassify reads its probabilities from `dense`.
template <class Links>
std::vector<Match> decode_spans(const Links& links, const float* dense, const WindowLayout& w, const MarkedText& text,
                                DecodeMode mode, size_t max_matches) {
  const int32_t L = w.length;
  const auto& offsets = *w.offsets;
  const auto& slots = *w.slot_tokens;
  auto Z = [&](int32_t r, int32_t c) { return dense[static_cast<size_t>(r) * L + c]; };
  std::vector<Match> matches;

  auto emit = [&](int32_t head, int32_t tail, int slot, double probability) {
    int64_t start = offsets[head].start;
    const int64_t end = offsets[tail].end;
    for (;;) {  // skip leading spaces; past the end the original's IndexError drops the match
      auto c = text.at(start, w.text_version);
      if (!c) return;
      if (*c != U' ') break;
      ++start;
    }
    matches.push_back(Match{slot, start, end, text.slice(start, end, w.text_version), probability});
  };

  if (mode == DecodeMode::kClassifyBlank) {
    const int32_t H = w.first_text_token;
    if (H >= L) return matches;
    for (int s = 0; s < static_cast<int>(slots.size()); ++s) {
      const int32_t T = slots[s];
      if (T < 0) continue;
      emit(H, H, s, mean3(sigmoid(Z(H, H)), sigmoid(Z(T, H)), sigmoid(Z(H, T))));
    }
    return matches;
  }

  // Checking the budget before each link stops with the same matches as checking it before
  // every cell: they only grow at links.
  links.each(w.first_text_token, [&](int32_t r, int32_t c, float zrc) {
    if (matches.size() > max_matches) return false;
    for (int s = 0; s < static_cast<int>(slots.size()); ++s) {
      const int32_t T = slots[s];
      float zrt = 0.0f, ztc = 0.0f;
      if (T < 0 || !links.link(r, T, &zrt) || !links.link(T, c, &ztc)) continue;
      // The cls path reads the transposed cells (probs[0, col, row]); the sum is the same set of
      // cells only on the diagonal, so keep its exact order there. Extraction reports the
      // probabilities of the three links themselves.
      const double p = mode == DecodeMode::kClassify ? mean3(sigmoid(Z(c, r)), sigmoid(Z(T, r)), sigmoid(Z(c, T)))
                                                     : mean3(sigmoid(zrc), sigmoid(zrt), sigmoid(ztc));
      emit(r, c, s, p);
    }
    return true;
  });
  return matches;
}

}  // namespace

std::vector<Match> decode_window(const float* z, const WindowLayout& w, const MarkedText& text, float threshold,
                                 DecodeMode mode, size_t max_matches) {
  return decode_spans(DenseLinks{z, w.length, threshold}, z, w, text, mode, max_matches);
}

std::vector<Match> decode_window(const models::SequenceLinks& z, const WindowLayout& w, const MarkedText& text,
                                 float threshold, DecodeMode mode, size_t max_matches) {
  z.check("decode_window");
  if (z.length != w.length)
    throw InternalError("decode_window: the model's links are of a sequence of " + std::to_string(z.length) +
                        " tokens, the window has " + std::to_string(w.length));
  if (!z.dense.empty()) return decode_window(z.dense.data(), w, text, threshold, mode, max_matches);
  if (mode != DecodeMode::kExtract)
    throw InternalError("decode_window: the classification decode reads the whole Z; the model returned links only");
  if (!(z.threshold <= threshold))
    throw InternalError("decode_window: links above " + std::to_string(z.threshold) + " cannot be decoded at " +
                        std::to_string(threshold));
  return decode_spans(SparseLinks(z, threshold), nullptr, w, text, mode, max_matches);
}

}  // namespace rexnlu::uie
