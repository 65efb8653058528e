#include "ops/attention.h"

#include <algorithm>
#include <cstddef>

#include "backends/cpu/disentangled_attention.h"
#include "ops/check.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#include "ops/cuda_verify.h"
#endif

namespace rexnlu::ops {

using detail::to_int;

namespace {

// Everything but the mask: dtypes, devices, shapes and strides of q, k, v, q_rel, k_rel, out, position_ids.
void check_rows(const char* op, const DisentangledAttention& a, const backends::Backend& be) {
  const int64_t L = a.q.rows(), width = a.q.cols(), rel_rows = a.q_rel.rows();
  const DType type = detail::activation_dtype(op, "q", a.q, be);  // one storage type for all six
  for (auto [name, t] : {std::pair{"q", a.q}, {"k", a.k}, {"v", a.v}, {"q_rel", a.q_rel}, {"k_rel", a.k_rel}})
    detail::expect_matrix(op, name, t, type, be);
  detail::expect_matrix(op, "out", a.out, type, be);
  detail::expect(a.k.rows() == L && a.v.rows() == L && a.out.rows() == L && a.k_rel.rows() == rel_rows, op,
                 "row counts of q, k, v, out or q_rel, k_rel differ");
  detail::expect(a.k.cols() == width && a.v.cols() == width && a.out.cols() == width && a.q_rel.cols() == width &&
                     a.k_rel.cols() == width && a.num_heads > 0 && width % a.num_heads == 0,
                 op, "widths of q, k, v, out, q_rel, k_rel differ or are not a multiple of num_heads");
  detail::expect(a.q.ld() == a.k.ld() && a.q.ld() == a.v.ld() && a.q_rel.ld() == a.k_rel.ld(), op,
                 "q, k, v (and q_rel, k_rel) must share a row stride");
  detail::expect_vector(op, "position_ids", a.position_ids, DType::kI32, L, be);
}

#if REXNLU_HAVE_CUDA
// The CUDA kernel's arguments for the sequences of `batch` (checked by check_rows and the mask checks),
// with the flash kernel's key-split scratch (REXNLU_CUDA_FA_SPLIT=auto, the default) from `ws`: call inside a
// Workspace::Frame.
backends::cuda::AttentionArgs cuda_args(const DisentangledAttention& a, const backends::cuda::DeviceBatch& batch,
                                        const backends::cuda::CudaBackend& cb, Workspace& ws) {
  backends::cuda::AttentionArgs c;
  c.type = a.q.dtype;
  c.compute = cb.compute_type();
  c.tensor_cores = cb.attention_tensor_cores();
  c.tc_kernel = cb.attention_kernel();
  c.fa_split = cb.fa_split();
  c.fa_shuffle = cb.fa_shuffle();
  c.batch = batch;
  c.num_heads = a.num_heads;
  c.head_dim = to_int(a.q.cols() / a.num_heads);
  c.q = a.q.data;
  c.k = a.k.data;
  c.v = a.v.data;
  c.ld_qkv = to_int(a.q.ld());
  c.q_rel = a.q_rel.data;
  c.k_rel = a.k_rel.data;
  c.ld_rel = to_int(a.q_rel.ld());
  c.rel_rows = to_int(a.q_rel.rows());
  c.scale = a.scale;
  c.out = a.out.data;
  c.ld_out = to_int(a.out.ld());
  if (const size_t bytes = backends::cuda::attention_fa_workspace_bytes(c); bytes > 0) {
    c.fa_workspace = ws.alloc<std::byte>(bytes);
    c.fa_workspace_bytes = bytes;
  }
  return c;
}
#endif

}  // namespace

void disentangled_attention(backends::Backend& be, const DisentangledAttention& a) {
  constexpr const char* op = "disentangled_attention";
  const int64_t L = a.q.rows(), width = a.q.cols(), rel_rows = a.q_rel.rows();
  check_rows(op, a, be);
  detail::expect_vector(op, "mask", a.mask, DType::kU8, L * L, be);
  switch (be.device()) {
    case Device::kCpu: {
      const Workspace::Frame frame(be.workspace());
      backends::cpu::DisentangledAttentionArgs c;
      c.length = to_int(L);
      c.num_heads = a.num_heads;
      c.head_dim = to_int(width / a.num_heads);
      c.q = a.q.f32();
      c.k = a.k.f32();
      c.v = a.v.f32();
      c.ld_qkv = to_int(a.q.ld());
      c.q_rel = a.q_rel.f32();
      c.k_rel = a.k_rel.f32();
      c.ld_rel = to_int(a.q_rel.ld());
      c.rel_rows = to_int(rel_rows);
      c.position_ids = a.position_ids.i32();
      c.mask = a.mask.u8();
      c.scale = a.scale;
      c.out = a.out.f32();
      c.ld_out = to_int(a.out.ld());
      c.scratch_floats = backends::cpu::disentangled_attention_scratch_floats(c);
      c.scratch = be.workspace().alloc<float>(c.scratch_floats);
      backends::cpu::disentangled_attention(c);
      return;
    }
#if REXNLU_HAVE_CUDA
    case Device::kCuda: {
      auto& cb = backends::cuda::CudaBackend::of(be);
      const Workspace::Frame frame(be.workspace());
      const backends::cuda::DeviceBatch one = cb.one_sequence(to_int(L), a.position_ids.i32(), a.mask.u8());
      const backends::cuda::AttentionArgs args = cuda_args(a, one, cb, be.workspace());
      backends::cuda::disentangled_attention(args, cb.stream());
      if (cb.verifies_ops()) cuda_verify::attention(args, cb.stream());
      return;
    }
#endif
    default:
      detail::no_kernel(op, be);
  }
}

void disentangled_attention(backends::Backend& be, const DisentangledAttention& a, const PackedSequences& seqs) {
  constexpr const char* op = "disentangled_attention (packed)";
  const size_t B = seqs.masks.size();
  detail::expect(seqs.offsets.size() == B + 1 && seqs.offsets.back() == a.q.rows(), op,
                 "the sequences' rows must add up to the row count of q");
#if REXNLU_HAVE_CUDA
  if (be.device() == Device::kCuda) {
    // Every sequence in ONE launch (pack_sequences checked the masks and put the tables on the device).
    check_rows(op, a, be);
    auto& cb = backends::cuda::CudaBackend::of(be);
    const Workspace::Frame frame(be.workspace());  // the key split's scratch (cuda_args)
    const backends::cuda::AttentionArgs args = cuda_args(a, device_batch(seqs, a.position_ids.i32()), cb, be.workspace());
    backends::cuda::disentangled_attention(args, cb.stream());
    if (cb.verifies_ops()) cuda_verify::attention(args, cb.stream());
    return;
  }
#endif
  for (size_t b = 0; b < B; ++b) {
    const int64_t row0 = seqs.offsets[b], len = seqs.offsets[b + 1] - seqs.offsets[b];
    DisentangledAttention s = a;
    s.q = a.q.slice(row0, len);
    s.k = a.k.slice(row0, len);
    s.v = a.v.slice(row0, len);
    s.position_ids = a.position_ids.slice(row0, len);
    s.mask = seqs.masks[b];
    s.out = a.out.slice(row0, len);
    disentangled_attention(be, s);
  }
}

}  // namespace rexnlu::ops
