// A strict reader of the pickles torch.save writes for a state dict. It executes nothing:
// only the opcodes torch emits are understood, and only a fixed list of globals (OrderedDict,
// the tensor rebuild functions, the torch.*Storage types) may appear. Anything else is an
// error naming the opcode or global, so a malicious checkpoint cannot run code.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace rexnlu::io {

// A storage as named by a persistent id ('storage', torch.XStorage, key, location, numel).
struct TorchStorageRef {
  std::string key;
  DType dtype = DType::kF32;
  int64_t numel = 0;  // in elements
};

// The arguments of torch._utils._rebuild_tensor_v2. Only their types are checked here;
// the checkpoint reader checks contiguity and bounds, where it knows the tensor's name.
struct TorchTensorRef {
  std::string storage_key;
  DType dtype = DType::kF32;
  int64_t storage_offset = 0;  // in elements
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;  // in elements
};

struct PickleValue {
  enum class Kind { kNone, kBool, kInt, kBigInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor };
  Kind kind = Kind::kNone;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string text;                  // kString; kGlobal "module.name"; kBigInt: little-endian bytes
  std::vector<PickleValue*> items;   // kTuple, kList; kDict: key, value, key, value... (in order)
  TorchStorageRef storage;           // kStorage
  TorchTensorRef tensor;             // kTensor
};

const char* kind_name(PickleValue::Kind kind);

class PickleReader {
 public:
  // `context` names the pickle in messages ("pytorch_model.bin: archive/data.pkl").
  explicit PickleReader(std::string context) : context_(std::move(context)) {}

  // Unpickles one pickle starting at `bytes[0]`; returns its value, owned by this reader.
  // `consumed` receives the number of bytes up to and including STOP.
  // Throws rexnlu::Error (kInvalidModel) on truncation, an unsupported opcode or global,
  // a malformed stack, or a tensor that is not contiguous.
  const PickleValue* read(std::span<const std::byte> bytes, uint64_t* consumed = nullptr);

  // Every storage referenced by the pickles read so far, by key.
  const std::map<std::string, TorchStorageRef>& storages() const { return storages_; }

 private:
  std::string context_;
  std::deque<PickleValue> arena_;  // owns every value (the memo may form cycles); stable addresses
  std::map<std::string, TorchStorageRef> storages_;
};

}  // namespace rexnlu::io
