// A packed batch's sequence boundaries and 2D masks as the packed ops (attention, conv) read
// them. pack_sequences() checks them and, on a device, copies what the kernels need there ONCE
// per forward (into the pass's workspace: call it outside the layers' frames), so that the ops
// themselves copy nothing from the host: a forward can then be recorded and replayed
// (Backend::run_recorded).
#pragma once

#include <cstddef>
#include <vector>

#include "backends/backend.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/common.h"
#endif

namespace rexnlu::ops {

struct PackedSequences {
  std::vector<int64_t> offsets;       // [B+1]: sequence b owns rows [offsets[b], offsets[b+1])
  std::vector<ConstTensorRef> masks;  // [B]: U8 [L_b, L_b] on the backend's device
  int max_length = 0;
  ConstTensorRef device_offsets;       // I32 [B+1] on the device (device backends only)
  ConstTensorRef device_mask_offsets;  // I64 [B]: bytes from mask_base to masks[b]
  const std::byte* mask_base = nullptr;
  int64_t mask_span = 0;           // bytes from mask_base to the end of the last mask (device backends)
  ConstTensorRef device_mask_bits;  // I32 words: the masks as bits at the same offsets (DeviceBatch::mask_bits)

  int num_sequences() const { return static_cast<int>(masks.size()); }
  int64_t rows() const { return offsets.back(); }
};

// On a CUDA device the masks go to the kernels also as bits (DeviceBatch::mask_bits): mask_bits where
// the caller has them (I32 words, bit k = the byte at mask_base + k, for masks written later on the
// device's stream: the caller uploaded them as bits), else, where the activations are 16-bit (the
// flash attention's, the only reader of the bits), packed here from the masks (into the pass's
// workspace, on the stream: the masks must hold their values by then); at fp32 none.
// Throws rexnlu::Error (kInternal) naming what is wrong: offsets not 0 .. rows ascending, an empty
// sequence, a mask of the wrong size, type or device, mask_bits too short.
PackedSequences pack_sequences(backends::Backend& be, std::vector<int64_t> offsets, std::vector<ConstTensorRef> masks,
                               ConstTensorRef mask_bits = {});

#if REXNLU_HAVE_CUDA
// The batch as the CUDA kernels take it (position ids: a device I32 [rows] or null).
backends::cuda::DeviceBatch device_batch(const PackedSequences& s, const int32_t* position_ids);
#endif

}  // namespace rexnlu::ops
