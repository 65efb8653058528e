#include "server/batcher.h"

#include <algorithm>
#include <cmath>
#include <new>

namespace rexnlu::server {

struct Batcher::Job {
  std::vector<Request> requests;
  int64_t tokens = 0;
  Clock::time_point enqueued, deadline;
  // Guarded by Batcher::mutex_.
  std::condition_variable finished;
  bool done = false;
  bool stopped = false;  // cancel_after() ended it: kStopped
  std::vector<Result> results;

  bool cancelled() const {
    return std::any_of(requests.begin(), requests.end(), [](const Request& r) { return r.cancel && r.cancel->load(); });
  }
};

Batcher::Batcher(BatcherConfig config, RunBatch run_batch, Metrics& metrics)
    : config_(config), run_batch_(std::move(run_batch)), metrics_(metrics), worker_([this] { work(); }) {}

Batcher::~Batcher() { stop(); }

void Batcher::cancel_after(Clock::time_point when) {
  cancel_at_.store(when.time_since_epoch().count());
  std::lock_guard lock(mutex_);
  stopping_ = true;  // refuse new jobs; the worker ends once the queue is empty
  wake_.notify_all();
}

void Batcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

std::chrono::duration<double> Batcher::stalled_for() {
  std::lock_guard lock(mutex_);
  const Clock::time_point now = Clock::now();
  if (batch_started_) return now - *batch_started_;
  if (!queue_.empty()) return now - queue_.front()->enqueued;
  return std::chrono::duration<double>::zero();
}

Batcher::Outcome Batcher::run(std::vector<Request> requests, int64_t tokens, Clock::time_point deadline) {
  auto job = std::make_shared<Job>();
  const auto texts = static_cast<int64_t>(requests.size());
  job->requests = std::move(requests);
  job->tokens = tokens;
  job->enqueued = Clock::now();
  job->deadline = deadline;

  std::unique_lock lock(mutex_);
  if (stopping_) return {Status::kStopped, {}};
  if (queued_texts_ + texts > config_.max_queue) return {Status::kQueueFull, {}, 1};
  const int64_t backlog = queued_tokens_ + running_tokens_;
  if (backlog > 0 && seconds_per_token_ > 0) {
    // Conservative: the larger of the average and the last batch's cost, against half the time
    // left, because bigger batches cost more per token on the CPU engine and the average lags.
    const double per_token = std::max(seconds_per_token_, last_seconds_per_token_);
    const double wait = static_cast<double>(backlog + tokens) * per_token;
    const double budget = 0.5 * std::chrono::duration<double>(deadline - job->enqueued).count();
    if (wait > budget) return {Status::kOverloaded, {}, std::max(1.0, std::ceil(wait - budget))};
  }
  queue_.push_back(job);
  queued_texts_ += texts;
  queued_tokens_ += tokens;
  metrics_.queue_depth.store(queued_texts_);
  wake_.notify_one();

  if (!job->finished.wait_until(lock, deadline, [&] { return job->done; })) {
    // Still queued: take it out so it never runs. Already running: its results are dropped.
    const auto it = std::find(queue_.begin(), queue_.end(), job);
    if (it != queue_.end()) {
      queue_.erase(it);
      queued_texts_ -= texts;
      queued_tokens_ -= job->tokens;
      metrics_.queue_depth.store(queued_texts_);
    }
    return {Status::kDeadline, {}};
  }
  if (job->stopped) return {Status::kStopped, {}};
  return {Status::kOk, std::move(job->results)};
}

std::vector<std::shared_ptr<Batcher::Job>> Batcher::take_batch(std::unique_lock<std::mutex>& lock) {
  wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
  if (queue_.empty()) return {};
  if (config_.max_wait.count() > 0 && !stopping_) {
    // Give concurrent callers a moment to join this batch, unless the budget is already full.
    auto queued_tokens = [&] {
      int64_t t = 0;
      for (const auto& j : queue_) t += j->tokens;
      return t;
    };
    wake_.wait_until(lock, Clock::now() + config_.max_wait,
                     [&] { return stopping_ || queue_.empty() || queued_tokens() >= config_.token_budget; });
  }
  std::vector<std::shared_ptr<Job>> batch;
  int64_t tokens = 0;
  const Clock::time_point now = Clock::now();
  const bool cancelled = now.time_since_epoch().count() >= cancel_at_.load();
  while (!queue_.empty()) {
    const std::shared_ptr<Job>& job = queue_.front();
    // Strict FIFO: the first job that does not fit ends the batch (one job always fits).
    if (!batch.empty() && tokens + job->tokens > config_.token_budget) break;
    queued_texts_ -= static_cast<int64_t>(job->requests.size());
    queued_tokens_ -= job->tokens;
    if (cancelled) {  // draining past its time: answer without running
      job->stopped = job->done = true;
      job->finished.notify_one();
    } else if (job->cancelled()) {  // its caller went away: answer kCancelled without running
      job->results.assign(job->requests.size(), Result{});
      for (Result& r : job->results) {
        r.error = "cancelled by its caller before it ran";
        r.error_kind = ErrorKind::kCancelled;
      }
      job->done = true;
      job->finished.notify_one();
    } else if (job->deadline > now) {  // an expired job's caller answers 504 itself
      tokens += job->tokens;
      batch.push_back(job);
    }
    queue_.pop_front();
  }
  metrics_.queue_depth.store(queued_texts_);
  return batch;
}

void Batcher::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    std::vector<std::shared_ptr<Job>> batch = take_batch(lock);
    if (batch.empty()) {
      if (stopping_ && queue_.empty()) return;
      continue;
    }
    std::vector<Request> requests;
    int64_t tokens = 0;
    const Clock::time_point start = Clock::now();
    for (const auto& job : batch) {
      for (Request& r : job->requests) {
        r.deadline = job->deadline;  // the engine stops it between model calls once this passed
        requests.push_back(std::move(r));
      }
      tokens += job->tokens;
      metrics_.observe_stage(Stage::kQueue, std::chrono::duration<double>(start - job->enqueued).count());
    }
    running_tokens_ = tokens;
    batch_started_ = start;
    lock.unlock();

    BatchTimings timings;
    std::vector<Result> results;
    const std::function<bool()> cancelled = [this] {
      return Clock::now().time_since_epoch().count() >= cancel_at_.load();
    };
    Result failure;  // what every text of the batch answers when the engine throws
    failure.error = "internal error while running the batch";
    failure.error_kind = ErrorKind::kInternal;
    try {
      results = run_batch_(requests, timings, cancelled);
    } catch (const Error& e) {
      results.clear();
      if (e.kind() == ErrorKind::kOutOfMemory) failure.error = e.what(), failure.error_kind = e.kind();
    } catch (const std::bad_alloc&) {
      results.clear();
      failure.error = "out of host memory while running the batch";
      failure.error_kind = ErrorKind::kOutOfMemory;
    } catch (...) {
      results.clear();
    }
    if (results.size() != requests.size()) results.assign(requests.size(), failure);  // fail the batch, keep serving
    metrics_.observe_stage(Stage::kTokenize, timings.tokenize_seconds);
    metrics_.observe_stage(Stage::kForward, timings.forward_seconds);
    metrics_.observe_stage(Stage::kDecode, timings.decode_seconds);
    metrics_.observe_batch(requests.size(), tokens, timings.forward_calls);

    const bool drained = cancelled();  // cancelled results are then the drain's doing (else a deadline's)
    lock.lock();
    running_tokens_ = 0;
    batch_started_.reset();
    const double spent = timings.tokenize_seconds + timings.forward_seconds + timings.decode_seconds;
    if (tokens > 0 && spent > 0) {
      const double per_token = spent / static_cast<double>(tokens);
      seconds_per_token_ = seconds_per_token_ == 0 ? per_token : 0.7 * seconds_per_token_ + 0.3 * per_token;
      last_seconds_per_token_ = per_token;
    }
    size_t next = 0;
    for (const auto& job : batch) {
      const size_t n = job->requests.size();
      job->results.assign(std::make_move_iterator(results.begin() + static_cast<std::ptrdiff_t>(next)),
                          std::make_move_iterator(results.begin() + static_cast<std::ptrdiff_t>(next + n)));
      next += n;
      for (const Result& r : job->results) job->stopped = job->stopped || (drained && r.error_kind == ErrorKind::kCancelled);
      job->done = true;
      job->finished.notify_one();
    }
  }
}

}  // namespace rexnlu::server
