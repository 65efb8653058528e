#include "rexnlu/engine.h"

#include <algorithm>
#include <chrono>

#include "engine/engine_impl.h"
#include "models/registry.h"
#include "uie/pipeline.h"
#include "uie/utf8.h"

namespace rexnlu {

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;
Engine::~Engine() = default;

Engine Engine::load(const std::filesystem::path& model_dir, const LoadOptions& options) {
  models::LoadedModel m = models::family_of(model_dir).load(model_dir, options);
  return Engine(std::make_unique<Impl>(
      Impl{std::move(m.tokenizer), std::move(m.network), std::move(m.warnings), std::move(m.info)}));
}

const std::vector<std::string>& Engine::load_warnings() const { return impl_->load_warnings; }
const ModelInfo& Engine::model_info() const { return impl_->info; }
int64_t Engine::forward_calls() const { return impl_->model->forward_calls(); }

Result Engine::extract(std::string_view text, std::string_view schema_json, const Options& options) {
  std::vector<Result> results = extract_batch({Request{std::string(text), std::string(schema_json), options}});
  if (!results[0].ok()) throw Error(results[0].error_kind, results[0].error);
  return std::move(results[0]);
}

int64_t Engine::count_tokens(std::string_view text) const {
  return static_cast<int64_t>(impl_->tokenizer.encode_raw(text).ids.size());
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Times the forwards of one extract_batch: the pipeline only sees a LinkModel.
class TimedModel : public models::LinkModel {
 public:
  explicit TimedModel(models::LinkModel& inner) : inner_(inner) {}
  std::vector<models::LinkLogits> forward(const std::vector<models::SequenceInput>& batch) override {
    const Clock::time_point start = Clock::now();
    std::vector<models::LinkLogits> out = inner_.forward(batch);
    seconds += seconds_since(start);
    ++calls;
    return out;
  }
  int64_t forward_calls() const override { return inner_.forward_calls(); }

  double seconds = 0;
  int64_t calls = 0;

 private:
  models::LinkModel& inner_;
};

uie::PipelineOptions pipeline_options(const Options& o) {
  uie::PipelineOptions p;
  p.link_threshold = o.link_threshold;
  p.max_len = o.max_len;
  p.stride = o.stride;
  p.hint_max_len = o.hint_max_len;
  p.dedup = o.dedup;
  return p;
}

Result to_result(const uie::RequestRun& run, const Options& options) {
  Result r;
  r.with_probabilities = options.probabilities;
  r.warnings = run.warnings();
  std::vector<int64_t> bytes;
  if (options.byte_offsets) bytes = uie::byte_offsets_of(run.text());
  auto convert = [&](int64_t cp) {
    if (!options.byte_offsets) return cp;
    return bytes[static_cast<size_t>(std::clamp<int64_t>(cp, 0, static_cast<int64_t>(bytes.size()) - 1))];
  };
  for (const auto& path : run.output()) {
    Path p;
    for (const auto& it : path) p.push_back(Span{it.type, it.span, convert(it.start), convert(it.end), it.probability});
    r.paths.push_back(std::move(p));
  }
  return r;
}

}  // namespace

std::vector<Result> Engine::extract_batch(const std::vector<Request>& requests, BatchTimings* timings) {
  const Clock::time_point start = Clock::now();
  std::vector<Result> results(requests.size());
  std::vector<std::unique_ptr<uie::RequestRun>> runs(requests.size());
  std::vector<uie::RequestRun*> active;
  int64_t max_cells = INT64_MAX;
  for (size_t i = 0; i < requests.size(); ++i) {
    try {
      uie::Schema schema = uie::Schema::parse(requests[i].schema);
      runs[i] = std::make_unique<uie::RequestRun>(impl_->tokenizer, requests[i].text, std::move(schema),
                                                  pipeline_options(requests[i].options));
      active.push_back(runs[i].get());
      max_cells = std::min(max_cells, requests[i].options.max_batch_cells);
    } catch (const Error& e) {
      results[i].error = e.what();
      results[i].error_kind = e.kind();
    }
  }
  const double tokenize_seconds = seconds_since(start);
  const Clock::time_point run_start = Clock::now();
  TimedModel timed(*impl_->model);
  if (!active.empty()) uie::run_requests(timed, active, max_cells);
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!runs[i]) continue;
    if (runs[i]->error()) {
      results[i].error = *runs[i]->error();
      results[i].error_kind = ErrorKind::kInvalidInput;
      continue;
    }
    results[i] = to_result(*runs[i], requests[i].options);
  }
  if (timings) {
    timings->tokenize_seconds = tokenize_seconds;
    timings->forward_seconds = timed.seconds;
    timings->decode_seconds = seconds_since(run_start) - timed.seconds;
    timings->forward_calls = timed.calls;
  }
  return results;
}

}  // namespace rexnlu
