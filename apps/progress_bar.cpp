#include "progress_bar.h"

#include <algorithm>
#include <cmath>

namespace rexnlu::apps {
namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string clock_time(double seconds) {
  const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", total / 3600, (total / 60) % 60, total % 60);
  return buf;
}

}  // namespace

std::string format_progress(const ProgressSnapshot& s, int bar_width) {
  std::string out;
  const bool known = s.bytes_total > 0;
  if (known) {
    const double fraction = std::clamp(static_cast<double>(s.bytes_done) / static_cast<double>(s.bytes_total), 0.0, 1.0);
    const int filled = static_cast<int>(fraction * bar_width);
    out += '[';
    out.append(static_cast<size_t>(filled), '#');
    out.append(static_cast<size_t>(bar_width - filled), '.');
    out += "] " + fixed(100.0 * fraction, 1) + "%  ";
  }
  out += std::to_string(s.lines) + " lines";
  if (s.seconds > 0) out += "  " + fixed(static_cast<double>(s.lines) / s.seconds, 1) + " lines/s";
  // ETA from the byte rate of this run: lines differ in length, bytes track the work better.
  const double bytes_this_run = static_cast<double>(s.bytes_done - s.bytes_skipped);
  if (known && s.seconds > 0 && bytes_this_run > 0) {
    const double left = static_cast<double>(std::max<int64_t>(0, s.bytes_total - s.bytes_done));
    out += "  ETA " + clock_time(left / (bytes_this_run / s.seconds));
  }
  return out;
}

ProgressBar::ProgressBar(std::FILE* stream, int64_t bytes_total, int64_t bytes_skipped)
    : stream_(stream), start_(std::chrono::steady_clock::now()), last_draw_(start_) {
  s_.bytes_total = bytes_total;
  s_.bytes_skipped = bytes_skipped;
  s_.bytes_done = bytes_skipped;
}

void ProgressBar::update(int64_t lines, int64_t bytes_done) {
  s_.lines = lines;
  s_.bytes_done = bytes_done;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw();
}

void ProgressBar::finish() {
  draw();
  std::fputc('\n', stream_);
  std::fflush(stream_);
}

void ProgressBar::draw() {
  s_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // "\033[K" clears what a longer previous line left behind.
  std::fprintf(stream_, "\r%s\033[K", format_progress(s_).c_str());
  std::fflush(stream_);
  drawn_ = true;
}

}  // namespace rexnlu::apps
