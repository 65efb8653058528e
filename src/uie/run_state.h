// How a request run of either pipeline ends (RequestRun in pipeline.h, SiameseRun in
// siamese_run.h): done or failed with an error and its kind, and when the batch driver
// (batch_driver.h) must stop it because its deadline passed or its caller cancelled it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "rexnlu/error.h"

namespace rexnlu::uie {

class RunState {
 public:
  RunState(std::chrono::steady_clock::time_point deadline, std::shared_ptr<const std::atomic<bool>> cancel)
      : deadline_(deadline), cancel_(std::move(cancel)) {}

  bool done() const { return done_; }
  const std::optional<std::string>& error() const { return error_; }
  ErrorKind error_kind() const { return error_kind_; }
  // Its deadline passed or its caller cancelled it: the batch driver fails it with kCancelled.
  bool expired(std::chrono::steady_clock::time_point now) const {
    return now >= deadline_ || (cancel_ && cancel_->load());
  }
  int64_t sequences_built() const { return sequences_built_; }

 protected:
  // Keeps the error and reports done(); the run clears its queues.
  void set_failed(std::string message, ErrorKind kind) {
    error_ = std::move(message);
    error_kind_ = kind;
    done_ = true;
  }

  bool done_ = false;
  int64_t sequences_built_ = 0;

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::shared_ptr<const std::atomic<bool>> cancel_;
  std::optional<std::string> error_;
  ErrorKind error_kind_ = ErrorKind::kInvalidInput;
};

}  // namespace rexnlu::uie
