#include "models/rex/packed_batch.h"

#include <algorithm>
#include <string>

#include "rexnlu/error.h"

namespace rexnlu::models {

namespace {
constexpr int32_t kMaxPositionId = 1 << 20;  // far above any real prompt; keeps pos_i - pos_j in int range
}

PackedBatch PackedBatch::pack(const std::vector<SequenceInput>& batch, int vocab_rows) {
  PackedBatch p;
  p.offsets.reserve(batch.size() + 1);
  p.offsets.push_back(0);
  p.masks.reserve(batch.size());
  for (size_t b = 0; b < batch.size(); ++b) {
    const SequenceInput& s = batch[b];
    const std::string where = "sequence " + std::to_string(b) + " of the batch: ";
    const size_t L = s.ids.size();
    if (L == 0) throw InputError(where + "no tokens");
    if (s.position_ids.size() != L)
      throw InputError(where + std::to_string(s.position_ids.size()) + " position ids for " +
                       std::to_string(L) + " tokens");
    if (s.mask.size() != L * L)
      throw InputError(where + "attention mask has " + std::to_string(s.mask.size()) +
                       " entries, expected L*L = " + std::to_string(L * L));
    for (size_t t = 0; t < L; ++t) {
      if (s.ids[t] < 0 || s.ids[t] >= vocab_rows)
        throw InputError(where + "token " + std::to_string(t) + " has id " + std::to_string(s.ids[t]) +
                         ", outside the embedding table [0, " + std::to_string(vocab_rows) + ")");
      if (s.position_ids[t] < 0 || s.position_ids[t] >= kMaxPositionId)
        throw InputError(where + "token " + std::to_string(t) + " has position id " +
                         std::to_string(s.position_ids[t]) + ", outside [0, 2^20)");
    }
    p.ids.insert(p.ids.end(), s.ids.begin(), s.ids.end());
    p.position_ids.insert(p.position_ids.end(), s.position_ids.begin(), s.position_ids.end());
    p.masks.push_back(s.mask.data());
    p.offsets.push_back(p.offsets.back() + static_cast<int64_t>(L));
  }
  return p;
}

PackedBatch PackedBatch::padded(const PackedBatch& batch, int multiple) {
  if (multiple < 1) throw InternalError("PackedBatch::padded: multiple " + std::to_string(multiple));
  PackedBatch p;
  p.offsets.push_back(0);
  for (int b = 0; b < batch.num_sequences(); ++b) {
    const int L = batch.length(b);
    const int padded = (L + multiple - 1) / multiple * multiple;
    const auto from = batch.offsets[b], to = batch.offsets[b + 1];
    p.ids.insert(p.ids.end(), batch.ids.begin() + from, batch.ids.begin() + to);
    p.ids.resize(p.ids.size() + static_cast<size_t>(padded - L), 0);
    p.position_ids.insert(p.position_ids.end(), batch.position_ids.begin() + from, batch.position_ids.begin() + to);
    for (int k = 0; k < padded - L; ++k) p.position_ids.push_back(batch.position_ids[to - 1] + 1 + k);
    p.real.resize(p.real.size() + static_cast<size_t>(L), 1);
    p.real.resize(p.real.size() + static_cast<size_t>(padded - L), 0);
    std::vector<uint8_t>& m = p.owned_masks.emplace_back(static_cast<size_t>(padded) * padded, uint8_t{0});
    const uint8_t* src = batch.masks[b];
    for (int i = 0; i < L; ++i) std::copy(src + static_cast<size_t>(i) * L, src + static_cast<size_t>(i + 1) * L,
                                          m.begin() + static_cast<ptrdiff_t>(i) * padded);
    for (int i = L; i < padded; ++i)
      std::fill(m.begin() + static_cast<ptrdiff_t>(i) * padded + L, m.begin() + static_cast<ptrdiff_t>(i + 1) * padded,
                uint8_t{1});
    p.offsets.push_back(p.offsets.back() + padded);
  }
  for (const std::vector<uint8_t>& m : p.owned_masks) p.masks.push_back(m.data());
  return p;
}

}  // namespace rexnlu::models
