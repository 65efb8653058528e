// Measured fp32 peak of this CPU: independent FMA chains in vector registers (no memory
// traffic), one chain set per thread, for 256-bit (AVX2) and, where the compiler targets it,
// 512-bit (AVX-512) FMAs. The benchmarks quote their GFLOP/s as a share of these numbers.
//   fp32_peak [max_threads]
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

// 12 independent accumulators (explicit, so they live in registers) hide the 4-cycle FMA
// latency on 2 FMA ports.
template <typename V, V (*Fma)(V, V, V), V (*Set1)(float)>
__attribute__((noinline)) float fma_chains(long iters) {
  V a0 = Set1(0.1f), a1 = Set1(0.2f), a2 = Set1(0.3f), a3 = Set1(0.4f), a4 = Set1(0.5f), a5 = Set1(0.6f);
  V a6 = Set1(0.7f), a7 = Set1(0.8f), a8 = Set1(0.9f), a9 = Set1(1.0f), a10 = Set1(1.1f), a11 = Set1(1.2f);
  const V m = Set1(0.999999f), c = Set1(1e-7f);
  for (long it = 0; it < iters; ++it) {
    a0 = Fma(a0, m, c); a1 = Fma(a1, m, c); a2 = Fma(a2, m, c); a3 = Fma(a3, m, c);
    a4 = Fma(a4, m, c); a5 = Fma(a5, m, c); a6 = Fma(a6, m, c); a7 = Fma(a7, m, c);
    a8 = Fma(a8, m, c); a9 = Fma(a9, m, c); a10 = Fma(a10, m, c); a11 = Fma(a11, m, c);
  }
  // Every chain feeds the result, so none can be dropped.
  const V sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
  return sum[0];
}

__m256 fma256(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
__m256 set256(float x) { return _mm256_set1_ps(x); }
#ifdef __AVX512F__
__m512 fma512(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
__m512 set512(float x) { return _mm512_set1_ps(x); }
#endif

template <typename F>
void measure(const char* name, int lanes, int max_threads, F&& f) {
  const long iters = 50'000'000L;
  for (int t = 1; t <= max_threads; ++t) {
    double best = 1e30;
    volatile float sink = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      float s = 0;
#pragma omp parallel num_threads(t) reduction(+ : s)
      s += f(iters);
      sink = sink + s;
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double flops = double(iters) * 12 * lanes * 2 * t;  // 12 FMAs per iteration, 2 FLOP per lane
    std::printf("fp32 FMA peak, %s, %d thread(s): %.1f GFLOP/s\n", name, t, flops / best * 1e-9);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int max_threads = argc > 1 ? std::atoi(argv[1]) : omp_get_num_procs();
  measure("AVX2 256-bit", 8, max_threads, fma_chains<__m256, fma256, set256>);
#ifdef __AVX512F__
  measure("AVX-512", 16, max_threads, fma_chains<__m512, fma512, set512>);
#endif
  return 0;
}
