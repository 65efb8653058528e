// The per-request state machine of the UIE pipeline (spec 5-7):
//   request -> sequences of the current recursion level -> logits -> decode -> next level ...
// A driver (run_requests, later the HTTP server's batcher) takes the pending sequences of many
// requests, runs them through LinkModel::forward_links together, and feeds each request its logits
// back in the order it handed them out. One forward per level as long as the level fits in the
// batch budget.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/link_model.h"
#include "rexnlu/error.h"
#include "rexnlu/options.h"
#include "text/tokenizer.h"
#include "uie/classify.h"
#include "uie/decode.h"
#include "uie/hints.h"
#include "uie/marked_text.h"
#include "uie/prompt.h"
#include "uie/run_state.h"
#include "uie/schema.h"

namespace rexnlu::uie {

// The engine checks the ranges (engine/options_json.h, check_options) before a run is built.
struct PipelineOptions {
  float link_threshold = 0.0f;  // a link holds iff its logit is > this
  int max_len = 512;            // tokens per sequence
  int stride = 32;              // window overlap in text tokens (extraction; classification uses 0)
  int hint_max_len = 256;       // tokens per hint chunk, [CLS] and [SEP] included
  bool dedup = true;            // drop repeated identical paths (the original keeps them)
  Limits limits;                // max_paths, max_output_bytes and max_sequences apply here
  // run_requests fails the run with kCancelled once this passes (checked between model calls).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::shared_ptr<const std::atomic<bool>> cancel = nullptr;  // true: the same as a passed deadline
};

struct OutputItem {
  std::string type;
  std::string span;
  int64_t start = 0, end = 0;  // code points of the request text
  double probability = 0;
};
using OutputPath = std::vector<OutputItem>;

// Keeps the first of each group of identical paths (type, span, offsets of every item), in order.
void drop_repeated_paths(std::vector<OutputPath>& paths);

class RequestRun : public RunState {
 public:
  // Throws rexnlu::Error (kInvalidInput) on empty or invalid UTF-8 text.
  RequestRun(const text::Tokenizer& tokenizer, std::string_view text, Schema schema, PipelineOptions options);

  // True when a sequence of the current level is ready to be handed out (builds the windows of
  // the next hint chunk on demand, so a huge text never holds a whole level in memory).
  bool has_pending();
  int32_t next_length();  // L of the sequence take_next() returns; has_pending() must be true
  models::SequenceInput take_next();
  // What the model returned for the oldest handed-out sequence not fed yet (its query: the links
  // above the threshold, and the whole Z in the classification modes).
  void feed(const models::SequenceLinks& logits);
  // Once everything handed out was fed and nothing is pending: closes the level and opens the
  // next one (or the classification "blank" rerun, or finishes).
  void advance();

  // Marks the run failed; it reports done() and keeps the error (done(), error(), error_kind(),
  // expired(now) and sequences_built() are RunState's).
  void fail(std::string message, ErrorKind kind = ErrorKind::kInvalidInput);

  std::vector<OutputPath> output() const;  // valid once done()
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::u32string& text() const { return *text_; }

 private:
  enum class Mode { kExtract, kClassify, kMultiClassify };
  struct WindowItem {
    int chunk = 0;
    bool last_in_chunk = false;
    std::vector<int32_t> ids;
    std::vector<text::Offset> offsets;
    int32_t first_text_token = 0;
    int text_version = 0;
  };

  void start_level();
  void expand_next_chunk();
  void on_match_extract(const WindowItem& item, const Match& m);
  void on_match_classify(const WindowItem& item, const Match& m);
  void finish_chunk();
  void finish_level();
  void add_next_entry(Prefix prefix, int node);
  void count_found(const Prefix& prefix, const std::string& type, const std::string& span);
  bool level_complete() const;

  const text::Tokenizer& tok_;
  SpecialIds special_;
  PipelineOptions opt_;
  Schema schema_;
  std::shared_ptr<const std::u32string> text_;
  text::Encoding text_tokens_;  // the request text, tokenized once
  Mode mode_ = Mode::kExtract;
  std::string marker_;          // "[CLASSIFY]" / "[MULTICLASSIFY]"
  int32_t marker_id_ = -1;
  bool blank_ = false;
  MarkedText marked_;

  std::vector<LevelEntry> entries_;
  std::vector<HintChunk> chunks_;
  std::vector<std::vector<int32_t>> chunk_slot_tokens_;
  size_t next_chunk_ = 0;
  std::deque<WindowItem> ready_, in_flight_;

  std::vector<LevelEntry> next_entries_;
  std::map<std::string, size_t> next_index_;  // prefix key -> position in next_entries_

  std::vector<OutputPath> paths_;   // extraction output, in the original's order
  ChunkVotes votes_;                // classification: current chunk
  std::vector<ClassPath> cands_;    // [CLASSIFY]: best of each chunk of the level
  std::vector<ClassPath> class_paths_;

  std::vector<std::string> warnings_;
  int64_t spans_found_ = 0;        // counted against limits.max_paths
  int64_t span_bytes_found_ = 0;   // counted against limits.max_output_bytes
};

// Whether a text takes the classification path ("[CLASSIFY]" / "[MULTICLASSIFY]" anywhere in it,
// as the original decides). When nothing links there, its levels run again ("blank" rerun).
bool takes_classify_path(std::string_view text);

// Runs the runs to completion, merging the sequences of all of them into one forward per step;
// a forward carries at most max_batch_cells = sum of L*L (at least one sequence). A run whose
// input turns out bad, that exceeds a limit or whose deadline passes fails alone; once
// `cancelled` returns true every unfinished run fails with kCancelled (both are checked before
// each forward). Returns the number of forward calls.
int64_t run_requests(models::LinkModel& model, const std::vector<RequestRun*>& runs, int64_t max_batch_cells,
                     const std::function<bool()>& cancelled = {});

}  // namespace rexnlu::uie
