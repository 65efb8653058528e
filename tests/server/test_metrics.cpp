// Metrics: histogram buckets are cumulative in the output, counts stay exact under concurrent
// updates, and the exposition text has the Prometheus shape.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "server/metrics.h"

namespace rexnlu::server {
namespace {

TEST(Histogram, RendersCumulativeBucketsSumAndCount) {
  Histogram h({1, 2, 5});
  for (double v : {0.5, 1.0, 1.5, 4.0, 100.0}) h.observe(v);
  std::string out;
  h.render(out, "x", "stage=\"a\"");
  EXPECT_EQ(out,
            "x_bucket{stage=\"a\",le=\"1\"} 2\n"
            "x_bucket{stage=\"a\",le=\"2\"} 3\n"
            "x_bucket{stage=\"a\",le=\"5\"} 4\n"
            "x_bucket{stage=\"a\",le=\"+Inf\"} 5\n"
            "x_sum{stage=\"a\"} 107\n"
            "x_count{stage=\"a\"} 5\n");
}

TEST(Histogram, NoLabels) {
  Histogram h({1});
  h.observe(3);
  std::string out;
  h.render(out, "b", "");
  EXPECT_EQ(out, "b_bucket{le=\"1\"} 0\nb_bucket{le=\"+Inf\"} 1\nb_sum 3\nb_count 1\n");
}

TEST(Metrics, CountsAreExactUnderConcurrency) {
  Metrics m;
  constexpr int kThreads = 8, kEach = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&m, t] {
      for (int i = 0; i < kEach; ++i) {
        m.count_request(t % 2 ? Route::kExtractV1 : Route::kHealth, i % 5 ? 200 : 429, 0.001);
        m.observe_batch(2, 10, 1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(m.requests(Route::kExtractV1, 200) + m.requests(Route::kExtractV1, 429), uint64_t{kThreads / 2 * kEach});
  EXPECT_EQ(m.requests(Route::kExtractV1, 429), uint64_t{kThreads / 2 * kEach / 5});
  EXPECT_EQ(m.batch_size().count(), uint64_t{kThreads * kEach});
  EXPECT_DOUBLE_EQ(m.batch_size().sum(), 2.0 * kThreads * kEach);
  const std::string text = m.render();
  EXPECT_NE(text.find("rexnlu_http_requests_total{route=\"/v1/extract\",status=\"429\"} 4000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rexnlu_forward_calls_total 40000\n"), std::string::npos);
}

TEST(Metrics, UnknownPathsAndStatusesDoNotGrowTheLabelSet) {
  Metrics m;
  EXPECT_EQ(route_of("/v1/extract"), Route::kExtractV1);
  EXPECT_EQ(route_of("/extract"), Route::kExtractAlias);
  EXPECT_EQ(route_of("/random/x"), Route::kOther);
  m.count_request(route_of("/a"), 418, 0);
  m.count_request(route_of("/b"), 418, 0);
  EXPECT_NE(m.render().find("rexnlu_http_requests_total{route=\"other\",status=\"other\"} 2\n"), std::string::npos);
}

TEST(Metrics, EveryLineIsCommentOrSample) {
  Metrics m;
  m.observe_stage(Stage::kForward, 0.2);
  for (Stage s : {Stage::kTokenize, Stage::kQueue, Stage::kForward, Stage::kDecode}) m.observe_stage(s, 0.01);
  const std::string text = m.render();
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "the text must end with a newline";
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    // name{labels} value  or  name value
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_NO_THROW((void)std::stod(line.substr(space + 1))) << line;
    EXPECT_EQ(line.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), line.find_first_of("{ ")) << line;
  }
  for (const char* stage : {"tokenize", "queue", "forward", "decode"}) {
    EXPECT_NE(text.find(std::string("rexnlu_stage_duration_seconds_count{stage=\"") + stage + "\"}"), std::string::npos);
  }
}

}  // namespace
}  // namespace rexnlu::server
