#include "uie/decode.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

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

}  // namespace

std::vector<Match> decode_window(const float* z, const WindowLayout& w, const MarkedText& text, float threshold,
                                 DecodeMode mode, size_t max_matches) {
  const int32_t L = w.length, H = w.first_text_token;
  const auto& offsets = *w.offsets;
  const auto& slots = *w.slot_tokens;
  auto Z = [&](int32_t r, int32_t c) { return z[static_cast<size_t>(r) * L + c]; };
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
    if (H >= L) return matches;
    for (int s = 0; s < static_cast<int>(slots.size()); ++s) {
      const int32_t T = slots[s];
      if (T < 0) continue;
      emit(H, H, s, mean3(sigmoid(Z(H, H)), sigmoid(Z(T, H)), sigmoid(Z(H, T))));
    }
    return matches;
  }

  for (int32_t r = H; r < L; ++r) {
    for (int32_t c = r; c < L; ++c) {
      if (matches.size() > max_matches) return matches;
      if (!(Z(r, c) > threshold)) continue;
      for (int s = 0; s < static_cast<int>(slots.size()); ++s) {
        const int32_t T = slots[s];
        if (T < 0 || !(Z(r, T) > threshold) || !(Z(T, c) > threshold)) continue;
        // The cls path reads the transposed cells (probs[0, col, row]); the sum is the same set of
        // cells only on the diagonal, so keep its exact order there. Extraction reports the
        // probabilities of the three links themselves.
        const double p = mode == DecodeMode::kClassify
                             ? mean3(sigmoid(Z(c, r)), sigmoid(Z(T, r)), sigmoid(Z(c, T)))
                             : mean3(sigmoid(Z(r, c)), sigmoid(Z(r, T)), sigmoid(Z(T, c)));
        emit(r, c, s, p);
      }
    }
  }
  return matches;
}

}  // namespace rexnlu::uie
