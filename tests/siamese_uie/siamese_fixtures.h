// The golden fixtures of the original SiameseUIE (tests/data/siamese_uie_tiny: the tiny model
// directory itself plus forward_cases.jsonl and e2e_cases.jsonl, copied from
// /work/shared/fixtures/siamese_uie_tiny).
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

namespace rexnlu::siamese_testing {

inline std::string tiny_dir() { return std::string(REXNLU_TEST_DATA) + "/siamese_uie_tiny"; }

inline std::vector<nlohmann::ordered_json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<nlohmann::ordered_json> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(nlohmann::ordered_json::parse(line));
  }
  return rows;
}

inline std::vector<nlohmann::ordered_json> forward_cases() { return read_jsonl(tiny_dir() + "/forward_cases.jsonl"); }
inline std::vector<nlohmann::ordered_json> e2e_cases() { return read_jsonl(tiny_dir() + "/e2e_cases.jsonl"); }

}  // namespace rexnlu::siamese_testing
