// Reads one sample of the service's /metrics (Prometheus text) over HTTP, for the server tests.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace rexnlu::server::testing {

// The value of `sample` (a metric name with its labels, as rendered), 0 when absent, -1 when
// /metrics did not answer.
inline int64_t metric(httplib::Client& c, const std::string& sample) {
  auto r = c.Get("/metrics");
  if (!r) return -1;
  const size_t at = r->body.find("\n" + sample + " ");
  return at == std::string::npos ? 0 : std::stoll(r->body.substr(at + sample.size() + 2));
}

// Polls until `sample` has `value` (10 s at most), then checks it.
inline void wait_for_metric(httplib::Client& c, const std::string& sample, int64_t value) {
  for (int i = 0; i < 5000 && metric(c, sample) != value; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(metric(c, sample), value) << sample;
}

}  // namespace rexnlu::server::testing
