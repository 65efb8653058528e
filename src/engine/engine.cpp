#include "rexnlu/engine.h"

#include <algorithm>
#include <chrono>

#include "engine/engine_impl.h"
#include "engine/options_json.h"
#include "models/registry.h"
#include "uie/hints.h"
#include "uie/pipeline.h"
#include "uie/siamese_run.h"
#include "uie/utf8.h"

namespace rexnlu {

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;
Engine::~Engine() = default;

Engine Engine::load(const std::filesystem::path& model_dir, const LoadOptions& options) {
  models::LoadedModel m = models::family_of(model_dir).load(model_dir, options);
  m.info.device = device_name(options.device);
  m.info.precision = precision_name(options.precision);
  return Engine(std::make_unique<Impl>(
      Impl{std::move(m.tokenizer), std::move(m.network), std::move(m.warnings), std::move(m.info), Limits{},
           std::move(m.pointer_network)}));
}

const std::vector<std::string>& Engine::load_warnings() const { return impl_->load_warnings; }
const ModelInfo& Engine::model_info() const { return impl_->info; }
int64_t Engine::forward_calls() const {
  return impl_->pointer_model ? impl_->pointer_model->forward_calls() : impl_->model->forward_calls();
}

Result Engine::extract(std::string_view text, std::string_view schema_json, const Options& options) {
  std::vector<Result> results = extract_batch({Request{std::string(text), std::string(schema_json), options}});
  if (!results[0].ok()) throw Error(results[0].error_kind, results[0].error);
  return std::move(results[0]);
}

int64_t Engine::count_tokens(std::string_view text) const {
  return static_cast<int64_t>(impl_->tokenizer.encode_raw(text).ids.size());
}

void Engine::set_limits(const Limits& limits) {
  check_limits(limits);
  impl_->limits = limits;
}

const Limits& Engine::limits() const { return impl_->limits; }

namespace {

// What every request passes before it runs (and before the server queues it): options in range,
// the text and schema within the limits.
uie::Schema checked_schema(const Request& r, const Limits& limits) {
  check_options(r.options);
  if (static_cast<int64_t>(r.text.size()) > limits.max_text_bytes) {
    throw LimitError("text has " + std::to_string(r.text.size()) + " bytes; the limit max_text_bytes is " +
                     std::to_string(limits.max_text_bytes));
  }
  return uie::Schema::parse(r.schema, uie::SchemaLimits{limits.max_schema_types, limits.max_schema_depth});
}

}  // namespace

int64_t Engine::estimate_cost(const Request& request) const {
  const uie::Schema schema = checked_schema(request, impl_->limits);
  const int64_t text_tokens = std::max<int64_t>(1, count_tokens(request.text));
  if (impl_->pointer_model) {  // SiameseUIE: one hint per level-0 type, each over the whole text
    const auto types = static_cast<int64_t>(schema.node(uie::Schema::kRoot).children.size());
    return text_tokens * std::max<int64_t>(1, types) * schema.depth();
  }
  // Level 0's hint chunks are known up front; deeper levels depend on what is found, so each
  // further schema level is counted as one more pass over the text. Classification reruns from
  // level 0 when nothing linked (the "blank" rerun): one more pass (for a flat label list, the
  // usual classification schema, that is exactly its worst case).
  uie::HintLimits hint_limits;
  hint_limits.hint_max_len = request.options.hint_max_len;
  std::vector<std::string> warnings;
  const auto count = [this](std::string_view s) { return static_cast<int>(impl_->tokenizer.encode_raw(s).size()); };
  const size_t chunks =
      uie::split_hints({uie::LevelEntry{{}, uie::Schema::kRoot}}, schema, count, hint_limits, warnings).size();
  const int64_t passes = schema.depth() + (uie::takes_classify_path(request.text) ? 1 : 0);
  return text_tokens * static_cast<int64_t>(std::max<size_t>(1, chunks)) * passes;
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
    return timed([&] { return inner_.forward(batch); });
  }
  std::vector<models::SequenceLinks> forward_links(const std::vector<models::SequenceInput>& batch) override {
    return timed([&] { return inner_.forward_links(batch); });
  }
  int64_t forward_calls() const override { return inner_.forward_calls(); }

  double seconds = 0;
  int64_t calls = 0;

 private:
  template <class F>
  auto timed(const F& f) -> decltype(f()) {
    const Clock::time_point start = Clock::now();
    auto out = f();
    seconds += seconds_since(start);
    ++calls;
    return out;
  }

  models::LinkModel& inner_;
};

uie::PipelineOptions pipeline_options(const Request& request, const Limits& limits) {
  const Options& o = request.options;
  uie::PipelineOptions p;
  p.limits = limits;
  p.deadline = request.deadline;
  p.cancel = request.cancel;
  p.link_threshold = o.link_threshold;
  p.max_len = o.max_len;
  p.stride = o.stride;
  p.hint_max_len = o.hint_max_len;
  p.dedup = o.dedup;
  return p;
}

Result to_result(const std::vector<uie::OutputPath>& paths, const std::u32string& text,
                 const std::vector<std::string>& warnings, const Options& options, bool has_probabilities) {
  Result r;
  r.with_probabilities = options.probabilities && has_probabilities;
  r.warnings = warnings;
  std::vector<int64_t> bytes;
  if (options.byte_offsets) bytes = uie::byte_offsets_of(text);
  auto convert = [&](int64_t cp) {
    if (!options.byte_offsets) return cp;
    return bytes[static_cast<size_t>(std::clamp<int64_t>(cp, 0, static_cast<int64_t>(bytes.size()) - 1))];
  };
  for (const auto& path : paths) {
    Path p;
    for (const auto& it : path) p.push_back(Span{it.type, it.span, convert(it.start), convert(it.end), it.probability});
    r.paths.push_back(std::move(p));
  }
  return r;
}

// The original SiameseUIE pipeline's constants, with the options that apply to it; the token-pair
// options that do not are refused rather than ignored.
uie::SiameseOptions siamese_options(const Request& request, const Limits& limits) {
  const Options& o = request.options;
  const Options defaults;
  const auto refuse = [](const std::string& name, const std::string& why) {
    throw InputError("option " + name + " does not apply to SiameseUIE models: " + why);
  };
  if (o.max_len != defaults.max_len) refuse("max_len", "text windows are 384 tokens, as in the original");
  if (o.hint_max_len != defaults.hint_max_len) refuse("hint_max_len", "hints are cut at 128 tokens, as in the original");
  if (o.link_threshold != defaults.link_threshold) refuse("link_threshold", "use pointer_threshold (default 0.5)");
  if (uie::takes_classify_path(request.text))
    throw InputError("text carries RexUniNLU's [CLASSIFY] / [MULTICLASSIFY] marker (a classification task preset), "
                     "but SiameseUIE models only extract spans (the original SiameseUIE pipeline has no "
                     "classification): use a RexUniNLU model for classification, sentiment, NLI and matching");
  uie::SiameseOptions s;
  if (o.stride >= s.window)
    throw InputError("option stride must be below the SiameseUIE window of " + std::to_string(s.window) +
                     " tokens, got " + std::to_string(o.stride));
  s.slide = s.window - o.stride;  // stride = overlap of consecutive windows (the original: 384 - 352 = 32)
  s.threshold = o.pointer_threshold;
  s.dedup = o.dedup;
  s.limits = limits;
  s.deadline = request.deadline;
  s.cancel = request.cancel;
  return s;
}

// What driving the runs of one batch reports for BatchTimings.
struct DriveStats {
  double forward_seconds = 0;  // time in the model
  int64_t forward_calls = 0;
};

// extract_batch for either pipeline: a Run per request (built by make_run(request, schema); a
// request whose run cannot be built fails alone), all runs driven together by drive(active,
// max_batch_cells) -> DriveStats, then each run's output or error as its Result.
template <class Run, class MakeRun, class Drive>
std::vector<Result> extract_runs(const std::vector<Request>& requests, const Limits& limits, bool has_probabilities,
                                 BatchTimings* timings, const MakeRun& make_run, const Drive& drive) {
  const Clock::time_point start = Clock::now();
  std::vector<Result> results(requests.size());
  std::vector<std::unique_ptr<Run>> runs(requests.size());
  std::vector<Run*> active;
  int64_t max_cells = INT64_MAX;
  for (size_t i = 0; i < requests.size(); ++i) {
    try {
      runs[i] = make_run(requests[i], checked_schema(requests[i], limits));
      active.push_back(runs[i].get());
      max_cells = std::min(max_cells, requests[i].options.max_batch_cells);
    } catch (const Error& e) {
      results[i].error = e.what();
      results[i].error_kind = e.kind();
    }
  }
  const double tokenize_seconds = seconds_since(start);
  const Clock::time_point run_start = Clock::now();
  const DriveStats stats = active.empty() ? DriveStats{} : drive(active, max_cells);
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!runs[i]) continue;
    if (runs[i]->error()) {
      results[i].error = *runs[i]->error();
      results[i].error_kind = runs[i]->error_kind();
      continue;
    }
    results[i] = to_result(runs[i]->output(), runs[i]->text(), runs[i]->warnings(), requests[i].options,
                           has_probabilities);
  }
  if (timings) {
    timings->tokenize_seconds = tokenize_seconds;
    timings->forward_seconds = stats.forward_seconds;
    timings->decode_seconds = std::max(0.0, seconds_since(run_start) - stats.forward_seconds);
    timings->forward_calls = stats.forward_calls;
  }
  return results;
}

}  // namespace

std::vector<Result> Engine::extract_batch(const std::vector<Request>& requests, BatchTimings* timings,
                                          const std::function<bool()>& cancelled) {
  Impl& impl = *impl_;
  if (impl.pointer_model) {  // SiameseUIE
    const auto make_run = [&](const Request& r, uie::Schema schema) {
      const uie::SiameseOptions o = siamese_options(r, impl.limits);
      return std::make_unique<uie::SiameseRun>(impl.tokenizer, r.text, std::move(schema), o);
    };
    // The model calls are not timed apart here: decoding is a small part of a pointer run.
    const auto drive = [&](const std::vector<uie::SiameseRun*>& active, int64_t max_cells) {
      const Clock::time_point start = Clock::now();
      const int64_t calls_before = impl.pointer_model->forward_calls();
      uie::run_siamese_requests(*impl.pointer_model, active, max_cells, cancelled);
      return DriveStats{seconds_since(start), impl.pointer_model->forward_calls() - calls_before};
    };
    return extract_runs<uie::SiameseRun>(requests, impl.limits, false, timings, make_run, drive);
  }
  const auto make_run = [&](const Request& r, uie::Schema schema) {
    return std::make_unique<uie::RequestRun>(impl.tokenizer, r.text, std::move(schema), pipeline_options(r, impl.limits));
  };
  const auto drive = [&](const std::vector<uie::RequestRun*>& active, int64_t max_cells) {
    TimedModel timed(*impl.model);
    uie::run_requests(timed, active, max_cells, cancelled);
    return DriveStats{timed.seconds, timed.calls};
  };
  return extract_runs<uie::RequestRun>(requests, impl.limits, true, timings, make_run, drive);
}

}  // namespace rexnlu
