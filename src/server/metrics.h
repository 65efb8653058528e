// The service's Prometheus metrics. Every value is an atomic: handler threads and the batcher
// update them concurrently without locks, and /metrics reads a consistent-enough snapshot.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace rexnlu::server {

// A Prometheus histogram with fixed upper bounds (plus the implicit +Inf bucket).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends `name_bucket{labels,le=..}`, `name_sum` and `name_count` lines.
  void render(std::string& out, std::string_view name, std::string_view labels) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::vector<std::atomic<uint64_t>> buckets_;  // non-cumulative; one more than bounds_ (+Inf)
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// The routes the service counts requests by; anything else is counted as kOther so that random
// paths cannot grow the label set.
enum class Route { kPage, kHealth, kInfo, kMetrics, kOpenApi, kExtractV1, kExtractAlias, kOther, kCount };
Route route_of(std::string_view path);
const char* route_label(Route route);

// Processing stages of the extract path, each with a latency histogram.
enum class Stage { kTokenize, kQueue, kForward, kDecode, kCount };

class Metrics {
 public:
  Metrics();

  void count_request(Route route, int status, double seconds);
  void observe_stage(Stage stage, double seconds) { stages_[static_cast<size_t>(stage)].observe(seconds); }
  void observe_batch(size_t requests, int64_t tokens, int64_t forward_calls);

  std::atomic<int64_t> queue_depth{0};       // texts waiting for the batcher
  std::atomic<int64_t> in_flight{0};         // HTTP requests being handled
  std::atomic<int64_t> model_loaded{0};      // 1 once the engine is ready

  uint64_t requests(Route route, int status) const;
  const Histogram& batch_size() const { return batch_size_; }

  // The Prometheus text exposition format (version 0.0.4).
  std::string render() const;

 private:
  static constexpr std::array<int, 19> kStatuses = {200, 204, 400, 401, 403, 404, 405, 408, 413, 415, 422, 429, 431, 499, 500, 501, 503, 504, 0};
  static size_t status_index(int status);

  std::array<std::array<std::atomic<uint64_t>, kStatuses.size()>, static_cast<size_t>(Route::kCount)> requests_{};
  std::deque<Histogram> request_seconds_;  // per route (deque: histograms cannot move)
  std::deque<Histogram> stages_;
  Histogram batch_size_;
  Histogram batch_tokens_;
  std::atomic<uint64_t> batches_{0};
  std::atomic<uint64_t> forward_calls_{0};
};

}  // namespace rexnlu::server
