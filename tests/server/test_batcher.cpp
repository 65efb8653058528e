// The batcher over a fake engine: concurrent jobs share one batch, the token budget splits
// batches, a full queue refuses, a deadline gives up without running the job, stop() drains, a
// job whose caller cancelled it never runs.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "server/batcher.h"

namespace rexnlu::server {
namespace {

using namespace std::chrono_literals;

// A fake engine: records batch sizes, answers each request with its own text as the span, and
// can be held closed so that jobs pile up in the queue.
class FakeEngine {
 public:
  Batcher::RunBatch runner() {
    return [this](const std::vector<Request>& requests, BatchTimings& timings, const std::function<bool()>& cancelled) {
      {
        std::unique_lock lock(mutex_);
        ++entered_;
        changed_.notify_all();
        changed_.wait(lock, [&] { return open_; });
        batches_.push_back(requests.size());
        deadlines_.push_back(requests.empty() ? Batcher::Clock::time_point{} : requests[0].deadline);
        cancelled_ = cancelled();
      }
      if (!requests.empty() && requests[0].text == "throw") throw std::runtime_error("boom");
      timings.forward_calls = 1;
      timings.forward_seconds = 0.1 * static_cast<double>(requests.size());  // what the shedding estimate reads
      std::vector<Result> out(requests.size());
      for (size_t i = 0; i < requests.size(); ++i) out[i].paths = {{Span{"t", requests[i].text, 0, 1, 1}}};
      return out;
    };
  }
  void hold() { set_open(false); }
  void release() { set_open(true); }
  void wait_entered(int n) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return entered_ >= n; });
  }
  std::vector<size_t> batches() {
    std::lock_guard lock(mutex_);
    return batches_;
  }
  bool last_cancelled() {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }
  std::vector<Batcher::Clock::time_point> deadlines() {
    std::lock_guard lock(mutex_);
    return deadlines_;
  }

 private:
  void set_open(bool open) {
    std::lock_guard lock(mutex_);
    open_ = open;
    changed_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = true;
  int entered_ = 0;
  std::vector<size_t> batches_;
  std::vector<Batcher::Clock::time_point> deadlines_;  // of each batch's first request
  bool cancelled_ = false;                              // what the cancel check said in the last batch
};

std::vector<Request> texts(std::initializer_list<const char*> list) {
  std::vector<Request> out;
  for (const char* t : list) out.push_back(Request{t, "{}", {}});
  return out;
}

Batcher::Clock::time_point in(std::chrono::milliseconds ms) { return Batcher::Clock::now() + ms; }

// Starts a job on another thread; returns its future outcome.
std::future<Batcher::Outcome> start(Batcher& b, std::vector<Request> r, int64_t tokens,
                                    std::chrono::milliseconds deadline = 30s) {
  return std::async(std::launch::async, [&b, r = std::move(r), tokens, deadline]() mutable {
    return b.run(std::move(r), tokens, in(deadline));
  });
}

void wait_queue_depth(Metrics& m, int64_t depth) {
  while (m.queue_depth.load() != depth) std::this_thread::sleep_for(1ms);
}

TEST(Batcher, ConcurrentJobsShareOneBatchAndGetTheirOwnResults) {
  Metrics metrics;
  FakeEngine engine;
  Batcher batcher({}, engine.runner(), metrics);
  engine.hold();
  auto first = start(batcher, texts({"a"}), 1);
  engine.wait_entered(1);  // the worker is busy with "a"; the next jobs queue up
  std::vector<std::future<Batcher::Outcome>> rest;
  rest.push_back(start(batcher, texts({"b", "c"}), 2));
  rest.push_back(start(batcher, texts({"d"}), 1));
  rest.push_back(start(batcher, texts({"e"}), 1));
  wait_queue_depth(metrics, 4);
  engine.release();
  EXPECT_EQ(first.get().results.at(0).paths.at(0).at(0).span, "a");
  std::vector<std::string> got;
  for (auto& f : rest) {
    Batcher::Outcome o = f.get();
    ASSERT_EQ(o.status, Batcher::Status::kOk);
    for (const Result& r : o.results) got.push_back(r.paths.at(0).at(0).span);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"b", "c", "d", "e"}));
  EXPECT_EQ(engine.batches(), (std::vector<size_t>{1, 4}));
  EXPECT_EQ(metrics.batch_size().count(), 2u);
}

TEST(Batcher, TokenBudgetSplitsBatchesInArrivalOrder) {
  Metrics metrics;
  FakeEngine engine;
  BatcherConfig config;
  config.token_budget = 10;
  Batcher batcher(config, engine.runner(), metrics);
  engine.hold();
  auto blocker = start(batcher, texts({"x"}), 1);
  engine.wait_entered(1);
  std::vector<std::future<Batcher::Outcome>> jobs;
  for (int i = 0; i < 5; ++i) {
    jobs.push_back(start(batcher, texts({"j"}), 4));
    wait_queue_depth(metrics, i + 1);  // keep the arrival order fixed
  }
  jobs.push_back(start(batcher, texts({"big"}), 50));  // over the budget alone: runs alone
  wait_queue_depth(metrics, 6);
  engine.release();
  for (auto& f : jobs) EXPECT_EQ(f.get().status, Batcher::Status::kOk);
  blocker.get();
  EXPECT_EQ(engine.batches(), (std::vector<size_t>{1, 2, 2, 1, 1}));
}

TEST(Batcher, FullQueueRefusesAndRecovers) {
  Metrics metrics;
  FakeEngine engine;
  BatcherConfig config;
  config.max_queue = 2;
  Batcher batcher(config, engine.runner(), metrics);
  engine.hold();
  auto running = start(batcher, texts({"a"}), 1);
  engine.wait_entered(1);
  auto queued = start(batcher, texts({"b", "c"}), 2);
  wait_queue_depth(metrics, 2);
  EXPECT_EQ(batcher.run(texts({"d"}), 1, in(30s)).status, Batcher::Status::kQueueFull);
  engine.release();
  EXPECT_EQ(queued.get().status, Batcher::Status::kOk);
  running.get();
  EXPECT_EQ(batcher.run(texts({"d"}), 1, in(30s)).status, Batcher::Status::kOk);
}

TEST(Batcher, DeadlinePassedInTheQueueNeverRuns) {
  Metrics metrics;
  FakeEngine engine;
  Batcher batcher({}, engine.runner(), metrics);
  engine.hold();
  auto running = start(batcher, texts({"a"}), 1);
  engine.wait_entered(1);
  EXPECT_EQ(batcher.run(texts({"late"}), 1, in(20ms)).status, Batcher::Status::kDeadline);
  EXPECT_EQ(metrics.queue_depth.load(), 0);  // taken out of the queue
  engine.release();
  running.get();
  EXPECT_EQ(batcher.run(texts({"b"}), 1, in(30s)).status, Batcher::Status::kOk);
  EXPECT_EQ(engine.batches(), (std::vector<size_t>{1, 1}));  // "late" never ran
}

TEST(Batcher, WorkThatWouldMissItsDeadlineIsRefusedAtOnce) {
  Metrics metrics;
  FakeEngine engine;
  Batcher batcher({}, engine.runner(), metrics);
  ASSERT_EQ(batcher.run(texts({"a"}), 1, in(30s)).status, Batcher::Status::kOk);  // measures 0.1 s per token
  engine.hold();
  auto running = start(batcher, texts({"b"}), 1);
  engine.wait_entered(2);
  auto queued = start(batcher, texts({"c"}), 5);  // 0.7 s of work ahead of the next job
  wait_queue_depth(metrics, 1);
  const Batcher::Outcome refused = batcher.run(texts({"d"}), 1, in(300ms));
  EXPECT_EQ(refused.status, Batcher::Status::kOverloaded);
  EXPECT_EQ(refused.retry_after_seconds, 1);
  EXPECT_EQ(metrics.queue_depth.load(), 1);  // not queued
  engine.release();
  EXPECT_EQ(running.get().status, Batcher::Status::kOk);
  EXPECT_EQ(queued.get().status, Batcher::Status::kOk);
  // With the backlog gone the same job fits again (a lone job is never refused for its size).
  EXPECT_EQ(batcher.run(texts({"d"}), 1000, in(300ms)).status, Batcher::Status::kOk);
}

TEST(Batcher, EngineExceptionFailsOnlyThatBatch) {
  Metrics metrics;
  FakeEngine engine;
  Batcher batcher({}, engine.runner(), metrics);
  Batcher::Outcome o = batcher.run(texts({"throw"}), 1, in(30s));
  ASSERT_EQ(o.status, Batcher::Status::kOk);
  ASSERT_EQ(o.results.size(), 1u);
  EXPECT_FALSE(o.results[0].ok());
  EXPECT_EQ(o.results[0].error_kind, ErrorKind::kInternal);
  EXPECT_TRUE(batcher.run(texts({"fine"}), 1, in(30s)).results.at(0).ok());
}

// Job "a" running in a held batch, job `queued_job` waiting behind it.
struct RunningAndQueued {
  explicit RunningAndQueued(std::vector<Request> queued_job = texts({"b"})) {
    engine.hold();
    running = start(batcher, texts({"a"}), 1);
    engine.wait_entered(1);
    queued = start(batcher, std::move(queued_job), 1);
    wait_queue_depth(metrics, 1);
  }
  Metrics metrics;
  FakeEngine engine;
  Batcher batcher{{}, engine.runner(), metrics};
  std::future<Batcher::Outcome> running, queued;
};

TEST(Batcher, StopFinishesQueuedJobsThenRefuses) {
  RunningAndQueued t;
  std::thread stopper([&] { t.batcher.stop(); });
  t.engine.release();
  stopper.join();
  EXPECT_EQ(t.running.get().status, Batcher::Status::kOk);
  EXPECT_EQ(t.queued.get().status, Batcher::Status::kOk);
  EXPECT_EQ(t.batcher.run(texts({"c"}), 1, in(30s)).status, Batcher::Status::kStopped);
}

TEST(Batcher, RequestsCarryTheirJobsDeadlineIntoTheEngine) {
  Metrics metrics;
  FakeEngine engine;
  Batcher batcher({}, engine.runner(), metrics);
  const Batcher::Clock::time_point deadline = in(30s);
  ASSERT_EQ(batcher.run(texts({"a"}), 1, deadline).status, Batcher::Status::kOk);
  EXPECT_EQ(engine.deadlines(), (std::vector<Batcher::Clock::time_point>{deadline}));
  EXPECT_FALSE(engine.last_cancelled());
}

TEST(Batcher, CancelAfterCancelsTheRunningBatchAndAnswersQueuedJobsStopped) {
  RunningAndQueued t;
  t.batcher.cancel_after(Batcher::Clock::now());
  t.engine.release();
  EXPECT_EQ(t.running.get().status, Batcher::Status::kOk);  // this fake ignores the cancel check...
  EXPECT_TRUE(t.engine.last_cancelled());                   // ...which said to stop
  EXPECT_EQ(t.queued.get().status, Batcher::Status::kStopped);
  EXPECT_EQ(t.engine.batches(), (std::vector<size_t>{1}));  // "b" never ran
  EXPECT_EQ(t.batcher.run(texts({"c"}), 1, in(30s)).status, Batcher::Status::kStopped);
}

// The HTTP service sets Request::cancel when the client goes away.
TEST(Batcher, AQueuedJobWhoseCallerCancelledIsAnsweredWithoutRunning) {
  auto gone = std::make_shared<std::atomic<bool>>(false);
  std::vector<Request> job = texts({"b"});
  job[0].cancel = gone;
  RunningAndQueued t(std::move(job));
  gone->store(true);
  t.engine.release();
  EXPECT_EQ(t.running.get().status, Batcher::Status::kOk);
  const Batcher::Outcome o = t.queued.get();
  ASSERT_EQ(o.status, Batcher::Status::kOk);
  ASSERT_EQ(o.results.size(), 1u);
  EXPECT_EQ(o.results[0].error_kind, ErrorKind::kCancelled) << o.results[0].error;
  EXPECT_EQ(t.engine.batches(), (std::vector<size_t>{1}));  // "b" never ran
}

}  // namespace
}  // namespace rexnlu::server
