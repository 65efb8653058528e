// The per-request state machine of the SiameseUIE pipeline (ModelScope siamese_uie_pipeline.py,
// /work/shared/docs/siamese_uie_and_uie.md section 1), driven like RequestRun by the shared loop
// of batch_driver.h:
//   text -> [CLS] text [SEP] cut into windows of 384 tokens sliding by 352 -> lower layers ONCE
//   level by level: one hint "t1: s1, t2: s2, type: " per (prefix, child type), each paired with
//   every window -> head/tail logits, averaged where windows overlap -> nearest-tail decoding
//   -> the spans of types with a sub-schema become the prefixes of the next level.
// All hints of a level (of every prefix, and in the server of every request) share one forward;
// the output is emitted in the original's depth-first order.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/pointer_model.h"
#include "rexnlu/error.h"
#include "rexnlu/options.h"
#include "text/tokenizer.h"
#include "uie/pipeline.h"
#include "uie/run_state.h"
#include "uie/schema.h"

namespace rexnlu::uie {

struct SiameseOptions {
  float threshold = 0.5f;       // a head/tail holds iff its logit is > this
  int window = 384;             // text tokens per window ([CLS]/[SEP] of the text included)
  int slide = 352;              // start of window j = j * slide
  int hint_max_len = 128;       // tokens per hint, [CLS] and [SEP] included (longer hints are cut)
  bool output_all_prefix = false;  // also output the paths that have a sub-schema (the original's kwarg)
  bool dedup = true;            // drop repeated identical paths (the original keeps them)
  Limits limits;                // max_paths, max_output_bytes and max_sequences apply here
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::shared_ptr<const std::atomic<bool>> cancel = nullptr;  // true: the same as a passed deadline
};

class SiameseRun : public RunState {
 public:
  // Throws rexnlu::Error (kInvalidInput) on empty or invalid UTF-8 text.
  SiameseRun(const text::Tokenizer& tokenizer, std::string_view text, Schema schema, SiameseOptions options);

  // The text windows (token ids) whose lower-layer states the run needs before its first forward.
  const std::vector<std::vector<int32_t>>& windows() const { return windows_; }
  void set_text_states(std::vector<models::TextStates> states);
  bool has_text_states() const { return !states_.empty(); }

  // The driver's interface (batch_driver.h), with RunState's done(), error(), error_kind(),
  // expired(now) and sequences_built().
  bool has_pending() const { return !done_ && !pending_.empty(); }
  int32_t next_length() const;
  models::PointerInput take_next();
  void feed(const models::PointerLogits& logits);
  void advance();
  void fail(std::string message, ErrorKind kind = ErrorKind::kInvalidInput);

  std::vector<OutputPath> output() const;  // valid once done()
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::u32string& text() const { return text_; }
  int levels_run() const { return levels_run_; }
  // Prefixes asked about so far, the root included: the original runs the lower layers over the
  // text once for each (get_prefix_infos calls); this run did it once in all.
  int64_t prefix_calls() const { return static_cast<int64_t>(entries_.size()); }

 private:
  // One call of the original's get_prefix_infos: a prefix path and the schema node whose child
  // types it asks for; its results in type order, then span order.
  struct Entry {
    OutputPath prefix;
    int node = Schema::kRoot;
    struct Found {
      OutputItem item;
      int child = -1;  // entry asking for the item's sub-schema; -1 for a leaf type
    };
    std::vector<Found> found;
  };
  struct Hint {
    int entry = 0;
    int type_node = 0;
    std::vector<int32_t> ids;         // [CLS] hint [SEP]
    std::vector<double> head, tail;   // merged over the windows, per text token (-1: not yet)
    int windows_fed = 0;
  };
  struct Item {
    int hint = 0;
    int window = 0;
  };

  void start_level(int first_entry);
  void decode(Hint& hint);
  void emit(int entry, std::vector<OutputPath>& out) const;

  const text::Tokenizer& tok_;
  SiameseOptions opt_;
  Schema schema_;
  std::u32string text_;
  text::Encoding tokens_;  // [CLS] text [SEP], the offsets decoding uses
  std::vector<std::vector<int32_t>> windows_;
  std::vector<std::shared_ptr<const models::TextStates>> states_;
  int32_t hint_first_position_ = 0;  // the padded window length, as the original's position ids

  std::vector<Entry> entries_;  // all levels; entries_[0] is the root
  int level_end_ = 0;           // entries_[level_begin, level_end_) form the current level
  std::vector<Hint> hints_;     // of the current level
  std::deque<Item> pending_, in_flight_;
  int levels_run_ = 0;

  std::vector<std::string> warnings_;
  int64_t spans_found_ = 0;
  int64_t span_bytes_found_ = 0;
};

// Encodes the windows of every run that has none yet through the lower layers (one batched call,
// split at max_batch_cells), then drives the runs to completion (batch_driver.h). Returns the
// number of forward calls.
int64_t run_siamese_requests(models::PointerModel& model, const std::vector<SiameseRun*>& runs,
                             int64_t max_batch_cells, const std::function<bool()>& cancelled = {});

}  // namespace rexnlu::uie
