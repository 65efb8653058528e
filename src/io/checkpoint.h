// The weights of a model directory, and the check that they are the tensors an architecture
// needs (names, shapes, dtypes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/tensor_store.h"
#include "tensor/dtype.h"

namespace rexnlu::io {

// Loads model_dir/model.safetensors if present, else model_dir/pytorch_model.bin.
// Throws rexnlu::Error (kInvalidModel) naming the directory and both files when neither exists.
TensorStore load_checkpoint(const std::filesystem::path& model_dir);

// "safetensors", "PyTorch zip (torch.save)" or "PyTorch legacy pickle (torch.save)", for `rexnlu info`.
std::string checkpoint_format(const std::filesystem::path& file);

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  // Optional: what the expected number of rows (dim 0) stands for, e.g.
  // "vocab.txt + 4 added tokens = 12804 tokens"; added to the message when dim 0 differs.
  std::string rows_meaning = {};
};

// Checks that every spec'd tensor is present with its dtype and shape. Throws ONE
// rexnlu::Error (kInvalidModel) listing every missing tensor and every wrong shape or dtype.
// Returns the names of tensors in the store that no spec asks for (the caller may warn).
std::vector<std::string> validate_tensors(const TensorStore& store, const std::vector<TensorSpec>& specs);

// The steps of validate_tensors, for a loader that checks tensor by tensor as it declares them:
// check_tensor appends the problems of one spec (returns true when there are none);
// throw_tensor_problems throws the one error listing them all (nothing when there are none);
// unused_tensors lists the store's tensors no spec names.
bool check_tensor(const TensorStore& store, const TensorSpec& spec, std::vector<std::string>& missing,
                  std::vector<std::string>& wrong);
void throw_tensor_problems(const TensorStore& store, const std::vector<std::string>& missing,
                           const std::vector<std::string>& wrong);
std::vector<std::string> unused_tensors(const TensorStore& store, const std::vector<TensorSpec>& specs);

// Reads every F32 value of the spec'd tensors once. A NaN or infinity is an error (kInvalidModel)
// naming the tensor, the element and the value: such a model answers nothing. Weight tensors
// (all but biases) that hold only zeros are returned as ONE warning message (empty if none),
// since an untrained or zeroed checkpoint loads but finds nothing.
std::vector<std::string> check_tensor_values(const TensorStore& store, const std::vector<TensorSpec>& specs);

}  // namespace rexnlu::io
