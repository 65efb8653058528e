// Softmax with a 0/1 mask, as DeBERTa's XSoftmax: masked scores are filled with
// finfo(float32).min, softmax is taken, then masked outputs are set to 0. A row with every
// column masked therefore comes out all zeros (not uniform, not NaN).
#pragma once

#include <cstdint>

namespace rexnlu::backends::cpu {

// In place on scores[rows, cols] (row stride ld); mask[rows, cols] (row stride ld_mask),
// nonzero = keep. Runs on the calling thread (called per attention head).
void masked_softmax(float* scores, int rows, int cols, int ld, const uint8_t* mask, int ld_mask);

}  // namespace rexnlu::backends::cpu
