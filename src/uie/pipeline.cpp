#include "uie/pipeline.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "rexnlu/error.h"
#include "uie/batch_driver.h"
#include "uie/decode.h"
#include "uie/utf8.h"

namespace rexnlu::uie {

namespace {

constexpr std::string_view kClassifyMarker = "[CLASSIFY]";
constexpr std::string_view kMultiClassifyMarker = "[MULTICLASSIFY]";

// The prefix tuple as a dict key: (type, span, (start, end)[, confidence]) per item.
std::string prefix_key(const Prefix& prefix) {
  std::string key;
  for (const auto& p : prefix) {
    key += p.type;
    key += '\x1f';
    key += p.span;
    key += '\x1f';
    key += std::to_string(p.start) + ',' + std::to_string(p.end);
    if (p.confidence) {
      char buf[32];
      std::memcpy(buf, &*p.confidence, sizeof(double));
      key.append(buf, sizeof(double));
    }
    key += '\x1e';
  }
  return key;
}

}  // namespace

RequestRun::RequestRun(const text::Tokenizer& tokenizer, std::string_view text, Schema schema,
                       PipelineOptions options)
    : RunState(options.deadline, options.cancel),
      tok_(tokenizer),
      special_(SpecialIds::of(tokenizer)),
      opt_(options),
      schema_(std::move(schema)) {
  if (text.empty()) throw InputError("text is empty");
  text_ = std::make_shared<const std::u32string>(decode_utf8(text, "text"));
  text_tokens_ = tok_.encode_raw(text);
  // The mode is chosen by substring search, as the original does.
  if (text.find(kClassifyMarker) != std::string_view::npos) {
    mode_ = Mode::kClassify, marker_ = kClassifyMarker, marker_id_ = tok_.token_to_id(kClassifyMarker);
  } else if (text.find(kMultiClassifyMarker) != std::string_view::npos) {
    mode_ = Mode::kMultiClassify, marker_ = kMultiClassifyMarker, marker_id_ = tok_.token_to_id(kMultiClassifyMarker);
  }
  marked_ = MarkedText(text_, decode_utf8(marker_, "marker"));
  entries_ = {LevelEntry{{}, Schema::kRoot}};
  start_level();
}

void RequestRun::start_level() {
  HintLimits limits;
  limits.hint_max_len = opt_.hint_max_len;
  auto count = [this](std::string_view s) { return static_cast<int>(tok_.encode_raw(s).size()); };
  std::vector<std::string> level_warnings;
  chunks_ = split_hints(entries_, schema_, count, limits, level_warnings);
  for (auto& w : level_warnings) {  // the same skip repeats on every level and in the blank rerun
    if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) warnings_.push_back(std::move(w));
  }
  chunk_slot_tokens_.assign(chunks_.size(), {});
  next_chunk_ = 0;
  ready_.clear();
  in_flight_.clear();
  next_entries_.clear();
  next_index_.clear();
  votes_.clear();
  cands_.clear();
  if (chunks_.empty()) advance();
}

void RequestRun::expand_next_chunk() {
  const int k = static_cast<int>(next_chunk_++);
  const HintChunk& chunk = chunks_[k];
  const text::Encoding hint = tok_.encode_raw(chunk.text);
  chunk_slot_tokens_[k] = type_token_indices(hint, chunk);

  const bool classify = mode_ != Mode::kExtract;
  // The classification path re-tokenizes the text once the marker was inserted into it.
  text::Encoding retokenized;
  const text::Encoding* text_tokens = &text_tokens_;
  if (const int version = marked_.insertions(); version > 0) {
    retokenized = tok_.encode_raw(encode_utf8(marked_.materialize(version)));
    text_tokens = &retokenized;
  }
  std::vector<text::Encoding> windows =
      tok_.pair_windows(hint, *text_tokens, opt_.max_len, classify ? 0 : opt_.stride);

  const auto m = static_cast<int32_t>(count_code_points(marker_));
  for (size_t j = 0; j < windows.size(); ++j) {
    text::Encoding& w = windows[j];
    WindowItem item;
    item.chunk = k;
    item.last_in_chunk = j + 1 == windows.size();
    const auto L = static_cast<int32_t>(w.size());
    int32_t H = 0;
    for (int8_t t : w.type_ids) H += t == 0;
    if (H == L) {  // no text part was marked: rebuild as the original does (type 1 after the first [SEP])
      H = 0;
      while (H < L && w.ids[H] != special_.sep) ++H;
      H = std::min(H + 1, L);
    }
    item.first_text_token = H;
    item.text_version = marked_.insertions();
    if (classify && j > 0 && L >= H + 2) {
      // Window j >= 1: the marker id goes in front of the window, its last text token is dropped,
      // and the marker is inserted into the text at the window's start (spec 7, long texts).
      const int32_t s = w.offsets[H].start;
      const auto jj = static_cast<int32_t>(j);
      std::vector<int32_t> ids(w.ids.begin(), w.ids.begin() + H);
      ids.push_back(marker_id_);
      ids.insert(ids.end(), w.ids.begin() + H, w.ids.end() - 2);
      ids.push_back(w.ids.back());
      std::vector<text::Offset> offs(w.offsets.begin(), w.offsets.begin() + H);
      offs.push_back(text::Offset{s + (jj - 1) * m, s + jj * m});
      for (auto it = w.offsets.begin() + H; it != w.offsets.end() - 2; ++it) {
        offs.push_back(text::Offset{it->start + jj * m, it->end + jj * m});
      }
      offs.push_back(w.offsets.back());
      w.ids = std::move(ids);
      w.offsets = std::move(offs);
      item.text_version = marked_.insert(s);
    }
    item.ids = std::move(w.ids);
    item.offsets = std::move(w.offsets);
    ready_.push_back(std::move(item));
  }
}

bool RequestRun::has_pending() {
  if (done_) return false;
  while (ready_.empty() && next_chunk_ < chunks_.size()) expand_next_chunk();
  return !ready_.empty();
}

int32_t RequestRun::next_length() { return has_pending() ? static_cast<int32_t>(ready_.front().ids.size()) : 0; }

models::SequenceInput RequestRun::take_next() {
  if (!has_pending()) throw InternalError("take_next() without a pending sequence");
  if (sequences_built_ >= opt_.limits.max_sequences) {
    throw LimitError("the request needs more than " + std::to_string(opt_.limits.max_sequences) +
                     " model sequences (hint chunks x text windows x schema levels); the limit max_sequences is " +
                     std::to_string(opt_.limits.max_sequences));
  }
  WindowItem item = std::move(ready_.front());
  ready_.pop_front();
  models::SequenceInput seq = make_sequence(item.ids, special_);
  // Extraction reads only the links above the threshold; the classification decode also reads
  // transposed cells and (blank) cells below it, so it gets the whole Z.
  seq.query.threshold = opt_.link_threshold;
  seq.query.dense = mode_ != Mode::kExtract;
  in_flight_.push_back(std::move(item));
  ++sequences_built_;
  return seq;
}

void RequestRun::feed(const models::SequenceLinks& logits) {
  if (in_flight_.empty()) throw InternalError("feed() without a sequence in flight");
  const WindowItem item = std::move(in_flight_.front());
  in_flight_.pop_front();
  const auto L = static_cast<int32_t>(item.ids.size());
  if (logits.length != L || (logits.dense.size() != static_cast<size_t>(L) * L && mode_ != Mode::kExtract)) {
    throw InternalError("model returned " + std::to_string(logits.dense.size()) + " logits (of a sequence of " +
                        std::to_string(logits.length) + ") for a sequence of " + std::to_string(L) + " tokens");
  }
  WindowLayout layout;
  layout.length = L;
  layout.first_text_token = item.first_text_token;
  layout.offsets = &item.offsets;
  layout.slot_tokens = &chunk_slot_tokens_[item.chunk];
  layout.text_version = item.text_version;
  const DecodeMode mode = mode_ == Mode::kExtract ? DecodeMode::kExtract
                          : blank_               ? DecodeMode::kClassifyBlank
                                                 : DecodeMode::kClassify;
  const int64_t budget = std::max<int64_t>(0, opt_.limits.max_paths - spans_found_);
  const std::vector<Match> matches =
      decode_window(logits, layout, marked_, opt_.link_threshold, mode, static_cast<size_t>(budget));
  if (static_cast<int64_t>(matches.size()) > budget) {
    throw LimitError("the request found more than " + std::to_string(opt_.limits.max_paths) +
                     " spans (output paths and next-level prefixes); the limit max_paths is " +
                     std::to_string(opt_.limits.max_paths) + " (is link_threshold too low?)");
  }
  spans_found_ += static_cast<int64_t>(matches.size());
  for (const Match& m : matches) {
    if (mode_ == Mode::kExtract) {
      on_match_extract(item, m);
    } else {
      on_match_classify(item, m);
    }
  }
  if (item.last_in_chunk) finish_chunk();
}

void RequestRun::add_next_entry(Prefix prefix, int node) {
  std::string key = prefix_key(prefix);
  if (next_index_.count(key)) return;  // dict.update keeps the first position
  next_index_.emplace(std::move(key), next_entries_.size());
  next_entries_.push_back(LevelEntry{std::move(prefix), node});
}

// The bytes a match adds to the output (its path's types and spans) count against max_output_bytes.
void RequestRun::count_found(const Prefix& prefix, const std::string& type, const std::string& span) {
  int64_t bytes = static_cast<int64_t>(type.size() + span.size());
  for (const PrefixItem& p : prefix) bytes += static_cast<int64_t>(p.type.size() + p.span.size());
  span_bytes_found_ += bytes;
  if (span_bytes_found_ > opt_.limits.max_output_bytes) {
    throw LimitError("the spans found hold more than " + std::to_string(opt_.limits.max_output_bytes) +
                     " bytes of types and spans; the limit max_output_bytes is " +
                     std::to_string(opt_.limits.max_output_bytes) + " (is link_threshold too low?)");
  }
}

void RequestRun::on_match_extract(const WindowItem& item, const Match& m) {
  const TypeSlot& slot = chunks_[item.chunk].slots[m.slot];
  const LevelEntry& entry = entries_[slot.entry];
  const std::string& type = schema_.node(slot.type_node).type;
  const std::string span = encode_utf8(m.span);
  count_found(entry.prefix, type, span);
  if (!schema_.is_leaf(slot.type_node)) {
    Prefix next = entry.prefix;
    next.push_back(PrefixItem{type, span, m.start, m.end, std::nullopt, m.probability});
    add_next_entry(std::move(next), slot.type_node);
  }
  OutputPath path;
  std::vector<std::string> types;
  for (const PrefixItem& p : entry.prefix) {
    path.push_back(OutputItem{python_strip(p.type), p.span, p.start, p.end, p.probability});
    types.push_back(path.back().type);
  }
  path.push_back(OutputItem{type, span, m.start, m.end, m.probability});
  types.push_back(type);
  if (schema_.is_legal(types)) paths_.push_back(std::move(path));
}

void RequestRun::on_match_classify(const WindowItem& item, const Match& m) {
  const TypeSlot& slot = chunks_[item.chunk].slots[m.slot];
  const LevelEntry& entry = entries_[slot.entry];
  const std::string& type = schema_.node(slot.type_node).type;
  const std::string span = encode_utf8(m.span);
  count_found(entry.prefix, type, span);
  if (!schema_.is_leaf(slot.type_node)) {  // even a span that is not the marker recurses, as in the original
    Prefix next = entry.prefix;
    next.push_back(PrefixItem{type, span, m.start, m.end, m.probability, m.probability});
    add_next_entry(std::move(next), slot.type_node);
  }
  if (span != marker_) return;
  ClassPath path;
  for (const PrefixItem& p : entry.prefix) {
    if (p.span != marker_) continue;  // only the marker items of the prefix form the label path
    path.types.push_back(python_strip(p.type));
    path.confidences.push_back(p.confidence.value_or(0.0));
  }
  path.types.push_back(type);
  path.confidences.push_back(m.probability);
  if (schema_.is_legal(path.types)) votes_.add(std::move(path));
}

void RequestRun::finish_chunk() {
  if (mode_ == Mode::kClassify) {
    if (auto best = votes_.best()) cands_.push_back(std::move(*best));
  } else if (mode_ == Mode::kMultiClassify) {
    for (auto& p : votes_.firsts()) class_paths_.push_back(std::move(p));
  }
  votes_.clear();
}

bool RequestRun::level_complete() const {
  return ready_.empty() && in_flight_.empty() && next_chunk_ >= chunks_.size();
}

void RequestRun::advance() {
  if (done_ || !level_complete()) return;
  finish_level();
}

void RequestRun::finish_level() {
  if (mode_ == Mode::kClassify) {
    if (auto best = best_by_sum(cands_)) class_paths_.push_back(std::move(*best));
  }
  if (!next_entries_.empty()) {
    entries_ = std::move(next_entries_);
    start_level();
    return;
  }
  if (mode_ != Mode::kExtract && !blank_ && class_paths_.empty()) {
    // Nothing linked at all: rerun from level 0 scoring every type ("blank" fallback), on the
    // original text.
    blank_ = true;
    marked_.clear();
    entries_ = {LevelEntry{{}, Schema::kRoot}};
    start_level();
    return;
  }
  done_ = true;
}

void RequestRun::fail(std::string message, ErrorKind kind) {
  set_failed(std::move(message), kind);
  ready_.clear();
  in_flight_.clear();
}

std::vector<OutputPath> RequestRun::output() const {
  std::vector<OutputPath> out;
  if (mode_ == Mode::kExtract) {
    out = paths_;
  } else {
    const auto len = static_cast<int64_t>(count_code_points(marker_));
    for (const ClassPath& p : final_selection(class_paths_, mode_ == Mode::kMultiClassify)) {
      OutputPath path;
      for (size_t i = 0; i < p.types.size(); ++i) path.push_back(OutputItem{p.types[i], marker_, 0, len, p.confidences[i]});
      out.push_back(std::move(path));
    }
  }
  if (opt_.dedup) drop_repeated_paths(out);
  return out;
}

void drop_repeated_paths(std::vector<OutputPath>& paths) {
  std::set<std::vector<std::tuple<std::string, std::string, int64_t, int64_t>>> seen;
  std::vector<OutputPath> unique;
  for (auto& path : paths) {
    std::vector<std::tuple<std::string, std::string, int64_t, int64_t>> key;
    for (const auto& it : path) key.emplace_back(it.type, it.span, it.start, it.end);
    if (seen.insert(std::move(key)).second) unique.push_back(std::move(path));
  }
  paths = std::move(unique);
}

bool takes_classify_path(std::string_view text) {
  return text.find(kClassifyMarker) != std::string_view::npos || text.find(kMultiClassifyMarker) != std::string_view::npos;
}

int64_t run_requests(models::LinkModel& model, const std::vector<RequestRun*>& runs, int64_t max_batch_cells,
                     const std::function<bool()>& cancelled) {
  return drive_runs<models::SequenceInput, models::SequenceLinks>(
      [&model](const std::vector<models::SequenceInput>& batch) { return model.forward_links(batch); }, runs, max_batch_cells,
      cancelled);
}

}  // namespace rexnlu::uie
