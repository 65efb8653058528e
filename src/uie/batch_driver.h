// The loop that drives request runs of one pipeline to completion, shared by the token-pair
// pipeline (RequestRun, pipeline.h) and the SiameseUIE pipeline (SiameseRun, siamese_run.h):
// it merges the pending sequences of all runs into one forward per step (at most max_batch_cells
// = sum of L*L per forward, one sequence always), fails a run alone on a bad input, a limit or its
// deadline, and cancels everything once `cancelled` says so (checked before each forward and,
// through CancelScope, between the model's layers). Returns the number of forward calls.
//
// A Run has done(), fail(message, kind), expired(now) (deadline passed or caller cancelled), sequences_built(), has_pending(),
// next_length(), take_next() -> Input, feed(const Output&) and advance().
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/link_model.h"
#include "rexnlu/error.h"

namespace rexnlu::uie {

template <class Input, class Output, class Run, class Forward>
int64_t drive_runs(const Forward& forward, const std::vector<Run*>& runs, int64_t max_batch_cells,
                   const std::function<bool()>& cancelled) {
  int64_t forwards = 0;
  for (;;) {
    const bool cancel_all = cancelled && cancelled();
    const auto now = std::chrono::steady_clock::now();
    for (Run* run : runs) {
      if (run->done()) continue;
      if (cancel_all) {
        run->fail("cancelled before it finished (" + std::to_string(run->sequences_built()) + " model sequences run)",
                  ErrorKind::kCancelled);
      } else if (run->expired(now)) {
        run->fail("cancelled: its deadline passed or its caller cancelled it before it finished (" +
                      std::to_string(run->sequences_built()) + " model sequences run)",
                  ErrorKind::kCancelled);
      }
    }
    std::vector<Input> batch;
    std::vector<Run*> owners;
    int64_t cells = 0;
    bool full = false;
    for (Run* run : runs) {
      try {
        while (!full && run->has_pending()) {
          const int64_t L = run->next_length();
          if (!batch.empty() && cells + L * L > max_batch_cells) {
            full = true;
            break;
          }
          batch.push_back(run->take_next());
          owners.push_back(run);
          cells += L * L;
        }
      } catch (const Error& e) {
        run->fail(e.what(), e.kind());
      }
      if (full) break;
    }
    if (batch.empty()) break;
    // The forward itself stops between layers once every run in it is cancelled.
    const std::function<bool()> batch_cancelled = [&] {
      if (cancelled && cancelled()) return true;
      const auto at = std::chrono::steady_clock::now();
      return std::all_of(owners.begin(), owners.end(), [&](const Run* r) { return r->expired(at); });
    };
    std::vector<Output> logits;
    try {
      const models::CancelScope scope(batch_cancelled);
      logits = forward(batch);
    } catch (const models::ForwardCancelled&) {
      ++forwards;
      for (Run* run : owners) {
        if (!run->done()) run->fail("cancelled during a model call (deadline passed or the caller stopped it)", ErrorKind::kCancelled);
      }
      continue;
    }
    ++forwards;
    if (logits.size() != batch.size()) {
      throw InternalError("model returned " + std::to_string(logits.size()) + " results for " +
                          std::to_string(batch.size()) + " sequences");
    }
    batch.clear();
    for (size_t k = 0; k < owners.size(); ++k) {
      if (owners[k]->done()) continue;  // failed meanwhile
      try {
        owners[k]->feed(logits[k]);
      } catch (const Error& e) {
        owners[k]->fail(e.what(), e.kind());
      }
      logits[k] = Output();  // release as we go
    }
    for (Run* run : runs) {
      try {
        run->advance();
      } catch (const Error& e) {
        run->fail(e.what(), e.kind());
      }
    }
  }
  return forwards;
}

}  // namespace rexnlu::uie
