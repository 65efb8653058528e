// Which BLAS for kernels::cpu::gemm? Times sgemm on the encoder's shapes (C = A · W^T, W the
// [N,K] nn.Linear weight) for one library, loaded with dlopen so that every variant runs through
// the same code in its own process:
//   blas_choice openblas-pthread | openblas-openmp | dnnl      [threads=2]
// Two threading modes each: "lib" = the library's own threading with `threads` threads;
// "split" = the library single-threaded, columns of C split over an OpenMP team (what
// kernels::cpu::gemm does).
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                            float, float*, int);
using SetThreads = void (*)(int);
using DnnlSgemm = int (*)(char, char, long, long, long, float, const float*, long, const float*, long,
                          float, float*, long);

CblasSgemm cblas_sgemm_fn = nullptr;
SetThreads openblas_set_threads = nullptr;
DnnlSgemm dnnl_sgemm_fn = nullptr;

void sgemm(int M, int N, int K, const float* A, const float* B, float* C, int ldc) {
  if (dnnl_sgemm_fn) {
    dnnl_sgemm_fn('N', 'T', M, N, K, 1.0f, A, K, B, K, 0.0f, C, ldc);
  } else {
    cblas_sgemm_fn(101 /*RowMajor*/, 111 /*NoTrans*/, 112 /*Trans*/, M, N, K, 1.0f, A, K, B, K, 0.0f, C, ldc);
  }
}

void *open_or_die(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    std::exit(2);
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string lib = argc > 1 ? argv[1] : "openblas-pthread";
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  if (lib == "dnnl") {
    dnnl_sgemm_fn = reinterpret_cast<DnnlSgemm>(dlsym(open_or_die("libdnnl.so.2"), "dnnl_sgemm"));
  } else {
    const std::string path = "/usr/lib/x86_64-linux-gnu/" + lib + "/libopenblas.so.0";
    void* h = open_or_die(path.c_str());
    cblas_sgemm_fn = reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
    openblas_set_threads = reinterpret_cast<SetThreads>(dlsym(h, "openblas_set_num_threads"));
  }
  omp_set_num_threads(threads);

  struct Shape { const char* name; int N, K; };
  const Shape shapes[] = {{"qkv   N=2304 K=768 ", 2304, 768}, {"attn  N=768  K=768 ", 768, 768},
                          {"ffn1  N=3072 K=768 ", 3072, 768}, {"ffn2  N=768  K=3072", 768, 3072}};
  std::printf("%s, %d threads: GFLOP/s (best of 5 after warm-up)\n", lib.c_str(), threads);
  std::printf("%-7s %-20s %10s %10s\n", "M", "shape", "lib", "split");
  for (int M : {128, 512}) {
    for (const Shape& s : shapes) {
      std::vector<float> A(size_t(M) * s.K, 0.01f), B(size_t(s.N) * s.K, 0.02f), C(size_t(M) * s.N);
      const double flops = 2.0 * M * s.N * s.K;
      double best[2] = {1e30, 1e30};
      for (int mode = 0; mode < 2; ++mode) {
        if (openblas_set_threads) openblas_set_threads(mode == 0 ? threads : 1);
        for (int rep = 0; rep < 7; ++rep) {
          const auto t0 = std::chrono::steady_clock::now();
          if (mode == 0) {
            if (dnnl_sgemm_fn) {
              sgemm(M, s.N, s.K, A.data(), B.data(), C.data(), s.N);  // dnnl threads with OpenMP
            } else {
              sgemm(M, s.N, s.K, A.data(), B.data(), C.data(), s.N);
            }
          } else {
            const int chunk = ((s.N + threads - 1) / threads + 15) / 16 * 16;
#pragma omp parallel num_threads(threads)
            {
              const int n0 = omp_get_thread_num() * chunk, n1 = std::min(s.N, n0 + chunk);
              if (n0 < n1) sgemm(M, n1 - n0, s.K, A.data(), B.data() + size_t(n0) * s.K, C.data() + n0, s.N);
            }
          }
          const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (rep >= 2) best[mode] = std::min(best[mode], dt);
        }
      }
      std::printf("%-7d %-20s %10.1f %10.1f\n", M, s.name, flops / best[0] * 1e-9, flops / best[1] * 1e-9);
    }
  }
  return 0;
}
