// IEEE half (F16) and bfloat16 (BF16) to float, exact for every value (subnormals, infinities and
// NaN included): checkpoints stored in 16 bits are widened to F32 at load. And float to bf16,
// rounded to nearest even, for --precision bf16 on the CPU.
#pragma once

#include <bit>
#include <cstdint>

namespace rexnlu {

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  const uint32_t bits = exponent == 0x1f ? sign | 0x7f800000u | (mantissa << 13)           // Inf / NaN
                                         : sign | ((exponent + 112u) << 23) | (mantissa << 13);  // rebias 15 -> 127
  return std::bit_cast<float>(bits);
}

inline float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float v) {
  uint32_t bits = std::bit_cast<uint32_t>(v);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace rexnlu
