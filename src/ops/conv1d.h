// Conv1d with kernel 3, padding 1 (zeros outside the sequence), stride 1, one group, as
// DeBERTa-v2's ConvLayer uses it along the token axis.
#pragma once

#include <vector>

#include "backends/backend.h"
#include "ops/packed_sequences.h"
#include "tensor/tensor.h"

namespace rexnlu::ops {

// The weights as three [out, in] tap matrices: tap k multiplies token t + k - 1.
struct Conv1dK3Weights {
  Tensor taps;  // [3, out, in], of the type of the conv's x and y: F32 or the backend's activation type
  Tensor bias;  // F32 [out]; may be empty
};

// What the conv writes in place of y's rows after the bias (the Rex encoder's conv block, fused into
// the GPU's combining kernel): rows with keep[t] == 0 as zeros, the others as the exact GELU of y
// where gelu_erf is set (GELU(0) = 0: masking before or after the GELU is the same).
struct Conv1dK3Epilogue {
  ConstTensorRef keep{};  // U8 [rows of y], optional
  bool gelu_erf = false;
};

// torch's Conv1d weight [out, in, 3] (host) -> the taps layout above (host).
std::vector<float> conv1d_k3_taps(const float* torch_weight, int64_t out, int64_t in);

// y [L, out] = conv(x [L, in]) over ONE sequence of L tokens (contiguous rows); x, y and the taps
// of one type (F32, or the backend's activation type: fp32 sums of the 16-bit products).
void conv1d_k3(backends::Backend& be, ConstTensorRef x, const Conv1dK3Weights& w, TensorRef y,
               const Conv1dK3Epilogue& epilogue = {});

// The same over every sequence of a packed batch (sequence b owns rows [offsets[b], offsets[b+1])
// of x and y, zero padding at each sequence's own ends): the GPU runs one product and one
// combining kernel for the whole batch (copying nothing from the host), the CPU one sequence
// after another.
void conv1d_k3(backends::Backend& be, ConstTensorRef x, const Conv1dK3Weights& w, TensorRef y,
               const PackedSequences& seqs, const Conv1dK3Epilogue& epilogue = {});

}  // namespace rexnlu::ops
