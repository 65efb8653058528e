// The progress line of `rexnlu extract --input` on a terminal: done/total, rate, ETA.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace rexnlu::apps {

struct ProgressSnapshot {
  int64_t lines = 0;          // lines done in this run (resumed ones excluded)
  int64_t bytes_done = 0;     // input bytes consumed, resumed ones included
  int64_t bytes_skipped = 0;  // input bytes skipped by --resume (not counted in the rate)
  int64_t bytes_total = 0;    // input size; 0 when unknown (stdin, a pipe)
  double seconds = 0;         // since this run started
};

// "[#######.......]  45.2%  1234 lines  56.7 lines/s  ETA 0:01:23" (without the bar, percentage
// and ETA when the total is unknown).
std::string format_progress(const ProgressSnapshot& s, int bar_width = 30);

// Redraws the line on `stream` with '\r', at most ~10 times per second; finish() ends it.
class ProgressBar {
 public:
  ProgressBar(std::FILE* stream, int64_t bytes_total, int64_t bytes_skipped);
  void update(int64_t lines, int64_t bytes_done);
  void finish();

 private:
  void draw();
  std::FILE* stream_;
  ProgressSnapshot s_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace rexnlu::apps
