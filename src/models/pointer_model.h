// The interface between the SiameseUIE pipeline (src/uie/siamese_*) and a pointer-network model
// (models/siamese_uie): text windows go through the lower ("siamese") encoder layers once per
// request; each (hint, window) pair then runs the joint upper layers and the start/end head.
// The counterpart of LinkModel (link_model.h) for the token-pair family.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace rexnlu::models {

// Lower-layer output of one text window: [L*H] row-major, on the host.
using TextStates = std::vector<float>;

// One (hint, text window) pair.
struct PointerInput {
  std::shared_ptr<const TextStates> text;  // the window's encode_texts() output
  int32_t text_length = 0;                 // L of the window (its real tokens)
  std::vector<int32_t> hint_ids;           // [CLS] hint [SEP]
  int32_t hint_first_position = 0;         // position id of the hint's first token
  int32_t length() const { return text_length + static_cast<int32_t>(hint_ids.size()); }
};

// Start ("head") and end ("tail") logits of every text token of the window: [L] each.
struct PointerLogits {
  std::vector<float> head, tail;
};

class PointerModel {
 public:
  virtual ~PointerModel() = default;
  // Lower layers over each window alone (token type 0, positions 0..L-1).
  virtual std::vector<TextStates> encode_texts(const std::vector<std::vector<int32_t>>& windows) = 0;
  // Hints through the lower layers (token type 1, positions from hint_first_position), then
  // [window ; hint] through the upper layers and the head. Padding is internal: a pair's result
  // never depends on the others.
  virtual std::vector<PointerLogits> forward(const std::vector<PointerInput>& batch) = 0;
  // Number of forward() calls so far (encode_texts() calls not counted).
  virtual int64_t forward_calls() const = 0;
};

}  // namespace rexnlu::models
