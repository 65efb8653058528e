// Element types of tensors read from checkpoints and used by kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rexnlu {

enum class DType : uint8_t { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF64: case DType::kI64: return 8;
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: case DType::kI16: return 2;
    case DType::kI8: case DType::kU8: case DType::kBool: return 1;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kF64: return "F64";
    case DType::kI64: return "I64";
    case DType::kI32: return "I32";
    case DType::kI16: return "I16";
    case DType::kI8: return "I8";
    case DType::kU8: return "U8";
    case DType::kBool: return "BOOL";
  }
  return "?";
}

}  // namespace rexnlu
