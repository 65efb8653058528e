// One prompt sequence [CLS] hint [SEP] text_window [SEP]: position ids reset per prompt segment
// (spec 5.3) and the 2D prompt-isolation mask (spec 5.4).
#pragma once

#include <cstdint>
#include <vector>

#include "models/link_model.h"
#include "text/tokenizer.h"
#include "uie/hints.h"

namespace rexnlu::uie {

struct SpecialIds {
  int32_t cls = 1, sep = 2, prefix = 12800, type = 12801;
  static SpecialIds of(const text::Tokenizer& tokenizer);
};

// Segments the ids exactly as build_position_ids_attn_mask does (scanning every token, so a
// literal [PREFIX]/[TYPE] inside the text opens a segment there too) and fills position_ids
// and mask of `seq` from seq.ids.
void fill_positions_and_mask(models::SequenceInput& seq, const SpecialIds& special);

models::SequenceInput make_sequence(std::vector<int32_t> ids, const SpecialIds& special);

// Index in the window (= 1 + index in the hint's own tokens) of each slot's [TYPE] token, found
// as the original does: the last hint token whose offset starts at the slot's char_pos; -1 when
// none does.
std::vector<int32_t> type_token_indices(const text::Encoding& hint_raw, const HintChunk& chunk);

}  // namespace rexnlu::uie
