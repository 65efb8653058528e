// Encoder + link head latency/throughput of rexnlu's CPU engine (fp32) on a model directory and a
// set of input cases written by run_encoder_bench.sh (the PyTorch baseline reads the same files).
//   encoder_bench MODEL_DIR CASES_JSON [threads=2] [min_seconds=3] [device=cpu] [precision=fp32]
// (device cuda or cuda:N and precision fp16 / bf16 for the GPU: bench/run_gpu_bench.sh).
// CASES_JSON: [{"name", "batch", "input_ids", "position_ids", "attention_mask": ["0101..", ..]}]
// Prints one JSON object per case: {"engine":"rexnlu" (or "rexnlu-<device>-<precision>" off the CPU),"name","batch","L","ms_median","ms_min",
// "reps","gflop","logits_abs_sum","precision","cpu_ms_min","cpu_ms_median"} (logits_abs_sum of sequence 0, to check both
// engines agree; cpu_ms: the process's CPU time per forward, which other jobs on a shared machine do not stretch as
// they stretch the wall time: at 1 thread it is the work itself, at more it includes the OpenMP threads' spinning).
// REXNLU_BENCH_LINK_THRESHOLD=t times forward_links with extraction's query (the links above t, no dense Z: what
// the pipeline copies back) instead of forward (every Z); the engine name gets "-links", "links" counts those of
// the batch and logits_abs_sum sums |Z| over sequence 0's links.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "models/rex/rex_config.h"
#include "models/rex/rex_uninlu_model.h"

namespace {

using rexnlu::models::SequenceInput;

// FLOPs rexnlu executes for one sequence of L tokens (multiply-adds x2): dense layers, the
// attention products over the relative-position span this sequence uses, the conv and the head.
double forward_flops(const rexnlu::models::rex::ModelConfig& c, const SequenceInput& s) {
  const double L = s.length(), H = c.hidden_size, I = c.intermediate_size, d = c.head_dim();
  const auto [lo, hi] = std::minmax_element(s.position_ids.begin(), s.position_ids.end());
  const double span = std::min(2.0 * (*hi - *lo) + 1, 2.0 * c.position_buckets);
  const double dense = 2 * L * (4 * H * H + 2 * H * I);
  const double attn = c.num_attention_heads * (2 * L * L * d * 2 + 2 * L * span * d * 2);
  return c.num_hidden_layers * (dense + attn) + 2 * L * 3 * H * H /*conv*/ + 2 * L * 2 * H * H + 2 * L * L * H /*head*/;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR CASES_JSON [threads=2] [min_seconds=3] [device=cpu] [precision=fp32]\n",
                 argv[0]);
    return 2;
  }
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const double min_seconds = argc > 4 ? std::atof(argv[4]) : 3.0;
  rexnlu::LoadOptions options;
  options.threads = threads;
  if (argc > 5 && !rexnlu::parse_device_spec(argv[5], options)) {
    std::fprintf(stderr, "not a device: %s\n", argv[5]);
    return 2;
  }
  if (argc > 6) {
    const auto p = rexnlu::parse_precision(argv[6]);
    if (!p) {
      std::fprintf(stderr, "encoder_bench: unknown precision %s (fp32, fp16, bf16, int8)\n", argv[6]);
      return 2;
    }
    options.precision = *p;
  }
  std::string engine = options.device == rexnlu::Device::kCpu
                           ? std::string("rexnlu")
                           : "rexnlu-" + std::string(argv[5]) + "-" + std::string(rexnlu::precision_name(options.precision));
  if (const char* g = std::getenv("REXNLU_CUDA_GRAPHS"); g != nullptr && std::string(g) == "0" &&
                                                         options.device == rexnlu::Device::kCuda)
    engine += "-nographs";  // the CUDA backend's graph replay turned off (CudaBackend::run_recorded)
  if (const char* a = std::getenv("REXNLU_CUDA_16BIT_ACTIVATIONS"); a != nullptr && std::string(a) == "0" &&
                                                                    options.device == rexnlu::Device::kCuda &&
                                                                    options.precision != rexnlu::Precision::kFloat32)
    engine += "-act32";  // fp32 activations (the default stores them in the weights' 16-bit type)
  if (const char* k = std::getenv("REXNLU_CUDA_ATTENTION"); k != nullptr && std::string(k) == "wmma" &&
                                                            options.device == rexnlu::Device::kCuda)
    engine += "-wmma";  // the WMMA attention kernel instead of the default flash one (backends/cuda/ops.h)
  if (const char* pdl = std::getenv("REXNLU_CUDA_PDL"); pdl != nullptr && std::string(pdl) == "0" &&
                                                         options.device == rexnlu::Device::kCuda)
    engine += "-nopdl";  // plain launches instead of programmatic dependent ones (backends/cuda/types.cuh)
  if (const char* g = std::getenv("REXNLU_CUDA_GELU"); g != nullptr && std::string(g) == "erf" &&
                                                      options.device == rexnlu::Device::kCuda)
    engine += "-geluerf";  // the exact GELU as its own kernel instead of the GEMM's tanh-form epilogue
  if (const char* s = std::getenv("REXNLU_CUDA_FA_SPLIT"); s != nullptr && std::string(s) == "off" &&
                                                          options.device == rexnlu::Device::kCuda)
    engine += "-nosplit";  // the flash attention's key split at small grids turned off (backends/cuda/ops.h)
  if (const char* s = std::getenv("REXNLU_CUDA_FA_SHUFFLE"); s != nullptr && std::string(s) == "off" &&
                                                            options.device == rexnlu::Device::kCuda)
    engine += "-noshuffle";  // the flash attention's position terms always through shared memory (backends/cuda/ops.h)
  const char* link_threshold = std::getenv("REXNLU_BENCH_LINK_THRESHOLD");
  if (link_threshold) engine += "-links";
  // The full-size case has no vocab.txt: the embedding table's rows stand for the vocabulary.
  const std::filesystem::path dir = argv[1];
  const auto model = [&] {
    const rexnlu::io::TensorStore weights = rexnlu::io::load_checkpoint(dir);
    const int64_t rows = weights.at("plm.embeddings.word_embeddings.weight").shape.at(0);
    return std::make_unique<rexnlu::models::RexUniNluModel>(rexnlu::models::rex::load_model_config(dir / "config.json"),
                                                             weights, rows, options);
  }();
  std::ifstream in(argv[2]);
  const auto cases = nlohmann::json::parse(in);
  std::fprintf(stderr, "rexnlu: %s\n", model->backend_description().c_str());

  for (const auto& c : cases) {
    SequenceInput s;
    s.ids = c.at("input_ids").get<std::vector<int32_t>>();
    s.position_ids = c.at("position_ids").get<std::vector<int32_t>>();
    for (const auto& row : c.at("attention_mask"))
      for (char ch : row.get<std::string>()) s.mask.push_back(ch == '1');
    const int batch = c.at("batch").get<int>();
    if (link_threshold) s.query = {std::strtof(link_threshold, nullptr), false};
    const std::vector<SequenceInput> inputs(batch, s);

    std::vector<rexnlu::models::LinkLogits> out;
    std::vector<rexnlu::models::SequenceLinks> links;
    const auto run = [&] {
      if (link_threshold) links = model->forward_links(inputs);
      else out = model->forward(inputs);
    };
    run();  // warm-up (workspace sizing)
    std::vector<double> ms, cpu;
    const auto start = std::chrono::steady_clock::now();
    while (ms.size() < 3 || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < min_seconds) {
      const auto t0 = std::chrono::steady_clock::now();
      timespec c0{}, c1{};
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
      run();
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
      cpu.push_back(static_cast<double>(c1.tv_sec - c0.tv_sec) * 1e3 + static_cast<double>(c1.tv_nsec - c0.tv_nsec) * 1e-6);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (ms.size() >= 200) break;
    }
    std::sort(ms.begin(), ms.end());
    std::sort(cpu.begin(), cpu.end());
    double abs_sum = 0;
    size_t link_count = 0;
    if (link_threshold) {
      for (const auto& l : links[0].links) abs_sum += std::abs(l.logit);
      for (const auto& sl : links) link_count += sl.links.size();
    } else {
      for (float z : out[0]) abs_sum += std::abs(z);
    }
    nlohmann::json r = {{"engine", engine}, {"name", c.at("name")}, {"batch", batch}, {"L", s.length()},
                        {"ms_median", ms[ms.size() / 2]}, {"ms_min", ms.front()}, {"reps", ms.size()},
                        {"cpu_ms_min", cpu.front()}, {"cpu_ms_median", cpu[cpu.size() / 2]},
                        {"gflop", batch * forward_flops(model->config(), s) * 1e-9}, {"logits_abs_sum", abs_sum},
                        {"precision", std::string(rexnlu::precision_name(options.precision))}};
    if (link_threshold) r["links"] = link_count;
    std::printf("%s\n", r.dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}
