// BERT WordPiece tokenizer with the RexUniNLU added tokens, matching HF tokenizers'
// fast BertTokenizer (spec section 1.3) and its pair overflow windows (spec section 5.2).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/added_tokens.h"
#include "text/encoding.h"
#include "text/normalizer.h"
#include "text/vocab_table.h"
#include "text/wordpiece.h"

namespace rexnlu::text {

class Tokenizer {
 public:
  // Loads vocab.txt (required unless there is a tokenizer.json, which HF's fast tokenizer then
  // uses instead: only BERT WordPiece ones), tokenizer_config.json and special_tokens_map.json
  // (optional) from a model directory and appends the model family's `added_tokens` (RexUniNLU: [PREFIX]
  // [TYPE] [CLASSIFY] [MULTICLASSIFY], models/rex/rex_family.h) as ids vocab_size .. unless
  // vocab.txt has them. Throws rexnlu::Error (kInvalidModel).
  static Tokenizer from_model_dir(const std::filesystem::path& dir, const std::vector<std::string>& added_tokens);

  // Tokens of one text with no [CLS]/[SEP]. Throws rexnlu::Error (kInvalidInput) on invalid UTF-8.
  Encoding encode_raw(std::string_view utf8) const;

  // [CLS] text [SEP], type ids all 0.
  Encoding encode(std::string_view utf8) const;

  // [CLS] a [SEP] b [SEP] with type ids 0 / 1; no truncation.
  Encoding encode_pair(std::string_view a, std::string_view b) const;

  // The windows HF tokenizers (< 0.23) returns for
  //   tokenizer(a, b, truncation="only_second", max_length, stride, return_overflowing_tokens=True)
  // : [CLS] a [SEP] window_k(b) [SEP], where the windows cover all of b (spec 5.2).
  // Throws rexnlu::Error (kInvalidInput) when a alone leaves no room for b.
  std::vector<Encoding> encode_pair_windows(std::string_view a, std::string_view b, int max_length,
                                            int stride) const;
  // Same, from already tokenized parts (encode_raw outputs): the pipeline tokenizes a text once
  // and pairs it with many hints.
  std::vector<Encoding> pair_windows(const Encoding& a_raw, const Encoding& b_raw, int max_length,
                                     int stride) const;

  int32_t vocab_size() const;                       // including added tokens (12,804 for RexUniNLU)
  int32_t token_to_id(std::string_view token) const;  // -1 when absent
  const std::string& id_to_token(int32_t id) const;

  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }

 private:
  // Tokens of one stretch of text between added tokens, appended to out.
  void encode_plain(std::span<const char32_t> text, int32_t origin, Encoding& out) const;
  int32_t special_id(const std::string& token, const char* role) const;
  void load_vocab_txt(const std::filesystem::path& vocab_path);
  std::string load_tokenizer_json(const std::filesystem::path& path);  // returns the unk token

  std::vector<std::string> id_to_token_;  // vocab.txt lines, then the added tokens
  VocabTable token_ids_;                  // every token -> id
  WordPiece wordpiece_;                   // vocab.txt only
  AddedTokens added_tokens_;              // matched case-sensitively before normalization
  BertNormalizer normalizer_;
  int32_t cls_id_ = -1, sep_id_ = -1, pad_id_ = -1, unk_id_ = -1;
};

}  // namespace rexnlu::text
