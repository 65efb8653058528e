// Reader for torch.save() checkpoints (pytorch_model.bin) of a state dict: the zip format
// (torch >= 1.6) and the legacy pre-zip format. Only plain tensors of a (possibly ordered)
// dict are understood; the pickle is interpreted by a strict reader that executes nothing.
#pragma once

#include <filesystem>

#include "io/tensor_store.h"

namespace rexnlu::io {

// Throws rexnlu::Error: kIo when the file cannot be read, kInvalidModel naming the file and
// the problem (corrupt zip entry, unsupported pickle opcode or global, bad tensor layout...).
TensorStore load_pytorch_bin(const std::filesystem::path& path);

}  // namespace rexnlu::io
