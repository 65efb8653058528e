// Link decoding of one window (spec 6 and 7): a span (head, tail) is extracted with a type iff
// the links head->tail, head->[TYPE] and [TYPE]->tail all hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/link_model.h"
#include "text/tokenizer.h"
#include "uie/marked_text.h"

namespace rexnlu::uie {

enum class DecodeMode {
  kExtract,        // all linked spans
  kClassify,       // the same links; confidence computed exactly as the original's cls path
  kClassifyBlank,  // "blank" fallback: the first text token with every type, no thresholds
};

// One window's prompt as decoding needs it.
struct WindowLayout {
  int32_t length = 0;                 // L
  int32_t first_text_token = 0;       // H = number of [CLS] hint [SEP] tokens
  const std::vector<text::Offset>* offsets = nullptr;  // per token; text tokens index the text
  const std::vector<int32_t>* slot_tokens = nullptr;   // [TYPE] token of each slot (-1: none)
  int text_version = 0;               // MarkedText insertions this window sees
};

struct Match {
  int slot = 0;                // index into the chunk's slots (hint order)
  int64_t start = 0, end = 0;  // code points; end < start when the tail is the final [SEP]
  std::u32string span;         // text[start:end] with Python slice semantics
  double probability = 0;      // mean of the three link probabilities, rounded to 4 decimals
};

// Matches in the original's order: span head, span tail, then slot (hint) order. Stops once it has
// more than `max_matches` (the caller's budget: a permissive threshold links O(L*L*types) spans).
std::vector<Match> decode_window(const float* logits, const WindowLayout& layout, const MarkedText& text,
                                 float threshold, DecodeMode mode, size_t max_matches = SIZE_MAX);

// The same from what the model returned for the window: its dense Z where it has one, else
// (extraction only) its links, which must be complete above `threshold`. The same matches as the
// dense Z gives. Throws rexnlu::Error (kInternal) when it lacks what `mode` reads.
std::vector<Match> decode_window(const models::SequenceLinks& z, const WindowLayout& layout, const MarkedText& text,
                                 float threshold, DecodeMode mode, size_t max_matches = SIZE_MAX);

// Python's round(x, 4) for the doubles it sees here (correctly rounded decimal, back to double).
double round4(double x);

}  // namespace rexnlu::uie
