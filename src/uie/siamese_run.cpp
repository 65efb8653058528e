#include "uie/siamese_run.h"

#include <algorithm>

#include "uie/batch_driver.h"
#include "uie/utf8.h"

namespace rexnlu::uie {

namespace {

// Python's text[start:end] for 0 <= start, end (an empty string when end <= start).
std::u32string python_slice(const std::u32string& text, int64_t start, int64_t end) {
  const auto n = static_cast<int64_t>(text.size());
  start = std::min(start, n);
  end = std::min(end, n);
  if (end <= start) return {};
  return text.substr(static_cast<size_t>(start), static_cast<size_t>(end - start));
}

}  // namespace

SiameseRun::SiameseRun(const text::Tokenizer& tokenizer, std::string_view text, Schema schema,
                       SiameseOptions options)
    : RunState(options.deadline, options.cancel), tok_(tokenizer), opt_(options), schema_(std::move(schema)) {
  if (text.empty()) throw InputError("text is empty");
  text_ = decode_utf8(text, "text");
  tokens_ = tok_.encode(text);  // [CLS] text [SEP], no truncation (the original's preprocessor([text]))
  const auto n = static_cast<int64_t>(tokens_.size());
  const int64_t W = opt_.window, S = opt_.slide;
  // split_num = ceil((n - W) / S) + 1 windows tokens[j*S : j*S + W]; the last one is padded to W,
  // so the hint's positions start after W (after n when the text fits in one window).
  const int64_t count = n > W ? (n - W + S - 1) / S + 1 : 1;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t begin = j * S, end = std::min(begin + W, n);
    windows_.emplace_back(tokens_.ids.begin() + begin, tokens_.ids.begin() + end);
  }
  hint_first_position_ = static_cast<int32_t>(count > 1 ? W : n);
  entries_.push_back(Entry{{}, Schema::kRoot, {}});
}

void SiameseRun::set_text_states(std::vector<models::TextStates> states) {
  if (states.size() != windows_.size())
    throw InternalError("text states for " + std::to_string(states.size()) + " of " + std::to_string(windows_.size()) +
                        " windows");
  states_.clear();
  for (auto& s : states) states_.push_back(std::make_shared<const models::TextStates>(std::move(s)));
  start_level(0);
}

void SiameseRun::start_level(int first_entry) {
  const int end = static_cast<int>(entries_.size());
  level_end_ = end;
  hints_.clear();
  pending_.clear();
  in_flight_.clear();
  for (int e = first_entry; e < end; ++e) {
    std::string prefix;
    for (const OutputItem& p : entries_[e].prefix) prefix += p.type + ": " + p.span + ", ";
    for (int child : schema_.node(entries_[e].node).children) {
      Hint h;
      h.entry = e;
      h.type_node = child;
      const text::Encoding raw = tok_.encode_raw(prefix + schema_.node(child).type + ": ");
      // truncation=True, max_length=hint_max_len: [CLS] + the first hint_max_len - 2 tokens + [SEP]
      const size_t keep = std::min(raw.ids.size(), static_cast<size_t>(std::max(0, opt_.hint_max_len - 2)));
      h.ids.push_back(tok_.cls_id());
      h.ids.insert(h.ids.end(), raw.ids.begin(), raw.ids.begin() + static_cast<std::ptrdiff_t>(keep));
      h.ids.push_back(tok_.sep_id());
      h.head.assign(tokens_.size(), -1.0);
      h.tail.assign(tokens_.size(), -1.0);
      for (int j = 0; j < static_cast<int>(windows_.size()); ++j)
        pending_.push_back(Item{static_cast<int>(hints_.size()), j});
      hints_.push_back(std::move(h));
    }
  }
  ++levels_run_;
  if (pending_.empty()) done_ = true;
}

int32_t SiameseRun::next_length() const {
  if (!has_pending()) return 0;
  const Item& it = pending_.front();
  return static_cast<int32_t>(windows_[static_cast<size_t>(it.window)].size() + hints_[static_cast<size_t>(it.hint)].ids.size());
}

models::PointerInput SiameseRun::take_next() {
  if (!has_pending() || states_.empty()) throw InternalError("take_next() without a pending sequence or text states");
  if (sequences_built_ >= opt_.limits.max_sequences) {
    throw LimitError("the request needs more than " + std::to_string(opt_.limits.max_sequences) +
                     " model sequences (hints x text windows x schema levels); the limit max_sequences is " +
                     std::to_string(opt_.limits.max_sequences));
  }
  const Item it = pending_.front();
  pending_.pop_front();
  in_flight_.push_back(it);
  ++sequences_built_;
  models::PointerInput in;
  in.text = states_[static_cast<size_t>(it.window)];
  in.text_length = static_cast<int32_t>(windows_[static_cast<size_t>(it.window)].size());
  in.hint_ids = hints_[static_cast<size_t>(it.hint)].ids;
  in.hint_first_position = hint_first_position_;
  return in;
}

void SiameseRun::feed(const models::PointerLogits& logits) {
  if (in_flight_.empty()) throw InternalError("feed() without a sequence in flight");
  const Item it = in_flight_.front();
  in_flight_.pop_front();
  const size_t L = windows_[static_cast<size_t>(it.window)].size();
  if (logits.head.size() != L || logits.tail.size() != L)
    throw InternalError("model returned " + std::to_string(logits.head.size()) + " pointer logits for a window of " +
                        std::to_string(L) + " tokens");
  Hint& h = hints_[static_cast<size_t>(it.hint)];
  // Where windows overlap the original averages: -1 marks a position no window has set yet.
  const size_t shift = static_cast<size_t>(it.window) * static_cast<size_t>(opt_.slide);
  for (size_t i = 0; i < L; ++i) {
    double& head = h.head[shift + i];
    double& tail = h.tail[shift + i];
    head = head == -1.0 ? logits.head[i] : (head + logits.head[i]) / 2;
    tail = tail == -1.0 ? logits.tail[i] : (tail + logits.tail[i]) / 2;
  }
  if (++h.windows_fed == static_cast<int>(windows_.size())) decode(h);
}

// get_entities: every head above the threshold is paired with the first tail above it at or after
// the head; the spans are sorted by offsets (stably). Then each span becomes a path item.
void SiameseRun::decode(Hint& h) {
  struct Span {
    int64_t start, end;
  };
  std::vector<Span> spans;
  const size_t n = tokens_.size();
  for (size_t ph = 0; ph < n; ++ph) {
    if (!(h.head[ph] > opt_.threshold)) continue;
    for (size_t pt = ph; pt < n; ++pt) {
      if (h.tail[pt] > opt_.threshold) {
        spans.push_back(Span{tokens_.offsets[ph].start, tokens_.offsets[pt].end});
        break;
      }
    }
  }
  std::stable_sort(spans.begin(), spans.end(),
                   [](const Span& a, const Span& b) { return std::tie(a.start, a.end) < std::tie(b.start, b.end); });
  std::vector<double>().swap(h.head);
  std::vector<double>().swap(h.tail);

  spans_found_ += static_cast<int64_t>(spans.size());
  if (spans_found_ > opt_.limits.max_paths) {
    throw LimitError("the request found more than " + std::to_string(opt_.limits.max_paths) +
                     " spans (output paths and next-level prefixes); the limit max_paths is " +
                     std::to_string(opt_.limits.max_paths) + " (is pointer_threshold too low?)");
  }
  const std::string& type = schema_.node(h.type_node).type;
  const bool leaf = schema_.is_leaf(h.type_node);
  for (const Span& s : spans) {
    OutputItem item{type, encode_utf8(python_slice(text_, s.start, s.end)), s.start, s.end, 0.0};
    int64_t bytes = static_cast<int64_t>(item.type.size() + item.span.size());
    for (const OutputItem& p : entries_[static_cast<size_t>(h.entry)].prefix)
      bytes += static_cast<int64_t>(p.type.size() + p.span.size());
    span_bytes_found_ += bytes;
    if (span_bytes_found_ > opt_.limits.max_output_bytes) {
      throw LimitError("the spans found hold more than " + std::to_string(opt_.limits.max_output_bytes) +
                       " bytes of types and spans; the limit max_output_bytes is " +
                       std::to_string(opt_.limits.max_output_bytes) + " (is pointer_threshold too low?)");
    }
    int child = -1;
    if (!leaf) {
      Entry next;
      next.prefix = entries_[static_cast<size_t>(h.entry)].prefix;
      next.prefix.push_back(item);
      next.node = h.type_node;
      child = static_cast<int>(entries_.size());
      entries_.push_back(std::move(next));
    }
    entries_[static_cast<size_t>(h.entry)].found.push_back(Entry::Found{std::move(item), child});
  }
}

void SiameseRun::advance() {
  if (done_ || !pending_.empty() || !in_flight_.empty() || states_.empty()) return;
  if (static_cast<int>(entries_.size()) > level_end_) {
    start_level(level_end_);
  } else {
    done_ = true;
  }
}

void SiameseRun::fail(std::string message, ErrorKind kind) {
  set_failed(std::move(message), kind);
  pending_.clear();
  in_flight_.clear();
}

// The original's depth-first forward(): a leaf path is output where it is found, a path with a
// sub-schema is followed (and output too with output_all_prefix).
void SiameseRun::emit(int entry, std::vector<OutputPath>& out) const {
  const Entry& e = entries_[static_cast<size_t>(entry)];
  for (const Entry::Found& f : e.found) {
    if (f.child < 0 || opt_.output_all_prefix) {
      OutputPath path = e.prefix;
      path.push_back(f.item);
      out.push_back(std::move(path));
    }
    if (f.child >= 0) emit(f.child, out);
  }
}

std::vector<OutputPath> SiameseRun::output() const {
  std::vector<OutputPath> out;
  emit(0, out);
  if (opt_.dedup) drop_repeated_paths(out);
  return out;
}

int64_t run_siamese_requests(models::PointerModel& model, const std::vector<SiameseRun*>& runs,
                             int64_t max_batch_cells, const std::function<bool()>& cancelled) {
  // The lower layers run once per text window: all windows of all runs, in calls of at most
  // max_batch_cells (L*L summed).
  std::vector<std::vector<int32_t>> windows;
  std::vector<std::pair<SiameseRun*, size_t>> owners;  // run, its window count
  int64_t cells = 0;
  auto flush = [&] {
    if (owners.empty()) return;
    std::vector<models::TextStates> states;
    try {
      states = model.encode_texts(windows);
    } catch (const Error& e) {
      for (auto& [run, count] : owners) run->fail(e.what(), e.kind());
      windows.clear(), owners.clear(), cells = 0;
      return;
    }
    size_t k = 0;
    for (auto& [run, count] : owners) {
      std::vector<models::TextStates> mine(std::make_move_iterator(states.begin() + static_cast<std::ptrdiff_t>(k)),
                                           std::make_move_iterator(states.begin() + static_cast<std::ptrdiff_t>(k + count)));
      k += count;
      run->set_text_states(std::move(mine));
    }
    windows.clear(), owners.clear(), cells = 0;
  };
  for (SiameseRun* run : runs) {
    if (run->done() || run->has_text_states()) continue;
    if ((cancelled && cancelled()) || run->expired(std::chrono::steady_clock::now())) continue;  // the driver fails it
    int64_t run_cells = 0;
    for (const auto& w : run->windows()) run_cells += static_cast<int64_t>(w.size()) * static_cast<int64_t>(w.size());
    if (!owners.empty() && cells + run_cells > max_batch_cells) flush();
    for (const auto& w : run->windows()) windows.push_back(w);
    owners.emplace_back(run, run->windows().size());
    cells += run_cells;
  }
  flush();
  return drive_runs<models::PointerInput, models::PointerLogits>(
      [&model](const std::vector<models::PointerInput>& batch) { return model.forward(batch); }, runs, max_batch_cells,
      cancelled);
}

}  // namespace rexnlu::uie
