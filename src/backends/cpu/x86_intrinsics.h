// The x86 intrinsics for our own vector kernels (functions compiled per ISA with
// __attribute__((target(...))) and picked at run time by vec_isa(), cpu_isa.h). Defines
// REXNLU_X86_KERNELS to 1 on x86-64 (0 elsewhere: callers fall back to their scalar code).
//
// Include it in .cpp files only: it also silences -W(maybe-)uninitialized for the rest of the
// file, where GCC 12's AVX-512 headers start results from _mm512_undefined_*() (`__m512 __Y =
// __Y;`) and the warning fires once those are inlined: a false positive of the headers.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#define REXNLU_X86_KERNELS 1
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#else
#define REXNLU_X86_KERNELS 0
#endif
