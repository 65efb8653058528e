// rexnlu against the ORIGINAL ModelScope SiameseUIE code on a full-size random model (issue 15 item
// 4): run by hand, not in CI (the model is 409 MB and the original needs torch). The directory
// named by REXNLU_SIAMESE_FULLSIZE holds the model (tools/compare_original/siamese_fullsize_case.py)
// and the original's outputs on it (tools/compare_original/siamese_original.py): forward_cases.jsonl
// (float64) and e2e_cases.jsonl (`expected` from the original's float32 run, `expected_f64` from
// its float64 run). tools/compare_original/README.md says how; docs/parity.md has the numbers.
// rexnlu runs on the device REXNLU_TEST_DEVICE / REXNLU_TEST_PRECISION name (CPU fp32 by default).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "models/registry.h"
#include "rexnlu/engine.h"
#include "siamese_fixtures.h"
#include "test_device.h"
#include "uie/e2e_case.h"

namespace rexnlu {
namespace {

using siamese_testing::flat;
using siamese_testing::read_jsonl;
using siamese_testing::worst;

std::string fullsize_dir() {
  const char* dir = std::getenv("REXNLU_SIAMESE_FULLSIZE");
  return dir ? dir : "";
}

TEST(SiameseFullsize, EncoderAndHeadMatchTheOriginal) {
  const std::string dir = fullsize_dir();
  if (dir.empty()) GTEST_SKIP() << "REXNLU_SIAMESE_FULLSIZE is not set (tools/compare_original/README.md)";
  models::LoadedModel m = models::family_of(dir).load(dir, rexnlu::testing::test_load_options());
  ASSERT_TRUE(m.pointer_network);
  double w_lower = 0, w_head = 0, w_tail = 0;
  int n = 0;
  for (const auto& c : read_jsonl(dir + "/forward_cases.jsonl")) {
    SCOPED_TRACE(c["id"].get<std::string>());
    const auto ids = c["text_ids"].get<std::vector<int32_t>>();
    // The tokenizer (vocab.txt of 21,128 entries, as HF's BertTokenizerFast reads it) gives the original's ids.
    EXPECT_EQ(m.tokenizer.encode(c["hint"].get<std::string>()).ids,
              c["hint_ids"].get<std::vector<int32_t>>());
    std::vector<models::TextStates> states = m.pointer_network->encode_texts({ids});
    const double lower = worst(states[0], flat(c["text_hidden_lower"]));
    models::PointerInput in;
    in.text = std::make_shared<const models::TextStates>(std::move(states[0]));
    in.text_length = static_cast<int32_t>(ids.size());
    in.hint_ids = c["hint_ids"].get<std::vector<int32_t>>();
    in.hint_first_position = in.text_length;
    const models::PointerLogits out = m.pointer_network->forward({in})[0];
    const double head = worst(out.head, flat(c["head_logits"])), tail = worst(out.tail, flat(c["tail_logits"]));
    EXPECT_LE(lower, 1.0) << "lower-layer text states";
    EXPECT_LE(head, 1.0) << "head logits";
    EXPECT_LE(tail, 1.0) << "tail logits";
    std::printf("%-40s L %3zu  max|d|/max(1,|ref|): lower %.1e head %.1e tail %.1e\n", c["id"].get<std::string>().c_str(),
                ids.size(), lower * 1e-4, head * 1e-4, tail * 1e-4);
    w_lower = std::max(w_lower, lower);
    w_head = std::max(w_head, head);
    w_tail = std::max(w_tail, tail);
    ++n;
  }
  std::printf("%d cases: max |d| / max(1, |ref|): lower-layer states %.1e, head logits %.1e, tail logits %.1e\n", n,
              w_lower * 1e-4, w_head * 1e-4, w_tail * 1e-4);
  EXPECT_GT(n, 0);
}

TEST(SiameseFullsize, EndToEndAsTheOriginal) {
  const std::string dir = fullsize_dir();
  if (dir.empty()) GTEST_SKIP() << "REXNLU_SIAMESE_FULLSIZE is not set (tools/compare_original/README.md)";
  Engine engine = Engine::load(dir, rexnlu::testing::test_load_options());
  int n = 0, same = 0, knife_edge = 0;
  for (const auto& c : read_jsonl(dir + "/e2e_cases.jsonl")) {
    const std::string id = c["id"].get<std::string>();
    SCOPED_TRACE(id);
    Options o;
    o.dedup = false;  // the original keeps repeated paths
    const nlohmann::ordered_json got = rexnlu::testing::paths_json(engine.extract(c["text"].get<std::string>(),
                                                                                 c["schema"].dump(), o));
    const bool ok = got == c["expected"];
    // Where the original's own float32 and float64 runs disagree, a decision sits on the threshold.
    const bool edge = c["expected"] != c["expected_f64"];
    if (!edge) {
      EXPECT_TRUE(ok) << "got " << got.dump() << "\nexpected " << c["expected"].dump();
    }
    std::printf("%-40s %s  paths %4zu (original %4zu)%s\n", id.c_str(), ok ? "same" : "DIFF", got.size(),
                c["expected"].size(),
                !edge ? "" : got == c["expected_f64"] ? "  original f32 != f64; rexnlu == f64" : "  original f32 != f64");
    ++n;
    same += ok;
    knife_edge += edge;
  }
  std::printf("end to end: %d/%d cases identical to the original (float32 run); %d with f32 != f64 in the original\n",
              same, n, knife_edge);
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace rexnlu
