#include "io/pytorch_checkpoint.h"

#include "rexnlu/error.h"

namespace rexnlu::io {

TensorStore load_pytorch_bin(const std::filesystem::path& path) {
  throw ModelError(path.string() + ": pytorch_model.bin reading is not implemented yet");
}

}  // namespace rexnlu::io
