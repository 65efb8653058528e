#include "text/tokenizer.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "common/json_input.h"
#include "io/regular_file.h"
#include "rexnlu/error.h"
#include "text/pre_tokenizer.h"
#include "text/utf8.h"

namespace rexnlu::text {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// vocab.txt lines at most: config.json's vocab_size has the same limit (docs/options.md).
constexpr int32_t kMaxVocabTokens = 1'000'000;

// Parsed optional JSON file; an absent file is an empty object.
json read_optional_json(const fs::path& path) {
  if (!fs::exists(path)) return json::object();
  try {
    json j = parse_json(io::read_regular_file(path, io::kMaxTokenizerJsonBytes, "a tokenizer file"));
    if (!j.is_object()) throw ModelError(path.string() + ": expected a JSON object");
    return j;
  } catch (const json::exception& e) {
    throw ModelError(path.string() + ": invalid JSON: " + e.what());
  }
}

std::optional<bool> optional_bool(const json& config, const char* key, const fs::path& file) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) throw ModelError(file.string() + ": \"" + key + "\" must be true, false or null");
  return it->get<bool>();
}

// A special token entry is a string or, in newer saves, {"content": "...", ...}.
std::optional<std::string> token_entry(const json& value, const fs::path& file, const std::string& key) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string()) {
    return value["content"].get<std::string>();
  }
  throw ModelError(file.string() + ": \"" + key + "\" must be a token string or {\"content\": ...}");
}

std::u32string to_u32(const std::string& utf8) {
  std::u32string cps;
  decode_utf8(utf8, cps);
  return cps;
}

// Per-thread buffers, so that encoding allocates nothing per character.
struct EncodeScratch {
  std::vector<NormChar> normalized;
  BertNormalizer::Scratch normalizer;
  WordPiece::Scratch wordpiece;
};

void push_token(Encoding& e, int32_t id, Offset offset, int8_t type_id) {
  e.ids.push_back(id);
  e.offsets.push_back(offset);
  e.type_ids.push_back(type_id);
}

void append_range(Encoding& e, const Encoding& src, size_t begin, size_t end, int8_t type_id) {
  const auto b = static_cast<ptrdiff_t>(begin);
  const auto en = static_cast<ptrdiff_t>(end);
  e.ids.insert(e.ids.end(), src.ids.begin() + b, src.ids.begin() + en);
  e.offsets.insert(e.offsets.end(), src.offsets.begin() + b, src.offsets.begin() + en);
  e.type_ids.insert(e.type_ids.end(), end - begin, type_id);
}

}  // namespace

Tokenizer Tokenizer::from_model_dir(const fs::path& dir, const std::vector<std::string>& added_tokens) {
  Tokenizer t;

  io::require_model_dir(dir);
  const fs::path config_path = dir / "tokenizer_config.json";
  const json config = read_optional_json(config_path);
  const fs::path fast_path = dir / "tokenizer.json";
  std::optional<std::string> fast_unk;
  if (fs::exists(fast_path)) {
    // HF's AutoTokenizer(use_fast=True) builds the tokenizer from tokenizer.json when the directory
    // has one and then ignores vocab.txt; so do we.
    fast_unk = t.load_tokenizer_json(fast_path);
  } else {
    t.load_vocab_txt(dir / "vocab.txt");
    // tokenizer_config.json: what BertConverter hands to the normalizer. strip_accents null means
    // "same as lowercase".
    NormalizerOptions options;
    options.lowercase = optional_bool(config, "do_lower_case", config_path).value_or(true);
    options.handle_chinese_chars =
        optional_bool(config, "tokenize_chinese_chars", config_path).value_or(true);
    options.strip_accents = optional_bool(config, "strip_accents", config_path).value_or(options.lowercase);
    t.normalizer_ = BertNormalizer(options);
  }

  // Special tokens: names from special_tokens_map.json (else tokenizer_config.json, else the
  // BERT defaults); they must be in vocab.txt.
  const fs::path map_path = dir / "special_tokens_map.json";
  const json special_map = read_optional_json(map_path);
  auto special_name = [&](const char* key, const char* fallback) {
    if (special_map.contains(key)) {
      if (auto name = token_entry(special_map[key], map_path, key)) return *name;
    }
    if (config.contains(key)) {
      if (auto name = token_entry(config[key], config_path, key)) return *name;
    }
    return std::string(fallback);
  };
  const std::string unk = fast_unk ? *fast_unk : special_name("unk_token", "[UNK]");
  const std::string sep = special_name("sep_token", "[SEP]");
  const std::string pad = special_name("pad_token", "[PAD]");
  const std::string cls = special_name("cls_token", "[CLS]");
  const std::string mask = special_name("mask_token", "[MASK]");
  t.unk_id_ = t.special_id(unk, "unk_token");
  t.sep_id_ = t.special_id(sep, "sep_token");
  t.pad_id_ = t.special_id(pad, "pad_token");
  t.cls_id_ = t.special_id(cls, "cls_token");
  const int32_t mask_id = t.special_id(mask, "mask_token");
  t.wordpiece_.set_unk_id(t.unk_id_);
  for (const auto& [name, id] : {std::pair{cls, t.cls_id_}, {sep, t.sep_id_}, {pad, t.pad_id_},
                                 {unk, t.unk_id_}, {mask, mask_id}}) {
    t.added_tokens_.add(to_u32(name), id);
  }

  // Extra special tokens of the checkpoint, then the model family's: appended to the vocab
  // unless vocab.txt already has them.
  std::vector<std::string> extra;
  if (const auto it = special_map.find("additional_special_tokens"); it != special_map.end()) {
    if (!it->is_array()) throw ModelError(map_path.string() + ": \"additional_special_tokens\" must be a list");
    for (const json& entry : *it) {
      if (auto name = token_entry(entry, map_path, "additional_special_tokens")) extra.push_back(*name);
    }
  }
  extra.insert(extra.end(), added_tokens.begin(), added_tokens.end());
  for (const std::string& name : extra) {
    if (name.empty()) throw ModelError(map_path.string() + ": empty special token");
    int32_t id = t.token_ids_.find(name);
    if (id < 0) {
      id = static_cast<int32_t>(t.id_to_token_.size());
      t.id_to_token_.push_back(name);
      t.token_ids_.insert(name, id);
    }
    t.added_tokens_.add(to_u32(name), id);
  }
  return t;
}

// vocab.txt: one token per '\n'-terminated line, id = line number. Only '\n' ends a line
// (tokens may contain other line separators); a '\r' before it is a Windows line end.
void Tokenizer::load_vocab_txt(const fs::path& vocab_path) {
  if (!fs::exists(vocab_path)) throw ModelError(vocab_path.string() + ": missing (required by the tokenizer)");
  const std::string vocab = io::read_regular_file(vocab_path, io::kMaxVocabBytes, "a vocab.txt");
  size_t pos = 0;
  while (pos < vocab.size()) {
    size_t end = vocab.find('\n', pos);
    if (end == std::string::npos) end = vocab.size();
    std::string_view line(vocab.data() + pos, end - pos);
    if (line.ends_with('\r')) line.remove_suffix(1);
    const auto id = static_cast<int32_t>(id_to_token_.size());
    if (id == kMaxVocabTokens)
      throw ModelError(vocab_path.string() + ": more than " + std::to_string(kMaxVocabTokens) + " lines (the limit)");
    const std::string where = vocab_path.string() + " line " + std::to_string(id + 1);
    try {
      std::vector<char32_t> ignored;
      decode_utf8(line, ignored);
    } catch (const Error& e) {
      throw ModelError(where + ": " + e.what());
    }
    if (!line.empty()) {
      if (!token_ids_.insert(line, id)) {
        throw ModelError(where + ": duplicate entry \"" + std::string(line) + "\" (first at line " +
                         std::to_string(token_ids_.find(line) + 1) + ")");
      }
      wordpiece_.add(line, id);
    }
    id_to_token_.emplace_back(line);
    pos = end + 1;
  }
  if (token_ids_.size() == 0) throw ModelError(vocab_path.string() + ": no tokens");
}

// tokenizer.json of the BERT shape (what BertConverter writes): a WordPiece model with "##"
// continuations and 100 characters per word, a BertNormalizer and a BertPreTokenizer. Anything
// else would tokenize differently and is refused, naming the field. Returns the model's unk_token.
std::string Tokenizer::load_tokenizer_json(const fs::path& path) {
  const json j = read_optional_json(path);
  auto refuse = [&](const std::string& what) -> void { throw ModelError(path.string() + ": " + what); };
  const auto field = [&](const json& obj, const char* key) -> const json* {
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  };
  const json* model = field(j, "model");
  if (!model || !model->is_object()) refuse("no \"model\" object");
  const json* type = field(*model, "type");
  if (!type || *type != "WordPiece")
    refuse("model type " + (type ? type->dump() : std::string("(missing)")) +
           " is not supported: rexnlu reads only BERT WordPiece tokenizers");
  if (const json* p = field(*model, "continuing_subword_prefix"); p && *p != WordPiece::kContinuationPrefix)
    refuse("continuing_subword_prefix " + p->dump() + " is not supported (only \"##\")");
  if (const json* m = field(*model, "max_input_chars_per_word");
      m && !(m->is_number_integer() && m->get<int64_t>() == static_cast<int64_t>(WordPiece::kMaxCharsPerWord)))
    refuse("max_input_chars_per_word " + m->dump() + " is not supported (only 100)");
  const json* unk = field(*model, "unk_token");
  if (!unk || !unk->is_string()) refuse("model.unk_token must be a string");
  const json* vocab = field(*model, "vocab");
  if (!vocab || !vocab->is_object() || vocab->empty()) refuse("model.vocab must be a non-empty object {token: id}");
  for (const auto& [token, id_value] : vocab->items()) {
    if (!id_value.is_number_integer() || id_value.get<int64_t>() < 0 || id_value.get<int64_t>() >= kMaxVocabTokens)
      refuse("model.vocab \"" + token + "\": id must be an integer in [0, " + std::to_string(kMaxVocabTokens) +
             "), found " + id_value.dump());
    const auto id = static_cast<int32_t>(id_value.get<int64_t>());
    if (static_cast<size_t>(id) >= id_to_token_.size()) id_to_token_.resize(static_cast<size_t>(id) + 1);
    if (!id_to_token_[static_cast<size_t>(id)].empty())
      refuse("model.vocab: id " + std::to_string(id) + " is given to \"" + id_to_token_[static_cast<size_t>(id)] +
             "\" and \"" + token + "\"");
    if (token.empty()) refuse("model.vocab: empty token");
    token_ids_.insert(token, id);
    wordpiece_.add(token, id);
    id_to_token_[static_cast<size_t>(id)] = token;
  }

  const json* norm = field(j, "normalizer");
  if (!norm || !norm->is_object() || field(*norm, "type") == nullptr || (*norm)["type"] != "BertNormalizer")
    refuse("normalizer " + (norm ? norm->dump() : std::string("null")) +
           " is not supported: rexnlu reads only BertNormalizer");
  const auto flag = [&](const char* key) -> std::optional<bool> {
    const json* v = field(*norm, key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) refuse(std::string("normalizer.") + key + " must be true, false or null");
    return v->get<bool>();
  };
  NormalizerOptions options;
  if (!flag("clean_text").value_or(true)) refuse("normalizer.clean_text false is not supported");
  options.lowercase = flag("lowercase").value_or(true);
  options.handle_chinese_chars = flag("handle_chinese_chars").value_or(true);
  options.strip_accents = flag("strip_accents").value_or(options.lowercase);
  normalizer_ = BertNormalizer(options);
  const json* pre = field(j, "pre_tokenizer");
  if (!pre || !pre->is_object() || field(*pre, "type") == nullptr || (*pre)["type"] != "BertPreTokenizer")
    refuse("pre_tokenizer " + (pre ? pre->dump() : std::string("null")) +
           " is not supported: rexnlu reads only BertPreTokenizer");

  // Added tokens are matched before normalization, as the special tokens are.
  if (const json* added = field(j, "added_tokens")) {
    if (!added->is_array()) refuse("added_tokens must be a list");
    for (const json& a : *added) {
      const json* content = a.is_object() ? field(a, "content") : nullptr;
      const json* id = a.is_object() ? field(a, "id") : nullptr;
      if (!content || !content->is_string() || content->get<std::string>().empty() || !id || !id->is_number_integer() ||
          id->get<int64_t>() < 0 || id->get<int64_t>() >= kMaxVocabTokens)
        refuse("added_tokens entry " + a.dump() + " needs a non-empty \"content\" and an \"id\"");
      const std::string name = content->get<std::string>();
      const auto aid = static_cast<int32_t>(id->get<int64_t>());
      if (static_cast<size_t>(aid) >= id_to_token_.size()) id_to_token_.resize(static_cast<size_t>(aid) + 1);
      if (id_to_token_[static_cast<size_t>(aid)].empty()) {
        id_to_token_[static_cast<size_t>(aid)] = name;
        token_ids_.insert(name, aid);
      } else if (id_to_token_[static_cast<size_t>(aid)] != name) {
        refuse("added token \"" + name + "\" has id " + std::to_string(aid) + ", which model.vocab gives to \"" +
               id_to_token_[static_cast<size_t>(aid)] + "\"");
      }
      added_tokens_.add(to_u32(name), aid);
    }
  }
  return unk->get<std::string>();
}

int32_t Tokenizer::special_id(const std::string& token, const char* role) const {
  const int32_t id = token_ids_.find(token);
  if (id < 0) throw ModelError("the vocabulary (vocab.txt or tokenizer.json) has no " + std::string(role) + " \"" + token + "\"");
  return id;
}

void Tokenizer::encode_plain(std::span<const char32_t> text, int32_t origin, Encoding& out) const {
  if (text.empty()) return;
  thread_local EncodeScratch scratch;
  normalizer_.normalize(text, origin, scratch.normalized, scratch.normalizer);
  for_each_pre_token(std::span<const NormChar>(scratch.normalized), [&](std::span<const NormChar> word) {
    wordpiece_.tokenize(word, out, scratch.wordpiece);
  });
}

Encoding Tokenizer::encode_raw(std::string_view utf8) const {
  thread_local std::vector<char32_t> code_points;
  code_points.clear();
  decode_utf8(utf8, code_points);
  const std::span<const char32_t> text(code_points);

  Encoding out;
  out.ids.reserve(text.size() + 2);  // about one token per CJK character; callers add [CLS]/[SEP]
  out.offsets.reserve(text.size() + 2);
  out.type_ids.reserve(text.size() + 2);
  size_t plain_begin = 0;
  for (size_t i = 0; i < text.size();) {
    const AddedTokens::Match m = added_tokens_.match_at(text, i);
    if (m.id < 0) {
      ++i;
      continue;
    }
    encode_plain(text.subspan(plain_begin, i - plain_begin), static_cast<int32_t>(plain_begin), out);
    push_token(out, m.id, {static_cast<int32_t>(i), static_cast<int32_t>(i + m.length)}, 0);
    i += m.length;
    plain_begin = i;
  }
  encode_plain(text.subspan(plain_begin), static_cast<int32_t>(plain_begin), out);
  return out;
}

Encoding Tokenizer::encode(std::string_view utf8) const {
  const Encoding raw = encode_raw(utf8);
  Encoding out;
  out.ids.reserve(raw.size() + 2);
  out.offsets.reserve(raw.size() + 2);
  out.type_ids.reserve(raw.size() + 2);
  push_token(out, cls_id_, {}, 0);
  append_range(out, raw, 0, raw.size(), 0);
  push_token(out, sep_id_, {}, 0);
  return out;
}

Encoding Tokenizer::encode_pair(std::string_view a, std::string_view b) const {
  const Encoding a_raw = encode_raw(a);
  const Encoding b_raw = encode_raw(b);
  const auto total = static_cast<int>(a_raw.size() + b_raw.size() + 3);
  return pair_windows(a_raw, b_raw, total, 0).front();
}

std::vector<Encoding> Tokenizer::encode_pair_windows(std::string_view a, std::string_view b,
                                                     int max_length, int stride) const {
  return pair_windows(encode_raw(a), encode_raw(b), max_length, stride);
}

std::vector<Encoding> Tokenizer::pair_windows(const Encoding& a_raw, const Encoding& b_raw,
                                              int max_length, int stride) const {
  if (stride < 0) throw InputError("pair windows: stride must be >= 0, got " + std::to_string(stride));
  const auto n_a = static_cast<long>(a_raw.size());
  const auto n_b = static_cast<long>(b_raw.size());
  // HF truncation (only_second): nothing to do when everything fits; otherwise b is cut into
  // windows of M tokens, each starting M - stride after the previous one, until one reaches
  // the end of b. HF rejects M <= 0 and stride >= M only when b actually has to be cut.
  const long window = max_length - 3 - n_a;
  const bool fits = n_a + n_b + 3 <= max_length;
  if (!fits && window <= 0) {
    throw InputError("pair windows: the first sequence has " + std::to_string(n_a) +
                     " tokens, which leaves no room for the second within max_length " +
                     std::to_string(max_length));
  }
  if (!fits && stride >= window) {
    throw InputError("pair windows: stride " + std::to_string(stride) +
                     " must be smaller than the window of " + std::to_string(window) +
                     " tokens (max_length " + std::to_string(max_length) + " - 3 - " +
                     std::to_string(n_a) + " first-sequence tokens)");
  }

  std::vector<Encoding> windows;
  for (long start = 0;; start += window - stride) {
    const long end = fits ? n_b : std::min(start + window, n_b);
    Encoding e;
    const size_t size = static_cast<size_t>(n_a + (end - start) + 3);
    e.ids.reserve(size);
    e.offsets.reserve(size);
    e.type_ids.reserve(size);
    push_token(e, cls_id_, {}, 0);
    append_range(e, a_raw, 0, a_raw.size(), 0);
    push_token(e, sep_id_, {}, 0);
    append_range(e, b_raw, static_cast<size_t>(start), static_cast<size_t>(end), 1);
    push_token(e, sep_id_, {}, 1);
    windows.push_back(std::move(e));
    if (end == n_b) break;
  }
  return windows;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }

int32_t Tokenizer::token_to_id(std::string_view token) const { return token_ids_.find(token); }

const std::string& Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                     std::to_string(vocab_size()) + ")");
  }
  return id_to_token_[static_cast<size_t>(id)];
}

}  // namespace rexnlu::text
