#include "backends/cpu/dnnl_matmul.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backends/least_recent.h"
#include "rexnlu/error.h"

#if defined(REXNLU_BLAS_DNNL)
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace rexnlu::backends::cpu {

#if defined(REXNLU_BLAS_DNNL)

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

struct PackedMatmulWeights {
  MatmulKind kind;
  int in = 0, out = 0;
  dnnl::memory::desc desc;  // {in, out} in the primitive's layout
  dnnl::memory memory;      // the reordered copy; empty where desc is the plain layout
  std::string impl;         // what oneDNN runs on it (at 128 rows)
};

namespace {

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dt src_type(MatmulKind k) {
  return k == MatmulKind::kU8S8S32 ? dt::u8 : k == MatmulKind::kBF16F32 ? dt::bf16 : dt::f32;
}
dt wei_type(MatmulKind k) {
  return k == MatmulKind::kU8S8S32 ? dt::s8 : k == MatmulKind::kBF16F32 ? dt::bf16 : dt::f32;
}
dt dst_type(MatmulKind k) { return k == MatmulKind::kU8S8S32 ? dt::s32 : dt::f32; }

// W [out, in] row-major is oneDNN's {in, out} with tag ba.
dnnl::memory::desc plain_weights(MatmulKind k, int in, int out) { return {{in, out}, wei_type(k), tag::ba}; }

dnnl::matmul::primitive_desc make_pd(MatmulKind k, int rows, int in, int out, int ldy, bool bias,
                                     const dnnl::memory::desc& wei, MatmulPostOp post = MatmulPostOp::kNone) {
  const dnnl::memory::desc src({rows, in}, src_type(k), tag::ab);
  const dnnl::memory::desc dst({rows, out}, dst_type(k), dims{ldy, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per calling thread (run_matmul): re-entrant
  if (post == MatmulPostOp::kGeluErf) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::desc d = bias ? dnnl::matmul::desc(src, wei, dnnl::memory::desc({1, out}, dt::f32, tag::ab), dst)
                                    : dnnl::matmul::desc(src, wei, dst);
  return dnnl::matmul::primitive_desc(d, attr, cpu_engine());
}

bool is_reference(const dnnl::matmul::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).find("ref") != std::string::npos;
}

struct Primitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  bool packed = false;  // runs on the packed weights (else on the plain ones)
};

// Every primitive made, by (kind, rows, in, out, ldy, bias, packed, post-op), with its last use.
// Each holds its own JIT code: unbounded, a service whose packed batches bring a new row count
// with nearly every call grew by ~0.2-0.4 MB per new row count, for as long as it ran.
struct PrimitiveCache {
  struct Entry {
    std::shared_ptr<const Primitive> primitive;
    uint64_t last_use = 0;
  };
  std::map<std::tuple<int, int, int, int, int, bool, bool, int>, Entry> entries;
  uint64_t clock = 0;
};
std::mutex& cache_mutex() {
  static std::mutex mutex;
  return mutex;
}
PrimitiveCache& primitive_cache() {
  static PrimitiveCache cache;
  return cache;
}

std::string shape(int rows, int in, int out) {
  return "rows=" + std::to_string(rows) + " in=" + std::to_string(in) + " out=" + std::to_string(out);
}

// The primitive for one shape, made on first use and kept while it is among the
// kMaxMatmulPrimitives most recently used. With packed weights it takes their layout, unless
// oneDNN would run that on its reference kernel: then the plain layout (its gemm-based kernel).
// Shared ownership: a primitive evicted by another thread stays alive until its call returns.
std::shared_ptr<const Primitive> cached_primitive(MatmulKind k, int rows, int in, int out, int ldy, bool bias,
                                                  const PackedMatmulWeights* packed, MatmulPostOp post) {
  const std::lock_guard<std::mutex> lock(cache_mutex());
  PrimitiveCache& cache = primitive_cache();
  const auto key =
      std::make_tuple(static_cast<int>(k), rows, in, out, ldy, bias, packed != nullptr, static_cast<int>(post));
  auto it = cache.entries.find(key);
  if (it != cache.entries.end()) {
    it->second.last_use = ++cache.clock;
    return it->second.primitive;
  }
  auto p = std::make_shared<Primitive>();
  bool have = false;
  if (packed != nullptr && packed->memory) {
    p->pd = make_pd(k, rows, in, out, ldy, bias, packed->desc, post);
    p->packed = have = !is_reference(p->pd);
  }
  if (!have) p->pd = make_pd(k, rows, in, out, ldy, bias, plain_weights(k, in, out), post);
  p->prim = dnnl::matmul(p->pd);
  if (cache.entries.size() >= kMaxMatmulPrimitives)  // the least recently used goes
    erase_least_recent(cache.entries, [](const PrimitiveCache::Entry& e) { return e.last_use; });
  cache.entries.emplace(key, PrimitiveCache::Entry{p, ++cache.clock});
  return p;
}

// The calling thread's scratchpad (attr scratchpad_mode::user), grown as needed.
dnnl::memory& scratchpad(const dnnl::memory::desc& need) {
  thread_local dnnl::memory mem;
  thread_local size_t size = 0;
  if (need.get_size() > size) {
    size = need.get_size();
    mem = dnnl::memory(dnnl::memory::desc({static_cast<dnnl::memory::dim>(size)}, dt::u8, tag::a), cpu_engine());
  }
  return mem;
}

}  // namespace

std::shared_ptr<const PackedMatmulWeights> pack_matmul_weights(MatmulKind kind, const void* w, int out, int in) {
  auto p = std::make_shared<PackedMatmulWeights>();
  p->kind = kind;
  p->in = in;
  p->out = out;
  try {
    // The layout oneDNN prefers for 128 rows (its blocked layouts depend on the ISA, the types and
    // the weight shape, not on the row count).
    const bool bias = kind != MatmulKind::kU8S8S32;
    const dnnl::memory::desc any({in, out}, wei_type(kind), tag::any);
    const auto pd = make_pd(kind, 128, in, out, out, bias, any);
    p->desc = pd.weights_desc();
    p->impl = pd.impl_info_str();
    const dnnl::memory::desc plain = plain_weights(kind, in, out);
    if (p->desc == plain) return p;  // nothing to reorder: matmul() reads w itself
    p->memory = dnnl::memory(p->desc, cpu_engine());
    dnnl::memory src(plain, cpu_engine(), const_cast<void*>(w));
    dnnl::stream stream(cpu_engine());
    dnnl::reorder(src, p->memory).execute(stream, src, p->memory);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw InternalError("pack_matmul_weights: oneDNN " + shape(128, in, out) + ": " + e.what());
  }
  return p;
}

void matmul(MatmulKind kind, const void* x, int rows, int in, const void* w, const PackedMatmulWeights* packed,
            const float* bias, int out, void* y, int ldy, MatmulPostOp post) {
  if (rows <= 0 || out <= 0) return;
  if (packed != nullptr && (packed->out != out || packed->in != in))
    throw InternalError("oneDNN matmul " + shape(rows, in, out) + ": packed weights are [" +
                        std::to_string(packed->out) + ", " + std::to_string(packed->in) + "]");
  try {
    const std::shared_ptr<const Primitive> held = cached_primitive(kind, rows, in, out, ldy, bias != nullptr, packed, post);
    const Primitive& p = *held;
    // W for a plain-layout primitive where the packed copy is the only one (no shape of the models
    // here on AVX-512 or AVX2; outputs into wider rows in tests/ops): for this call only (gemm.cpp).
    std::vector<std::byte> unpacked;
    if (!p.packed && w == nullptr) {
      if (packed == nullptr) throw InternalError("oneDNN matmul " + shape(rows, in, out) + ": no weights");
      unpacked.resize(p.pd.weights_desc().get_size());
      unpack_matmul_weights(*packed, unpacked.data());
      w = unpacked.data();
    }
    auto& eng = cpu_engine();
    dnnl::stream stream(eng);
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, dnnl::memory(p.pd.src_desc(), eng, const_cast<void*>(x))},
        {DNNL_ARG_WEIGHTS, p.packed ? packed->memory : dnnl::memory(p.pd.weights_desc(), eng, const_cast<void*>(w))},
        {DNNL_ARG_DST, dnnl::memory(p.pd.dst_desc(), eng, y)}};
    if (p.pd.scratchpad_desc().get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(p.pd.scratchpad_desc()));
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(p.pd.bias_desc(), eng, const_cast<float*>(bias)));
    p.prim.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw InternalError("oneDNN matmul " + shape(rows, in, out) + ": " + e.what());
  }
}

size_t cached_matmul_primitives() {
  const std::lock_guard<std::mutex> lock(cache_mutex());
  return primitive_cache().entries.size();
}

int packed_out_features(const PackedMatmulWeights& packed) { return packed.out; }

void unpack_matmul_weights(const PackedMatmulWeights& packed, void* w) {
  try {
    dnnl::memory dst(plain_weights(packed.kind, packed.in, packed.out), cpu_engine(), w);
    if (!packed.memory)
      throw InternalError("unpack_matmul_weights: " + shape(128, packed.in, packed.out) +
                          ": nothing was packed (the plain weights are the only copy)");
    dnnl::stream stream(cpu_engine());
    dnnl::memory src = packed.memory;  // (a handle: execute() takes it by non-const reference)
    dnnl::reorder(src, dst).execute(stream, src, dst);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw InternalError("unpack_matmul_weights: oneDNN " + shape(128, packed.in, packed.out) + ": " + e.what());
  }
}

std::string matmul_impl_name(const PackedMatmulWeights& packed) {
  return packed.impl + (packed.memory ? ", weights packed at load" : ", plain weights");
}

bool is_packed(const PackedMatmulWeights& packed) { return static_cast<bool>(packed.memory); }

#else  // no oneDNN: the callers check int8_available() / bf16_available() first

struct PackedMatmulWeights {};

std::shared_ptr<const PackedMatmulWeights> pack_matmul_weights(MatmulKind, const void*, int, int) { return nullptr; }

void matmul(MatmulKind, const void*, int, int, const void*, const PackedMatmulWeights*, const float*, int, void*, int,
            MatmulPostOp) {
  throw InternalError("oneDNN matmul: this build has no oneDNN");
}

size_t cached_matmul_primitives() { return 0; }

int packed_out_features(const PackedMatmulWeights&) { return 0; }

void unpack_matmul_weights(const PackedMatmulWeights&, void*) {
  throw InternalError("unpack_matmul_weights: this build has no oneDNN");
}

std::string matmul_impl_name(const PackedMatmulWeights&) { return "no oneDNN"; }

bool is_packed(const PackedMatmulWeights&) { return false; }

#endif

}  // namespace rexnlu::backends::cpu
