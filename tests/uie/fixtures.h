// Reading the golden fixtures of the original implementation (tests/data/rexuninlu_tiny) and
// the fake LinkModels the pipeline tests run against.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "models/link_model.h"
#include "models/rex/rex_family.h"

namespace rexnlu::uie::testing {

inline std::string tiny_dir() { return std::string(REXNLU_TEST_DATA) + "/rexuninlu_tiny"; }
inline std::string model_dir() { return std::string(REXNLU_MODELS_DIR) + "/rexuninlu_tiny"; }

// One JSON value per line; lines are split on '\n' only.
inline std::vector<nlohmann::ordered_json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::ordered_json> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(nlohmann::ordered_json::parse(line));
  }
  return rows;
}

// Returns hand-made logits per sequence and counts calls and sequences.
class FakeLinkModel : public models::LinkModel {
 public:
  using Fill = std::function<models::LinkLogits(const models::SequenceInput&)>;
  explicit FakeLinkModel(Fill fill) : fill_(std::move(fill)) {}
  std::vector<models::LinkLogits> forward(const std::vector<models::SequenceInput>& batch) override {
    ++calls_;
    sequences_ += static_cast<int64_t>(batch.size());
    std::vector<models::LinkLogits> out;
    for (const auto& s : batch) {
      max_batch_ = std::max<int64_t>(max_batch_, static_cast<int64_t>(batch.size()));
      out.push_back(fill_(s));
    }
    return out;
  }
  int64_t forward_calls() const override { return calls_; }
  int64_t sequences() const { return sequences_; }
  int64_t max_batch() const { return max_batch_; }

 private:
  Fill fill_;
  int64_t calls_ = 0, sequences_ = 0, max_batch_ = 0;
};

// Links `head..tail` of the first text window (offsets from its first text token) with every
// [TYPE] (id 12801) of a sequence; nothing when the span does not fit.
inline models::LinkLogits link_all_types(const models::SequenceInput& s, int32_t head_off, int32_t tail_off) {
  const int32_t L = s.length();
  models::LinkLogits z(static_cast<size_t>(L) * L, -5.0f);
  int32_t H = 0;
  while (H < L && s.ids[H] != 2) ++H;
  ++H;
  const int32_t h = H + head_off, t = H + tail_off;
  if (t >= L - 1) return z;
  z[static_cast<size_t>(h) * L + t] = 3.0f;
  for (int32_t k = 0; k < H; ++k) {
    if (s.ids[k] != 12801) continue;
    z[static_cast<size_t>(h) * L + k] = 3.0f;
    z[static_cast<size_t>(k) * L + t] = 3.0f;
  }
  return z;
}

// The first text token as a one-token span of every [TYPE]: every level finds one span per type
// and a nested schema recurses to its last level.
inline models::LinkLogits link_first_token(const models::SequenceInput& s) { return link_all_types(s, 0, 0); }

// All logits strongly negative: nothing links.
inline models::LinkLogits no_links(const models::SequenceInput& s) {
  return models::LinkLogits(static_cast<size_t>(s.length()) * s.length(), -5.0f);
}

}  // namespace rexnlu::uie::testing
