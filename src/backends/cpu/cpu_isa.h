// Which vector extension our own intrinsic kernels use on this CPU, chosen at run time (the
// binary may be built for a baseline x86-64 and run on AVX2-only or AVX-512 machines).
// ONEDNN_MAX_CPU_ISA caps it as it caps oneDNN (e.g. =AVX2 runs the AVX2 kernels on an AVX-512
// CPU), so one variable tests both libraries' lower paths.
#pragma once

namespace rexnlu::backends::cpu {

enum class VecIsa { kScalar, kAvx2, kAvx512 };

VecIsa vec_isa();  // decided once per process
const char* vec_isa_name(VecIsa isa);

}  // namespace rexnlu::backends::cpu
