// How to thread the fp32 linear layers at batch 1 (issue 14 item 3): oneDNN's matmul with weights packed
// at load (backends/cpu/dnnl_matmul.h, what rexnlu runs) on the encoder's four shapes at 128 rows, 12
// distinct weight matrices per shape (as a forward streams them), three ways on T threads:
//   onednn   one primitive, oneDNN splits the work over the team (rexnlu today);
//   halves   the output columns split in T parts, each thread one single-threaded primitive on its own
//            packed part (each thread reads only its part of W);
//   chunks   as halves, each thread's part in chunks of C columns (default 256) packed apart, so that a
//            chunk's weights stay in the core's L2 while all 128 rows pass over them.
// Prints ms per call (median and best of the rounds) and checks that the three agree.
//   matmul_split [threads=2] [rounds=7] [chunk=256]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "backends/cpu/dnnl_matmul.h"

namespace {

using rexnlu::backends::cpu::MatmulKind;
using rexnlu::backends::cpu::PackedMatmulWeights;
using Packed = std::shared_ptr<const PackedMatmulWeights>;

constexpr int kRows = 128, kLayers = 12;

struct Part {  // output columns [first, first + count) of one layer's W, packed apart
  int first = 0, count = 0;
  Packed packed;
};

// Column ranges: per thread (its share, rounded to 64 columns), each cut into chunks of at most `chunk`.
std::vector<std::vector<std::pair<int, int>>> ranges(int out, int threads, int chunk) {
  std::vector<std::vector<std::pair<int, int>>> r(static_cast<size_t>(threads));
  const int share = (out / threads + 63) / 64 * 64;
  for (int t = 0; t < threads; ++t)
    for (int c = t * share; c < std::min(out, (t + 1) * share); c += chunk)
      r[static_cast<size_t>(t)].emplace_back(c, std::min({chunk, out - c, (t + 1) * share - c}));
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  const int chunk = argc > 3 ? std::atoi(argv[3]) : 256;
  omp_set_num_threads(threads);
  {
    const std::vector<float> probe(64 * 64);
    const Packed p = rexnlu::backends::cpu::pack_matmul_weights(MatmulKind::kF32, probe.data(), 64, 64);
    if (!p || !rexnlu::backends::cpu::is_packed(*p)) {  // as backends/cpu/gemm.cpp's f32_weights_packed()
      std::printf("matmul_split: no packed fp32 weights here (no oneDNN, or its kernel reads the plain layout)\n");
      return 0;
    }
  }
  const int shapes[][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};  // in, out
  std::printf("fp32 matmul, %d rows, %d layers' weights per shape, %d threads, %d rounds, chunks of %d columns\n",
              kRows, kLayers, threads, rounds, chunk);
  std::printf("%-12s %12s %12s %12s   max |diff|\n", "in -> out", "onednn ms", "halves ms", "chunks ms");
  for (const auto& s : shapes) {
    const int in = s[0], out = s[1];
    std::vector<float> x(static_cast<size_t>(kRows) * in), bias(static_cast<size_t>(out));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.01f * static_cast<float>(i % 7);
    std::vector<Packed> whole;
    std::vector<std::vector<std::vector<Part>>> halves(kLayers), chunks(kLayers);  // [layer][thread][part]
    {
      std::vector<float> w(static_cast<size_t>(out) * in);
      for (int l = 0; l < kLayers; ++l) {
        for (size_t i = 0; i < w.size(); ++i) w[i] = 0.02f * std::cos(0.11f * static_cast<float>(i) + static_cast<float>(l));
        whole.push_back(rexnlu::backends::cpu::pack_matmul_weights(MatmulKind::kF32, w.data(), out, in));
        for (auto [set, c] : {std::pair{&halves, out}, std::pair{&chunks, chunk}})
          for (const auto& mine : ranges(out, threads, c)) {
            (*set)[static_cast<size_t>(l)].emplace_back();
            for (auto [first, count] : mine)
              (*set)[static_cast<size_t>(l)].back().push_back(
                  {first, count,
                   rexnlu::backends::cpu::pack_matmul_weights(MatmulKind::kF32, w.data() + static_cast<size_t>(first) * in,
                                                              count, in)});
          }
      }
    }
    // Each part writes a contiguous [rows, count] block (a strided output may not take the packed
    // layout), copied into y's columns: part of the cost, as it would be in the engine.
    std::vector<float> y[3];
    for (auto& v : y) v.resize(static_cast<size_t>(kRows) * out);
    const auto split = [&](const std::vector<std::vector<std::vector<Part>>>& parts, int l, float* dst) {
#pragma omp parallel num_threads(threads)
      {
        const auto& mine = parts[static_cast<size_t>(l)][static_cast<size_t>(omp_get_thread_num())];
        thread_local std::vector<float> block;
        for (const Part& p : mine) {
          block.resize(static_cast<size_t>(kRows) * p.count);
          rexnlu::backends::cpu::matmul(MatmulKind::kF32, x.data(), kRows, in, nullptr, p.packed.get(),
                                        bias.data() + p.first, p.count, block.data(), p.count);
          for (int r = 0; r < kRows; ++r)
            std::copy_n(block.data() + static_cast<size_t>(r) * p.count, p.count,
                        dst + static_cast<size_t>(r) * out + p.first);
        }
      }
    };
    std::vector<double> ms[3];
    for (int round = 0; round <= rounds; ++round) {  // round 0 warms up (primitives made, weights touched)
      for (int way = 0; way < 3; ++way) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int l = 0; l < kLayers; ++l) {
          if (way == 0)
            rexnlu::backends::cpu::matmul(MatmulKind::kF32, x.data(), kRows, in, nullptr, whole[static_cast<size_t>(l)].get(),
                                          bias.data(), out, y[0].data(), out);
          else
            split(way == 1 ? halves : chunks, l, y[way].data());
        }
        const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (round > 0) ms[way].push_back(t / kLayers);
      }
    }
    double diff = 0;
    for (int way = 1; way < 3; ++way)
      for (size_t i = 0; i < y[0].size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(y[way][i] - y[0][i])));
    char name[32];
    std::snprintf(name, sizeof(name), "%d -> %d", in, out);
    std::printf("%-12s %5.3f (%5.3f) %5.3f (%5.3f) %5.3f (%5.3f)   %.2g\n", name, median(ms[0]),
                *std::min_element(ms[0].begin(), ms[0].end()), median(ms[1]), *std::min_element(ms[1].begin(), ms[1].end()),
                median(ms[2]), *std::min_element(ms[2].begin(), ms[2].end()), diff);
  }
  std::printf("ms per call: median (best) over the rounds\n");
  return 0;
}
