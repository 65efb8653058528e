// Reader for the safetensors format (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, then the
// raw tensor bytes. Tensors are zero-copy views into a memory map of the file.
#pragma once

#include <filesystem>

#include "io/tensor_store.h"

namespace rexnlu::io {

// Throws rexnlu::Error: kIo when the file cannot be read, kInvalidModel (naming the file and
// the tensor or byte offset) when it is truncated or its header is malformed or inconsistent.
TensorStore load_safetensors(const std::filesystem::path& path);

}  // namespace rexnlu::io
