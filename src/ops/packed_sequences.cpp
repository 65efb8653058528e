#include "ops/packed_sequences.h"

#include <algorithm>
#include <string>

#include "ops/check.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#endif

namespace rexnlu::ops {

PackedSequences pack_sequences(backends::Backend& be, std::vector<int64_t> offsets, std::vector<ConstTensorRef> masks,
                               ConstTensorRef mask_bits) {
  constexpr const char* op = "pack_sequences";
  const size_t B = masks.size();
  detail::expect(B > 0 && offsets.size() == B + 1 && offsets.front() == 0, op,
                 "offsets must hold 0 and one end per sequence");
  PackedSequences s;
  for (size_t b = 0; b < B; ++b) {
    const int64_t L = offsets[b + 1] - offsets[b];
    detail::expect(L > 0, op, "empty sequence");
    detail::expect_vector(op, "mask", masks[b], DType::kU8, L * L, be);
    s.max_length = std::max(s.max_length, detail::to_int(L));
  }
  s.offsets = std::move(offsets);
  s.masks = std::move(masks);
  if (be.device() != Device::kCpu) {
    // Offsets as the kernels read them; masks addressed from the lowest one (one address space).
    s.mask_base = s.masks[0].data;
    for (const ConstTensorRef& m : s.masks) s.mask_base = std::min(s.mask_base, m.data);
    const std::vector<int32_t> offsets32(s.offsets.begin(), s.offsets.end());
    std::vector<int64_t> mask_offsets(B);
    for (size_t b = 0; b < B; ++b) {
      mask_offsets[b] = s.masks[b].data - s.mask_base;
      s.mask_span = std::max<int64_t>(s.mask_span, mask_offsets[b] + s.masks[b].numel());
    }
    const std::vector<ConstTensorRef> uploaded = be.upload_all(  // one copy for both
        {host_ref(offsets32.data(), {static_cast<int64_t>(B + 1)}),
         ConstTensorRef(reinterpret_cast<const std::byte*>(mask_offsets.data()), DType::kI64, {static_cast<int64_t>(B)})});
    s.device_offsets = uploaded[0];
    s.device_mask_offsets = uploaded[1];
    const int64_t words = (s.mask_span + 31) / 32;
    if (!mask_bits.empty()) {
      detail::expect_vector(op, "mask_bits", mask_bits, DType::kI32, mask_bits.numel(), be);
      if (mask_bits.numel() < words)
        detail::fail(op, "mask_bits holds " + std::to_string(mask_bits.numel()) + " words, the masks need " +
                             std::to_string(words));
      s.device_mask_bits = mask_bits;
    }
#if REXNLU_HAVE_CUDA
    if (mask_bits.empty() && be.device() == Device::kCuda && backends::cuda::CudaBackend::of(be).wants_mask_bits()) {
      const TensorRef packed = be.alloc(DType::kI32, {words});
      backends::cuda::pack_mask_bits(device_batch(s, nullptr), reinterpret_cast<uint32_t*>(packed.data),
                                     backends::cuda::CudaBackend::of(be).stream());
      s.device_mask_bits = packed;
    }
#endif
  }
  return s;
}

#if REXNLU_HAVE_CUDA
backends::cuda::DeviceBatch device_batch(const PackedSequences& s, const int32_t* position_ids) {
  backends::cuda::DeviceBatch b;
  b.num_sequences = s.num_sequences();
  b.max_length = s.max_length;
  b.rows = detail::to_int(s.rows());
  b.offsets = s.device_offsets.i32();
  b.mask_offsets = reinterpret_cast<const int64_t*>(s.device_mask_offsets.data);
  b.position_ids = position_ids;
  b.masks = reinterpret_cast<const uint8_t*>(s.mask_base);
  b.mask_bits = reinterpret_cast<const uint32_t*>(s.device_mask_bits.data);
  b.mask_span = s.mask_span;
  return b;
}
#endif

}  // namespace rexnlu::ops
