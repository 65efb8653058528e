#include "server/metrics.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "rexnlu/gpu_memory.h"

namespace rexnlu::server {
namespace {

// Latency buckets from 0.1 ms to 60 s: covers a tiny-model tokenize and a long queue wait.
std::vector<double> latency_bounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,     1,      2.5,   5,      10,    30,   60};
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

constexpr const char* kStageLabels[] = {"tokenize", "queue", "forward", "decode"};

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(bounds_.size() + 1) {}

void Histogram::observe(double value) {
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void Histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    const std::string le = i < bounds_.size() ? format_number(bounds_[i]) : "+Inf";
    out += std::string(name) + "_bucket{" + std::string(labels) + sep + "le=\"" + le + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  std::string braces;  // built with append: GCC 12 warns falsely (-Wrestrict) on "{" + s + "}"
  if (!labels.empty()) braces.append("{").append(labels).append("}");
  out += std::string(name) + "_sum" + braces + " " + format_number(sum()) + "\n";
  // The count is the +Inf bucket, so the two always agree even while others observe.
  out += std::string(name) + "_count" + braces + " " + std::to_string(cumulative) + "\n";
}

Route route_of(std::string_view path) {
  if (path == "/" || path == "/app.js" || path == "/style.css") return Route::kPage;
  if (path == "/health") return Route::kHealth;
  if (path == "/info") return Route::kInfo;
  if (path == "/metrics") return Route::kMetrics;
  if (path == "/openapi.json") return Route::kOpenApi;
  if (path == "/v1/extract") return Route::kExtractV1;
  if (path == "/extract") return Route::kExtractAlias;
  return Route::kOther;
}

const char* route_label(Route route) {
  switch (route) {
    case Route::kPage: return "/";
    case Route::kHealth: return "/health";
    case Route::kInfo: return "/info";
    case Route::kMetrics: return "/metrics";
    case Route::kOpenApi: return "/openapi.json";
    case Route::kExtractV1: return "/v1/extract";
    case Route::kExtractAlias: return "/extract";
    default: return "other";
  }
}

Metrics::Metrics()
    : batch_size_({1, 2, 4, 8, 16, 32, 64, 128, 256}),
      batch_tokens_({64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}) {
  for (size_t r = 0; r < static_cast<size_t>(Route::kCount); ++r) request_seconds_.emplace_back(latency_bounds());
  for (size_t s = 0; s < static_cast<size_t>(Stage::kCount); ++s) stages_.emplace_back(latency_bounds());
}

size_t Metrics::status_index(int status) {
  for (size_t i = 0; i + 1 < kStatuses.size(); ++i) {
    if (kStatuses[i] == status) return i;
  }
  return kStatuses.size() - 1;  // "other"
}

void Metrics::count_request(Route route, int status, double seconds) {
  requests_[static_cast<size_t>(route)][status_index(status)].fetch_add(1, std::memory_order_relaxed);
  request_seconds_[static_cast<size_t>(route)].observe(seconds);
}

void Metrics::observe_batch(size_t requests, int64_t tokens, int64_t forward_calls) {
  batch_size_.observe(static_cast<double>(requests));
  batch_tokens_.observe(static_cast<double>(tokens));
  batches_.fetch_add(1, std::memory_order_relaxed);
  forward_calls_.fetch_add(static_cast<uint64_t>(forward_calls), std::memory_order_relaxed);
}

uint64_t Metrics::requests(Route route, int status) const {
  return requests_[static_cast<size_t>(route)][status_index(status)].load(std::memory_order_relaxed);
}

std::string Metrics::render() const {
  std::string out;
  out += "# HELP rexnlu_http_requests_total HTTP requests by route and status code.\n";
  out += "# TYPE rexnlu_http_requests_total counter\n";
  for (size_t r = 0; r < static_cast<size_t>(Route::kCount); ++r) {
    for (size_t s = 0; s < kStatuses.size(); ++s) {
      const uint64_t n = requests_[r][s].load(std::memory_order_relaxed);
      if (n == 0) continue;
      const std::string status = kStatuses[s] == 0 ? "other" : std::to_string(kStatuses[s]);
      out += std::string("rexnlu_http_requests_total{route=\"") + route_label(static_cast<Route>(r)) +
             "\",status=\"" + status + "\"} " + std::to_string(n) + "\n";
    }
  }
  out += "# HELP rexnlu_http_request_duration_seconds Time from request parsed to response ready, by route.\n";
  out += "# TYPE rexnlu_http_request_duration_seconds histogram\n";
  for (size_t r = 0; r < static_cast<size_t>(Route::kCount); ++r) {
    if (request_seconds_[r].count() == 0) continue;
    request_seconds_[r].render(out, "rexnlu_http_request_duration_seconds",
                               std::string("route=\"") + route_label(static_cast<Route>(r)) + "\"");
  }
  out += "# HELP rexnlu_stage_duration_seconds Extraction time by stage: tokenize, forward and decode per "
         "batch, queue per request.\n";
  out += "# TYPE rexnlu_stage_duration_seconds histogram\n";
  for (size_t s = 0; s < static_cast<size_t>(Stage::kCount); ++s) {
    stages_[s].render(out, "rexnlu_stage_duration_seconds", std::string("stage=\"") + kStageLabels[s] + "\"");
  }
  out += "# HELP rexnlu_batch_size Texts per batch (one model forward per recursion level per batch).\n";
  out += "# TYPE rexnlu_batch_size histogram\n";
  batch_size_.render(out, "rexnlu_batch_size", "");
  out += "# HELP rexnlu_batch_tokens Tokens per batch (estimated cost: text tokens x prompts).\n";
  out += "# TYPE rexnlu_batch_tokens histogram\n";
  batch_tokens_.render(out, "rexnlu_batch_tokens", "");
  out += "# HELP rexnlu_batches_total Batches run by the batcher.\n";
  out += "# TYPE rexnlu_batches_total counter\n";
  out += "rexnlu_batches_total " + std::to_string(batches_.load()) + "\n";
  out += "# HELP rexnlu_forward_calls_total Model forward passes.\n";
  out += "# TYPE rexnlu_forward_calls_total counter\n";
  out += "rexnlu_forward_calls_total " + std::to_string(forward_calls_.load()) + "\n";
  out += "# HELP rexnlu_queue_depth Texts waiting for the batcher.\n";
  out += "# TYPE rexnlu_queue_depth gauge\n";
  out += "rexnlu_queue_depth " + std::to_string(queue_depth.load()) + "\n";
  out += "# HELP rexnlu_http_requests_in_flight HTTP requests being handled.\n";
  out += "# TYPE rexnlu_http_requests_in_flight gauge\n";
  out += "rexnlu_http_requests_in_flight " + std::to_string(in_flight.load()) + "\n";
  out += "# HELP rexnlu_model_loaded 1 once the model is loaded.\n";
  out += "# TYPE rexnlu_model_loaded gauge\n";
  out += "rexnlu_model_loaded " + std::to_string(model_loaded.load()) + "\n";
  // GPU memory (rexnlu::gpu_memory): only in a process that runs a model on a GPU.
  if (const std::vector<GpuMemory> gpus = gpu_memory(); !gpus.empty()) {
    const auto gauge = [&](const char* name, const char* help, auto value) {
      out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n";
      for (const GpuMemory& g : gpus)
        if (value(g) >= 0) out += std::string(name) + "{device=\"cuda:" + std::to_string(g.device) + "\"} " + std::to_string(value(g)) + "\n";
    };
    gauge("rexnlu_gpu_memory_held_bytes", "GPU memory rexnlu holds (weights and forward-pass scratch).",
          [](const GpuMemory& g) { return g.held_bytes; });
    gauge("rexnlu_gpu_memory_free_bytes", "Free memory of the GPU as the driver reports it (all processes).",
          [](const GpuMemory& g) { return g.free_bytes; });
    gauge("rexnlu_gpu_memory_total_bytes", "Total memory of the GPU.", [](const GpuMemory& g) { return g.total_bytes; });
  }
  return out;
}

}  // namespace rexnlu::server
