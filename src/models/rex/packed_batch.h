// A batch of sequences of different lengths, packed back to back without padding: token rows
// of all sequences form one [rows, hidden] matrix, so the dense layers run as single large
// products while attention, the conv layer and the head work per sequence, and no sequence
// can see another's tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "models/link_model.h"

namespace rexnlu::models {

struct PackedBatch {
  std::vector<int64_t> offsets;        // [B+1]: sequence b owns rows [offsets[b], offsets[b+1])
  std::vector<int32_t> ids;            // [rows]
  std::vector<int32_t> position_ids;   // [rows]
  std::vector<const uint8_t*> masks;   // [B]: the caller's L*L masks (not copied), or owned_masks'
  // Set by padded() only: 1 for the caller's tokens, 0 for padding ([rows]); the masks it built.
  std::vector<uint8_t> real;
  std::vector<std::vector<uint8_t>> owned_masks;

  int num_sequences() const { return static_cast<int>(masks.size()); }
  int rows() const { return static_cast<int>(offsets.back()); }
  int64_t offset(int b) const { return offsets[b]; }
  int length(int b) const { return static_cast<int>(offsets[b + 1] - offsets[b]); }

  // Validates every sequence (non-empty, ids < vocab_rows, one position and L*L mask entries
  // per token, position ids in [0, 2^20)) and throws rexnlu::Error (kInvalidInput) naming the
  // sequence and field. `batch` must outlive the result (masks are referenced).
  static PackedBatch pack(const std::vector<SequenceInput>& batch, int vocab_rows);

  // `batch` with each sequence's length rounded up to a multiple of `multiple` tokens (so that a
  // backend replaying recorded passes sees fewer distinct shapes). Padding tokens (id 0, positions
  // on from the sequence's last) follow each sequence's own tokens and are cut off from them: no
  // token attends to padding, padding attends to padding only, and `real` marks the tokens so that
  // the encoder zeroes padding's embeddings (the conv then sees zeros past the sequence's end, as
  // without padding). So the caller's tokens come out as without padding, at rows offset(b) ..
  // offset(b) + L_b of the padded batch. The result owns its masks: `batch` may go first.
  static PackedBatch padded(const PackedBatch& batch, int multiple);
};

}  // namespace rexnlu::models
