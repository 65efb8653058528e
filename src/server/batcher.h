// Dynamic batcher: HTTP handler threads hand in jobs (one or more texts with a schema), one worker
// thread takes whatever is queued, within a token budget, and runs it as ONE extract_batch call,
// so sequences of concurrent requests at the same recursion level share model forwards.
// The queue is bounded (callers get kQueueFull -> 429) and each job has a deadline (kDeadline -> 504).
// Load shedding: a job that the backlog would keep past its deadline is refused at once
// (kOverloaded -> 429) rather than accepted and timed out; the wait is estimated from the
// measured seconds per token of recent batches. A job's tokens are its estimated cost
// (Engine::estimate_cost: text tokens x prompts), so schema-heavy requests count as the work they are.
// Each request carries its job's deadline into the engine, which stops it between model calls once
// the deadline passed; cancel_after() (the service draining) stops the running batch the same way.
// A request's Request::cancel flag (its client went away) stops it likewise while it runs, and a
// queued job whose flag is set is answered kCancelled without running.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "rexnlu/engine.h"
#include "server/metrics.h"

namespace rexnlu::server {

struct BatcherConfig {
  int64_t max_queue = 256;       // texts waiting at most; more -> kQueueFull
  // Tokens (job costs) per batch at most (a larger single job runs alone). 2048: on the CPU engine a
  // batch of 64 short requests cost more per request than one of ~10 (docs/benchmarks.md).
  int64_t token_budget = 2048;
  // How long the worker waits for more jobs after the first one arrives when idle. 0 = batch
  // only what queued up while the previous batch ran (no added latency at low load).
  std::chrono::microseconds max_wait{0};
};

class Batcher {
 public:
  using Clock = std::chrono::steady_clock;
  // Runs one batch; the server passes Engine::extract_batch, tests a fake. The last argument says
  // when to give up (see cancel_after).
  using RunBatch =
      std::function<std::vector<Result>(const std::vector<Request>&, BatchTimings&, const std::function<bool()>&)>;

  enum class Status { kOk, kQueueFull, kOverloaded, kDeadline, kStopped };
  struct Outcome {
    Status status = Status::kOk;
    std::vector<Result> results;    // one per request, when kOk
    double retry_after_seconds = 1;  // kQueueFull / kOverloaded: when a retry may succeed
  };

  Batcher(BatcherConfig config, RunBatch run_batch, Metrics& metrics);
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues the requests as one job and blocks until they ran or the deadline passed. `tokens` is
  // what the job counts against the token budget.
  Outcome run(std::vector<Request> requests, int64_t tokens, Clock::time_point deadline);

  // Finishes the jobs already queued, then stops the worker; later run() calls get kStopped.
  void stop();
  // From `when` on, the running batch is cancelled (between model calls) and every job not done
  // gets kStopped: bounds how long a drain waits for work in flight. Safe from any thread.
  void cancel_after(Clock::time_point when);

  // How long the worker has had work without finishing it: the age of the running batch, or of
  // the oldest queued job when none runs; 0 when idle. /health reports a wedged engine with it.
  std::chrono::duration<double> stalled_for();

 private:
  struct Job;
  void work();
  std::vector<std::shared_ptr<Job>> take_batch(std::unique_lock<std::mutex>& lock);

  const BatcherConfig config_;
  const RunBatch run_batch_;
  Metrics& metrics_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  int64_t queued_texts_ = 0;
  int64_t queued_tokens_ = 0;
  int64_t running_tokens_ = 0;      // of the batch being run
  std::optional<Clock::time_point> batch_started_;  // set while a batch runs
  double seconds_per_token_ = 0;    // moving average over batches; 0 = nothing measured yet
  double last_seconds_per_token_ = 0;
  bool stopping_ = false;
  std::atomic<Clock::rep> cancel_at_{Clock::time_point::max().time_since_epoch().count()};
  std::thread worker_;
};

}  // namespace rexnlu::server
