#include "backends/cuda/cuda_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/cuda/device.h"
#include "backends/cuda/ops.h"
#include "backends/least_recent.h"
#include "rexnlu/error.h"

namespace rexnlu::backends::cuda {

namespace {

constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;  // cuBLASLt scratch (gemm.h)

// The precision, once the device and precision are known to be usable (runs before Backend's
// constructor, so a refused device allocates nothing).
Precision checked(int index, Precision precision) {
  const std::string device = "device cuda:" + std::to_string(index);
  if (precision != Precision::kFloat32 && precision != Precision::kFloat16 && precision != Precision::kBFloat16)
    throw InputError("precision " + std::string(precision_name(precision)) + ": the CUDA backend computes in fp32, fp16 or bf16");
  const DeviceInfo info = probe_device(index);
  if (!info.usable) throw InputError(device + ": " + info.reason);
  check(cudaSetDevice(index), "cudaSetDevice");
  return precision;
}

Workspace::Allocator device_allocator() {
  return {[](size_t bytes) { return device_malloc(bytes); }, [](void* p) { device_free(p); }, "GPU memory"};
}

// host_scratch() and upload()'s staging: page-locked, so that copies to and from the device are
// DMA without the driver's own staging (a pageable upload also waits for the stream first). Where
// the system refuses page-locked memory, ordinary memory (the same results, slower copies).
Workspace::Allocator pinned_allocator() {
  return {[](size_t bytes) -> void* {
            void* p = nullptr;
            if (cudaMallocHost(&p, bytes) == cudaSuccess) return p;
            cudaGetLastError();  // not sticky: clear it
            return std::aligned_alloc(64, bytes);  // Workspace blocks are multiples of 64 bytes
          },
          [](void* p) {
            cudaPointerAttributes a{};
            if (cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeHost) {
              cudaFreeHost(p);
            } else {
              cudaGetLastError();
              std::free(p);
            }
          },
          "page-locked host memory"};
}

DType storage_type(Precision p) {
  return p == Precision::kFloat16 ? DType::kF16 : p == Precision::kBFloat16 ? DType::kBF16 : DType::kF32;
}

// An environment switch of two values: "" where `name` is unset or empty, else its value, which
// must be `a` or `b` (anything else: an InputError "name=value: " + expected).
std::string env_choice(const char* name, const char* a, const char* b, const std::string& expected) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return {};
  const std::string value(v);
  if (value != a && value != b) throw InputError(std::string(name) + "=" + value + ": " + expected);
  return value;
}

}  // namespace

struct CudaBackend::Graph {
  cudaGraphExec_t exec = nullptr;
  uint64_t generation = 0;
  uint64_t last_use = 0;  // for evicting the least recently replayed one
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

CudaBackend::CudaBackend(int device_index, Precision precision)
    : Backend(Device::kCuda, checked(device_index, precision), device_allocator(), pinned_allocator()),
      index_(device_index) {
  // Read first: a bad value throws before anything is created.
  if (const std::string k = env_choice("REXNLU_CUDA_ATTENTION", "fa", "wmma",
                                       "expected fa (the flash kernel where it applies, the default) or wmma");
      !k.empty())
    attention_kernel_ = k == "fa" ? TensorCoreKernel::kFlash : TensorCoreKernel::kWmma;
  if (const std::string split = env_choice(
          "REXNLU_CUDA_FA_SPLIT", "auto", "off",
          "expected auto (the default: the flash attention kernel splits each row block's keys over 4 blocks "
          "where its grid has fewer blocks than SMs and the longest sequence more than 96 tokens) or off (never: the unsplit "
          "kernel's bits at every grid)");
      !split.empty())
    fa_split_ = split == "auto" ? FlashSplit::kAuto : FlashSplit::kOff;
  if (const std::string shuffle = env_choice(
          "REXNLU_CUDA_FA_SHUFFLE", "on", "off",
          "expected on (the default: the flash attention kernel gathers the position terms of contiguous "
          "positions by warp shuffles) or off (always through shared memory; the same bits)");
      !shuffle.empty())
    fa_shuffle_ = shuffle == "on";
  // REXNLU_CUDA_GELU (cuda_backend.h): unset = the epilogue at fp16 only, tanh = at bf16 too, erf = never.
  const std::string gelu_choice =
      env_choice("REXNLU_CUDA_GELU", "tanh", "erf",
                 "expected tanh (the GELU in the 16-bit products' epilogue, at fp16 and bf16) or erf (the exact GELU, "
                 "a separate kernel); unset: the epilogue at fp16, the exact kernel at bf16");
  const std::string graphs = env_choice("REXNLU_CUDA_GRAPHS", "0", "1",
                                        "expected 1 (record each forward as a CUDA graph and replay it, the default) or 0 "
                                        "(launch every kernel each call)");
  // REXNLU_CUDA_VERIFY=1 (ops/cuda_verify.h) copies results back after each op: no recording then.
  const std::string verify = env_choice("REXNLU_CUDA_VERIFY", "0", "1",
                                        "expected 0 (the default) or 1 (debugging: every linear layer and attention call "
                                        "checked against the host, ops/cuda_verify.h)");
  verify_ops_ = verify == "1";
  graphs_enabled_ = graphs != "0" && !verify_ops_;
  // 16-bit activations at fp16/bf16 unless REXNLU_CUDA_16BIT_ACTIVATIONS=0 (cuda_backend.h).
  fp32_activations_ = env_choice("REXNLU_CUDA_16BIT_ACTIVATIONS", "0", "1",
                                 "expected 1 (activations stored in the 16-bit type at fp16 / bf16, the default) or 0 "
                                 "(fp32 activations)") == "0";
  if (const std::string mma = env_choice("REXNLU_CUDA_MMA_ATTENTION", "0", "1",
                                         "expected 1 (the tensor-core attention wherever it applies) or 0 (never: the "
                                         "fp32-math kernel); unset: the tensor-core kernel at fp16 and bf16");
      !mma.empty())
    attention_tensor_cores_ = mma == "1" ? 1 : 0;
  const std::string gemm_algo = env_choice(
      "REXNLU_CUDA_GEMM_ALGO", "bucket", "shape",
      "expected bucket (the default: cuBLASLt's heuristic asked once per power-of-two bucket of row counts, its "
      "algorithm reused for the bucket's other shapes) or shape (asked for every new shape)");
  const DeviceInfo info = probe_device(index_);
  // sm_90+ only: below, griddepcontrol does not exist (the kernels compile it out, types.cuh).
  programmatic_launch_ = info.cc_major >= 9;
  if (const std::string pdl = env_choice(
          "REXNLU_CUDA_PDL", "0", "1",
          "expected 1 (programmatic dependent launch on sm_90+, the default) or 0 (plain launches)");
      !pdl.empty())
    programmatic_launch_ = pdl == "1" && info.cc_major >= 9;
  name_ = cuda::describe(info);
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  set_programmatic_launch(programmatic_launch_);  // before copy_as's conversions; again per pass
  blas_ = std::make_unique<Blas>(gemm_algo == "shape" ? AlgoChoice::kPerShape : AlgoChoice::kPerBucket);
  blas_workspace_bytes_ = kBlasWorkspaceBytes;
  blas_workspace_ = allocate_persistent(blas_workspace_bytes_);
  // Only where the FFN's intermediate is stored in 16 bits (fp32 stays bit for bit the exact GELU).
  // bf16 only when asked: on the H200 its epilogue was 4.7 bf16 ulps off the exact GELU at one
  // small shape (test_ops Ops16Test.LinearReadsAndWritesSixteenBitsAndF32, docs/architecture.md).
  const bool gelu_wanted = gelu_choice == "tanh" || (gelu_choice.empty() && compute_type() == DType::kF16);
  gelu_epilogue_ = gelu_wanted && compute_type() != DType::kF32 && !fp32_activations_;
}

CudaBackend::~CudaBackend() {
  graphs_.clear();
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

CudaBackend& CudaBackend::of(Backend& backend) {
  if (backend.device() != Device::kCuda) throw InternalError("CudaBackend::of: not a CUDA backend");
  return static_cast<CudaBackend&>(backend);
}

std::string CudaBackend::describe() const {
  const std::string_view activations = activation_type() == DType::kF32 ? "fp32" : precision_name(precision());
  // The tensor-core attention kernel at fp16/bf16 (ops.h: the flash one needs 16-bit activations
  // and head_dim 64, else WMMA; fp32 runs the CUDA-core kernel).
  const std::string attention = precision() == Precision::kFloat32 ? ""
                                : attention_kernel_ == TensorCoreKernel::kFlash && !fp32_activations_
                                    ? std::string(", flash attention where it applies") +
                                          (fa_split_ == FlashSplit::kOff ? " (key split off)" : "") +
                                          (fa_shuffle_ ? "" : " (shuffles off)")
                                    : ", WMMA attention";
  return "cuda:" + std::to_string(index_) + ", " + name_ + ", " + std::string(precision_name(precision())) +
         " weights, " + std::string(activations) + " activations, cuBLASLt" + attention +
         (gelu_epilogue_ ? ", GELU in the GEMM epilogue (tanh form)" : "") +
         (programmatic_launch_ ? ", programmatic dependent launch" : "");
}

void CudaBackend::begin_pass() {
  check(cudaSetDevice(index_), "cudaSetDevice");
  // The previous pass's copies from and into the host staging must be over before it is reused;
  // a pass normally ends with a wait for its results (synchronize()), so there is nothing to wait for.
  if (!staging_settled_) synchronize("CudaBackend::begin_pass");
  set_programmatic_launch(programmatic_launch_);  // this backend's setting for its pass (common.h: process-wide)
  Backend::begin_pass();
}

void* CudaBackend::host_scratch(size_t bytes) {
  staging_settled_ = false;  // the caller may copy into or out of it on the stream
  return Backend::host_scratch(bytes);
}

void CudaBackend::synchronize(const char* what) {
  check(cudaStreamSynchronize(stream_), what);
  staging_settled_ = true;
}

void CudaBackend::run_recorded(const std::string& key, const std::function<void()>& body) {
  const Workspace::Frame frame(workspace());
  const uint64_t generation = workspace().generation();
  if (!graphs_enabled_) return body();
  if (auto it = graphs_.find(key); it != graphs_.end()) {
    if (it->second->generation == generation) {
      it->second->last_use = ++graph_uses_;
      check(cudaGraphLaunch(it->second->exec, stream_), "CudaBackend::run_recorded (launch)");
      return;
    }
    graphs_.erase(it);  // the workspace moved: the recorded addresses are stale
  }
  if (passes_seen_.size() > 4096) passes_seen_.clear();
  if (passes_seen_[key]++ == 0) return body();  // first pass of this shape: plans, workspace growth
  if (graphs_.size() >= kMaxGraphs)  // bounded: shapes come and go; the least recently replayed goes
    erase_least_recent(graphs_, [](const std::unique_ptr<Graph>& g) { return g->last_use; });
  ++graphs_recorded_;
  cudaGraph_t graph = nullptr;
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), "CudaBackend::run_recorded (capture)");
  try {
    body();
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  check(cudaStreamEndCapture(stream_, &graph), "CudaBackend::run_recorded (end capture)");
  auto g = std::make_unique<Graph>();
  g->generation = generation;
  g->last_use = ++graph_uses_;
  const cudaError_t made = cudaGraphInstantiate(&g->exec, graph, 0);
  cudaGraphDestroy(graph);
  check(made, "CudaBackend::run_recorded (instantiate)");
  check(cudaGraphLaunch(g->exec, stream_), "CudaBackend::run_recorded (launch)");
  if (workspace().generation() == generation) graphs_[key] = std::move(g);
}

ConstTensorRef CudaBackend::upload(ConstTensorRef host) {
  if (!host.contiguous()) throw InternalError("CudaBackend::upload: " + rexnlu::describe(host) + " is not contiguous");
  const size_t bytes = static_cast<size_t>(host.numel()) * dtype_size(host.dtype);
  void* p = workspace().alloc<std::byte>(bytes);
  ConstTensorRef d = host;
  d.device = Device::kCuda;
  d.data = static_cast<const std::byte*>(p);
  // Through the pass's page-locked staging (copied there before the call returns: `host` may
  // change after), so the copy is an asynchronous DMA, not a wait for the stream.
  if (bytes) {
    void* staged = host_scratch(bytes);
    std::memcpy(staged, host.data, bytes);
    check(cudaMemcpyAsync(p, staged, bytes, cudaMemcpyHostToDevice, stream_), "CudaBackend::upload");
  }
  return d;
}

std::vector<ConstTensorRef> CudaBackend::upload_all(const std::vector<ConstTensorRef>& hosts) {
  // The parts back to back (each at a 64-byte boundary) in one device block and one page-locked
  // staging block: one copy for them all.
  constexpr size_t kAlign = 64;
  std::vector<size_t> at(hosts.size());
  size_t total = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!hosts[i].contiguous())
      throw InternalError("CudaBackend::upload_all: " + rexnlu::describe(hosts[i]) + " is not contiguous");
    at[i] = total;
    total += (static_cast<size_t>(hosts[i].numel()) * dtype_size(hosts[i].dtype) + kAlign - 1) / kAlign * kAlign;
  }
  auto* device = workspace().alloc<std::byte>(total);
  auto* staged = static_cast<std::byte*>(total ? host_scratch(total) : nullptr);
  std::vector<ConstTensorRef> out(hosts.begin(), hosts.end());
  for (size_t i = 0; i < hosts.size(); ++i) {
    const size_t bytes = static_cast<size_t>(hosts[i].numel()) * dtype_size(hosts[i].dtype);
    if (bytes) std::memcpy(staged + at[i], hosts[i].data, bytes);
    out[i].device = Device::kCuda;
    out[i].data = device + at[i];
  }
  if (total) check(cudaMemcpyAsync(device, staged, total, cudaMemcpyHostToDevice, stream_), "CudaBackend::upload_all");
  return out;
}

TensorRef CudaBackend::output_for(TensorRef host) {
  TensorRef d = host;
  d.device = Device::kCuda;
  d.data = static_cast<std::byte*>(workspace().alloc<std::byte>(static_cast<size_t>(host.numel()) * dtype_size(host.dtype)));
  return d;
}

void CudaBackend::download(ConstTensorRef src, TensorRef host) {
  if (src.dtype != host.dtype || src.numel() != host.numel() || !src.contiguous() || !host.contiguous() ||
      src.device != Device::kCuda)
    throw InternalError("CudaBackend::download: " + rexnlu::describe(src) + " into " + rexnlu::describe(host));
  const size_t bytes = static_cast<size_t>(src.numel()) * dtype_size(src.dtype);
  if (bytes) check(cudaMemcpyAsync(host.data, src.data, bytes, cudaMemcpyDeviceToHost, stream_), "CudaBackend::download");
  synchronize("CudaBackend::download");
}

Linear CudaBackend::make_linear(ConstTensorRef weight, ConstTensorRef bias) {
  const DType type = storage_type(precision());
  if (type == DType::kF32) return Backend::make_linear(weight, bias);
  Linear l;
  l.weight = copy_as(weight, type);
  if (!bias.empty()) {
    l.bias = copy_of(bias);          // for fp32 outputs (the link head's q|k)
    l.bias_16 = copy_as(bias, type);  // for outputs of W's type (the encoder's activations)
  }
  return l;
}

Tensor CudaBackend::copy_as(ConstTensorRef host, DType type) {
  if (type == host.dtype) return copy_of(host);
  if (host.dtype != DType::kF32 || !host.contiguous() || (type != DType::kF16 && type != DType::kBF16))
    throw InternalError("CudaBackend::copy_as: " + rexnlu::describe(host) + " as " + std::string(dtype_name(type)) +
                        ": only contiguous F32 to F16 or BF16");
  // fp32 on the device (copy_of waits for the copy on stream_), rounded there into the persistent
  // 16-bit copy on the same stream, waited for before the fp32 copy is released.
  const Tensor f32 = copy_of(host);
  TensorRef r(nullptr, type, {}, Device::kCuda);
  r.rank = host.rank;
  r.shape = host.shape;
  r.strides = host.strides;
  std::shared_ptr<void> storage = allocate_persistent(static_cast<size_t>(host.numel()) * dtype_size(type));
  r.data = static_cast<std::byte*>(storage.get());
  convert(DType::kF32, f32.ref().data, type, r.data, static_cast<size_t>(host.numel()), stream_);
  synchronize("CudaBackend::copy_as");
  return Tensor(std::move(storage), r);
}

DType CudaBackend::activation_type() const { return fp32_activations_ ? DType::kF32 : compute_type(); }

DType CudaBackend::compute_type() const { return storage_type(precision()); }

void CudaBackend::gemm(const GemmArgs& args) {
  blas_->gemm(args, blas_workspace_.get(), blas_workspace_bytes_, stream_);
}

DeviceBatch CudaBackend::one_sequence(int length, const int32_t* positions, const uint8_t* mask) {
  struct Header {
    int32_t offsets[2];
    int32_t pad[2];
    int64_t mask_offset;
  };
  const Header h{{0, length}, {0, 0}, 0};
  auto* d = workspace().alloc<Header>(1);
  check(cudaMemcpyAsync(d, &h, sizeof h, cudaMemcpyHostToDevice, stream_), "CudaBackend::one_sequence");
  DeviceBatch b;
  b.num_sequences = 1;
  b.max_length = length;
  b.rows = length;
  b.offsets = d->offsets;
  b.mask_offsets = &d->mask_offset;
  b.position_ids = positions;
  b.masks = mask;
  b.mask_span = mask != nullptr ? static_cast<int64_t>(length) * length : 0;
  if (mask != nullptr && wants_mask_bits()) {  // and as bits (the flash kernel's)
    auto* words = workspace().alloc<uint32_t>(mask_bits_words(b));
    pack_mask_bits(b, words, stream_);
    b.mask_bits = words;
  }
  return b;
}

std::shared_ptr<void> CudaBackend::allocate_persistent(size_t bytes) {
  void* p = device_malloc(bytes == 0 ? 256 : bytes);
  if (p == nullptr)
    throw Error(ErrorKind::kOutOfMemory, "out of memory: could not allocate " + std::to_string(bytes) +
                                             " bytes of GPU memory on cuda:" + std::to_string(index_));
  return std::shared_ptr<void>(p, [](void* q) { device_free(q); });
}

void CudaBackend::copy_from_host(const void* host, void* device, size_t bytes) {
  // On stream_, then waited for. NOT cudaMemcpy: from pageable memory it returns before the DMA
  // into `device` has finished, on the legacy default stream, which stream_ (non-blocking) does
  // not wait for: make_linear's fp16/bf16 rounding kernel then read a partly copied weight,
  // often the bytes of the previous weight freed at the same address (issue 13's fp16/bf16 defect).
  if (bytes == 0) return;
  check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_), "CudaBackend::copy_from_host");
  synchronize("CudaBackend::copy_from_host");
}

}  // namespace rexnlu::backends::cuda
