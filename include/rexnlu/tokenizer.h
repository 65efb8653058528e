// The tokenizer of a model directory on its own (`rexnlu tokenize`): HF BertTokenizer-compatible
// WordPiece with the model family's special tokens, offsets in code points.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rexnlu {

struct Tokens {
  std::vector<int32_t> ids;
  std::vector<std::pair<int64_t, int64_t>> offsets;  // [start, end) in code points of the input
  std::vector<int32_t> type_ids;                     // 0 for the first text, 1 for the pair's second
};

class Tokenizer {
 public:
  // vocab.txt (+ tokenizer_config.json, special_tokens_map.json) of `model_dir`, with the added
  // tokens of the family its config.json names. Throws rexnlu::Error (kInvalidModel / kIo).
  static Tokenizer load(const std::filesystem::path& model_dir);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // [CLS] text [SEP]; throws rexnlu::Error (kInvalidInput) on invalid UTF-8.
  Tokens encode(std::string_view utf8) const;
  // [CLS] a [SEP] b [SEP], no truncation.
  Tokens encode_pair(std::string_view a, std::string_view b) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// UTF-8 <-> code points (results' offsets count code points). decode throws rexnlu::Error
// (kInvalidInput) naming `what` and the byte offset of the first bad sequence.
std::u32string utf8_to_code_points(std::string_view utf8, std::string_view what = "text");
std::string code_points_to_utf8(std::u32string_view code_points);

}  // namespace rexnlu
