// rexnlu's C++ API: load a RexUniNLU model directory once, then extract with a schema.
//
//   rexnlu::Engine engine = rexnlu::Engine::load("models/rexuninlu_tiny");
//   rexnlu::Result r = engine.extract("1944年毕业于北大的...", R"({"人物": null, "组织机构": null})");
//   std::cout << r.to_json();
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rexnlu/error.h"
#include "rexnlu/load_options.h"
#include "rexnlu/model_info.h"
#include "rexnlu/options.h"
#include "rexnlu/result.h"

namespace rexnlu {

struct Request {
  std::string text;    // "[CLASSIFY]..." / "[MULTICLASSIFY]..." selects the classification path
  std::string schema;  // JSON object of type names (null/{} = leaf), or a JSON string holding one
  Options options;
  // Past it the request stops using the model (checked between model calls) and its Result is
  // an error of kind kCancelled.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Optional: once the caller sets it to true (from any thread), the request stops the same way,
  // e.g. the HTTP service when the client has gone away.
  std::shared_ptr<const std::atomic<bool>> cancel = nullptr;
};

// Wall time of one extract_batch call by stage (for the HTTP service's metrics).
struct BatchTimings {
  double tokenize_seconds = 0;  // parsing schemas and tokenizing the request texts
  double forward_seconds = 0;   // model forward passes
  double decode_seconds = 0;    // everything else: prompts, link decoding, recursion bookkeeping
  int64_t forward_calls = 0;
};

class Engine {
 public:
  // Picks the model family from config.json, reads vocab.txt (+ the family's added tokens), the
  // config and model.safetensors or pytorch_model.bin, checks every tensor against the config and
  // the vocabulary (embedding rows = vocab + 4 for RexUniNLU), and puts the weights on the device
  // `options` name. Throws rexnlu::Error (kInvalidModel / kIo; kInvalidInput for a device or
  // precision this build cannot run, e.g. "device cuda: this build has no CUDA backend").
  static Engine load(const std::filesystem::path& model_dir, const LoadOptions& options = {});

  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;
  ~Engine();

  // Throws rexnlu::Error (kInvalidInput) for a bad text, schema or options; the engine stays usable.
  Result extract(std::string_view text, std::string_view schema_json, const Options& options = {});

  // All requests share one model forward per recursion level. A bad request, one past a limit or
  // past its deadline gets Result::error and does not affect the others. `cancelled` is asked
  // between model calls: once it returns true, every unfinished request ends with kCancelled.
  std::vector<Result> extract_batch(const std::vector<Request>& requests, BatchTimings* timings = nullptr,
                                    const std::function<bool()>& cancelled = {});

  // Bounds on every request's size and work (default: Limits{}). Throws rexnlu::Error
  // (kInvalidInput) for a limit < 1. Not safe while an extract runs: set it before serving.
  void set_limits(const Limits& limits);
  const Limits& limits() const;

  // Checks a request's options, text size and schema against the limits without running it
  // (throws rexnlu::Error: kInvalidInput / kLimitExceeded, as extract would) and returns its
  // estimated cost in tokens: text tokens x level-0 hint chunks x passes (the schema depth, +1
  // for a classification text: its "blank" rerun), i.e. about the text tokens the model will see. The HTTP batcher's token budget and load shedding count this.
  // Safe to call from other threads while an extract runs.
  int64_t estimate_cost(const Request& request) const;

  // Tokens of `text` alone, without prompt or special tokens. Safe to call from other threads
  // while an extract runs.
  int64_t count_tokens(std::string_view text) const;

  const std::vector<std::string>& load_warnings() const;  // e.g. unused tensors in the checkpoint
  const ModelInfo& model_info() const;                    // family, sizes, checkpoint, backend
  int64_t forward_calls() const;                          // model forward passes so far

  struct Impl;  // defined in src/engine; tests build engines with fake models through it
  explicit Engine(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rexnlu
