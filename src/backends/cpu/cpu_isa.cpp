#include "backends/cpu/cpu_isa.h"

#include <cctype>
#include <cstdlib>
#include <string>

namespace rexnlu::backends::cpu {

namespace {

VecIsa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  VecIsa isa = VecIsa::kScalar;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isa = VecIsa::kAvx2;
  if (isa == VecIsa::kAvx2 && __builtin_cpu_supports("avx512f")) isa = VecIsa::kAvx512;
  if (const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA"); cap != nullptr && *cap != '\0') {
    std::string c(cap);
    for (char& ch : c) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    // oneDNN's names: SSE41, AVX, AVX2, AVX2_VNNI(_2), AVX512_CORE(...), AVX10_..., AMX_..., ALL.
    const bool up_to_avx2 = c.rfind("AVX2", 0) == 0;
    const bool below_avx2 = c == "SSE41" || c == "AVX";
    if (below_avx2) isa = VecIsa::kScalar;
    else if (up_to_avx2 && isa == VecIsa::kAvx512) isa = VecIsa::kAvx2;
  }
  return isa;
#else
  return VecIsa::kScalar;
#endif
}

}  // namespace

VecIsa vec_isa() {
  static const VecIsa isa = detect();
  return isa;
}

const char* vec_isa_name(VecIsa isa) {
  switch (isa) {
    case VecIsa::kAvx512: return "avx512";
    case VecIsa::kAvx2: return "avx2";
    default: return "scalar";
  }
}

}  // namespace rexnlu::backends::cpu
