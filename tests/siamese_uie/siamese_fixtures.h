// The golden fixtures of the original SiameseUIE (tests/data/siamese_uie_tiny: the tiny model
// directory itself plus forward_cases.jsonl and e2e_cases.jsonl, copied from
// /work/shared/fixtures/siamese_uie_tiny).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

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

// |got - ref| <= 1e-4 * max(1, |ref|) for every element; returns the worst ratio to that bound.
inline double worst(const std::vector<float>& got, const std::vector<double>& ref) {
  EXPECT_EQ(got.size(), ref.size());
  double w = 0;
  for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i)
    w = std::max(w, std::abs(got[i] - ref[i]) / (1e-4 * std::max(1.0, std::abs(ref[i]))));
  return w;
}

// A fixture's number or rows of numbers, flattened.
inline std::vector<double> flat(const nlohmann::ordered_json& rows) {
  std::vector<double> out;
  for (const auto& r : rows) {
    if (r.is_array()) {
      for (const auto& v : r) out.push_back(v.get<double>());
    } else {
      out.push_back(r.get<double>());
    }
  }
  return out;
}

}  // namespace rexnlu::siamese_testing
