// A backend: one device's memory and execution context. It owns the scratch workspace of the
// forward passes, the worker threads (CPU) or the stream (CUDA), and decides how weights are
// stored. Ops (src/ops) take a Backend& and dispatch to its device's kernels; the network code
// only ever sees Backend, Tensor and TensorRef, never a device.
//
// Adding a backend (e.g. CUDA): a subclass in src/backends/<device>/, its kernels next to it, a
// case in make_backend() and in each op's dispatch (src/ops/*.cpp). Tests in tests/ops run every op
// on every backend available_backends() returns against the same reference loops.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "rexnlu/load_options.h"
#include "tensor/tensor.h"
#include "tensor/tensor_ref.h"
#include "tensor/workspace.h"

namespace rexnlu::backends {

// Where a linear layer sits (Backend::make_linear_as).
enum class LinearRole {
  kOther,
  kAttentionOutput,  // an attention block's output projection
  kFfnOutput,  // a feed-forward block's output layer (its input: GELU of the widest activations)
  kLinkHead,   // the link head's q/k projection (its outputs meet in dot products over the whole width)
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  Device device() const { return device_; }
  Precision precision() const { return precision_; }
  // The storage type of the activations a network keeps between ops (hidden states, the layers'
  // intermediates, constants it computes for them at load): F32, or where the device computes in
  // 16 bits (CUDA at fp16 / bf16) that type. The ops accept F32 or this type for them; their
  // arithmetic (accumulation, layer-norm statistics, softmax) stays fp32 either way.
  virtual DType activation_type() const { return DType::kF32; }
  virtual std::string describe() const = 0;  // for logs and `rexnlu info`: device, threads, libraries

  // ---- scratch memory of a forward pass (on the device)
  // Starts a pass: the previous pass's scratch is reused, the thread count applied.
  virtual void begin_pass();
  // Uninitialised scratch valid until the next begin_pass() or the end of the enclosing
  // Workspace::Frame on workspace().
  TensorRef alloc(DType dtype, std::initializer_list<int64_t> shape);
  Workspace& workspace() { return workspace_; }

  // Runs `body`, which only enqueues device work on this backend (ops on device memory: no
  // upload, download or host decision on device data) and releases its scratch (it runs inside
  // a Workspace::Frame). A device backend may record it the first times it sees `key` and later
  // REPLAY the recording instead of calling body: `key` must name everything that shapes the
  // work (sizes; the inputs' device addresses follow from them when the pass allocates in the
  // same order). CPU: calls body.
  virtual void run_recorded(const std::string& key, const std::function<void()>& body);
  // Whether run_recorded may replay recordings (CUDA with graphs on): callers then gain from
  // passes of fewer distinct shapes (RexUniNluModel pads single sequences; models/rex).
  virtual bool replays_recordings() const { return false; }

  // ---- moving data between the host and the device
  // `host` as the ops can read it: `host` itself on the CPU, a scratch copy on a device.
  virtual ConstTensorRef upload(ConstTensorRef host) = 0;
  // upload() of every part, in order; a device backend copies them all in ONE transfer (a pass's
  // inputs: ids, positions and one mask per sequence were 3 + B copies, each a DMA of its own).
  virtual std::vector<ConstTensorRef> upload_all(const std::vector<ConstTensorRef>& hosts);
  // Where an op may write a result that must end up in `host` (then call download()): `host`
  // itself on the CPU, scratch on a device.
  virtual TensorRef output_for(TensorRef host) = 0;
  // Copies `src` into host memory `host` (same shape); nothing to do when they are the same memory.
  virtual void download(ConstTensorRef src, TensorRef host) = 0;
  // `bytes` of host memory (64-byte aligned, uninitialised) valid until the next begin_pass(), for
  // a pass's results on their way back before the caller splits them up: a device copies into it
  // directly (page-locked memory on CUDA, which also stages upload()).
  virtual void* host_scratch(size_t bytes) { return host_staging_.alloc<std::byte>(bytes); }

  // ---- persistent memory (weights, constants computed at load)
  Tensor alloc_tensor(DType dtype, std::initializer_list<int64_t> shape);  // uninitialised
  Tensor copy_of(ConstTensorRef host);  // a contiguous device copy of host memory
  // The same stored as `type`: host F32 rounded to F16 / BF16 (to nearest even) where this backend
  // keeps such tensors (CUDA: make_linear, the conv taps at activation_type()); `type` ==
  // host.dtype is copy_of. Throws rexnlu::Error (kInternal) for a conversion it does not do.
  virtual Tensor copy_as(ConstTensorRef host, DType type);
  Linear plain_linear(ConstTensorRef weight, ConstTensorRef bias);  // F32 W and bias as given, copied
  // A linear layer's weights (host F32 W [out, in], bias [out] or empty) in the layout this
  // backend uses for precision(): F32 here; int8 + per-channel scale or F16/BF16 where supported.
  virtual Linear make_linear(ConstTensorRef weight, ConstTensorRef bias);
  // The same for a layer of `role`: a backend may keep the layers whose error the outputs amplify
  // most above precision() where that costs little (CpuBackend at int8). Default: make_linear.
  virtual Linear make_linear_as(LinearRole role, ConstTensorRef weight, ConstTensorRef bias);

 protected:
  // `allocator`: the workspace's device memory; `host_allocator`: host_scratch()'s memory.
  Backend(Device device, Precision precision, Workspace::Allocator allocator,
          Workspace::Allocator host_allocator = Workspace::host_allocator())
      : device_(device), precision_(precision), workspace_(allocator), host_staging_(host_allocator) {}
  // Device memory that lives as long as the returned owner (aligned host memory on the CPU).
  virtual std::shared_ptr<void> allocate_persistent(size_t bytes) = 0;
  // Host -> device copy of a contiguous block (memcpy on the CPU).
  virtual void copy_from_host(const void* host, void* device, size_t bytes) = 0;

 private:
  Device device_;
  Precision precision_;
  Workspace workspace_;
  Workspace host_staging_;
};

// The backend for `options`, or rexnlu::Error (kInvalidInput) naming what this build cannot do,
// e.g. "device cuda: this build has no CUDA backend".
std::unique_ptr<Backend> make_backend(const LoadOptions& options);

// Every device this build can run on (the op tests run each of them).
std::vector<Device> available_devices();

}  // namespace rexnlu::backends
