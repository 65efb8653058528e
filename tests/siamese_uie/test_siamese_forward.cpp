// The SiameseUIE network against the ORIGINAL's outputs on the tiny model (float64 reference):
// the lower-layer text states and the head/tail logits of every forward case, each case alone
// and all cases in one batch (a pair's result must not depend on its batch mates).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "models/registry.h"
#include "rexnlu/error.h"
#include "siamese_fixtures.h"
#include "test_device.h"
#include "text/tokenizer.h"

namespace rexnlu {
namespace {

using siamese_testing::forward_cases;
using siamese_testing::tiny_dir;

using siamese_testing::flat;
using siamese_testing::worst;

struct Loaded {
  models::LoadedModel m;
  models::PointerModel& model() { return *m.pointer_network; }
};

// On the device REXNLU_TEST_DEVICE / REXNLU_TEST_PRECISION name (CPU fp32 by default; the GPU
// machine's scripts/test_gpu_engine.sh runs these on cuda too).
Loaded load() { return Loaded{models::family_of(tiny_dir()).load(tiny_dir(), rexnlu::testing::test_load_options())}; }

TEST(SiameseForward, EveryCaseAloneMatchesTheOriginal) {
  Loaded l = load();
  ASSERT_TRUE(l.m.pointer_network);
  int n = 0;
  double w_lower = 0, w_head = 0, w_tail = 0;
  for (const auto& c : forward_cases()) {
    SCOPED_TRACE(c["id"].get<std::string>());
    const auto ids = c["text_ids"].get<std::vector<int32_t>>();
    std::vector<models::TextStates> states = l.model().encode_texts({ids});
    w_lower = std::max(w_lower, worst(states[0], flat(c["text_hidden_lower"])));
    EXPECT_LE(worst(states[0], flat(c["text_hidden_lower"])), 1.0) << "lower-layer text states";
    models::PointerInput in;
    in.text = std::make_shared<const models::TextStates>(std::move(states[0]));
    in.text_length = static_cast<int32_t>(ids.size());
    in.hint_ids = c["hint_ids"].get<std::vector<int32_t>>();
    in.hint_first_position = in.text_length;  // one window: the hint's positions follow the text
    const std::vector<models::PointerLogits> out = l.model().forward({in});
    EXPECT_LE(worst(out[0].head, flat(c["head_logits"])), 1.0) << "head logits";
    EXPECT_LE(worst(out[0].tail, flat(c["tail_logits"])), 1.0) << "tail logits";
    w_head = std::max(w_head, worst(out[0].head, flat(c["head_logits"])));
    w_tail = std::max(w_tail, worst(out[0].tail, flat(c["tail_logits"])));
    ++n;
  }
  std::printf("max |d| / max(1, |ref|): lower-layer states %.1e, head logits %.1e, tail logits %.1e\n", w_lower * 1e-4,
              w_head * 1e-4, w_tail * 1e-4);
  EXPECT_EQ(n, 27);
}

TEST(SiameseForward, AllCasesInOneBatchMatchTheOriginal) {
  Loaded l = load();
  const auto cases = forward_cases();
  std::vector<std::vector<int32_t>> windows;
  for (const auto& c : cases) windows.push_back(c["text_ids"].get<std::vector<int32_t>>());
  std::vector<models::TextStates> states = l.model().encode_texts(windows);
  std::vector<models::PointerInput> batch;
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_LE(worst(states[i], flat(cases[i]["text_hidden_lower"])), 1.0) << cases[i]["id"];
    models::PointerInput in;
    in.text = std::make_shared<const models::TextStates>(states[i]);
    in.text_length = static_cast<int32_t>(windows[i].size());
    in.hint_ids = cases[i]["hint_ids"].get<std::vector<int32_t>>();
    in.hint_first_position = in.text_length;
    batch.push_back(std::move(in));
  }
  const int64_t calls = l.model().forward_calls();
  const std::vector<models::PointerLogits> out = l.model().forward(batch);
  EXPECT_EQ(l.model().forward_calls(), calls + 1);
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_LE(worst(out[i].head, flat(cases[i]["head_logits"])), 1.0) << cases[i]["id"];
    EXPECT_LE(worst(out[i].tail, flat(cases[i]["tail_logits"])), 1.0) << cases[i]["id"];
  }
}

TEST(SiameseForward, TheTokenizerGivesTheOriginalsIds) {
  // tokenizer.json (the fixture's, as HF's fast tokenizer reads it) over the e2e texts of the same ids.
  const text::Tokenizer tok = text::Tokenizer::from_model_dir(tiny_dir(), {});
  std::map<std::string, std::string> texts;
  for (const auto& c : siamese_testing::e2e_cases()) texts[c["id"].get<std::string>()] = c["text"].get<std::string>();
  for (const auto& c : forward_cases()) {
    const std::string id = c["id"].get<std::string>();
    ASSERT_TRUE(texts.count(id)) << id;
    const text::Encoding e = tok.encode(texts[id]);
    EXPECT_EQ(e.ids, c["text_ids"].get<std::vector<int32_t>>()) << id;
    std::vector<std::vector<int32_t>> offsets;
    for (const auto& o : e.offsets) offsets.push_back({o.start, o.end});
    EXPECT_EQ(offsets, c["text_offsets"].get<std::vector<std::vector<int32_t>>>()) << id;
    const text::Encoding hint = tok.encode(c["hint"].get<std::string>());
    EXPECT_EQ(hint.ids, c["hint_ids"].get<std::vector<int32_t>>()) << id;
  }
}

TEST(SiameseForward, BadInputsAreRefusedByName) {
  Loaded l = load();
  models::PointerInput in;
  in.text = std::make_shared<const models::TextStates>(l.model().encode_texts({{2, 5, 3}})[0]);
  in.text_length = 3;
  in.hint_ids = {2, 99999, 3};
  in.hint_first_position = 3;
  EXPECT_THROW(l.model().forward({in}), Error);
  in.hint_ids = {2, 5, 3};
  in.hint_first_position = 510;  // past max_position_embeddings 512
  try {
    l.model().forward({in});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_position_embeddings"), std::string::npos) << e.what();
  }
}

// The layer stacks run as recordings a GPU replays (BertLayerStack::forward). Calls of the same
// shapes must give the same bits as a model that records nothing (REXNLU_CUDA_GRAPHS=0), also when
// an earlier stage of the pass moved the joint stack's buffers: batch B's pairs have the lengths
// of batch A's, but its two pairs share one hint, so the lower layers run one hint instead of two
// and the pass allocates less before the joint layers. On the CPU (no recordings) this checks
// determinism.
TEST(SiameseForward, RepeatedShapesGiveThePlainPassesBits) {
  Loaded recorded = load();
  setenv("REXNLU_CUDA_GRAPHS", "0", 1);
  Loaded plain = load();
  unsetenv("REXNLU_CUDA_GRAPHS");
  const auto ids = forward_cases()[0]["text_ids"].get<std::vector<int32_t>>();
  const auto pair = [&](Loaded& l, std::vector<int32_t> hint) {
    models::PointerInput in;
    in.text = std::make_shared<const models::TextStates>(l.model().encode_texts({ids})[0]);
    in.text_length = static_cast<int32_t>(ids.size());
    in.hint_ids = std::move(hint);
    in.hint_first_position = in.text_length;
    return in;
  };
  const std::vector<int32_t> hx = {2, 5, 6, 3}, hy = {2, 7, 8, 3};
  const auto batch_a = [&](Loaded& l) { return std::vector<models::PointerInput>{pair(l, hx), pair(l, hy)}; };
  const auto batch_b = [&](Loaded& l) { return std::vector<models::PointerInput>{pair(l, hx), pair(l, hx)}; };
  const std::string order = "AAABBBAB";  // plain, recorded, replayed; then B's the same; then again
  for (size_t n = 0; n < order.size(); ++n) {
    const bool a = order[n] == 'A';
    const auto want = plain.model().forward(a ? batch_a(plain) : batch_b(plain));
    const auto got = recorded.model().forward(a ? batch_a(recorded) : batch_b(recorded));
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].head, want[i].head) << "call " << n << " (" << order[n] << "), pair " << i;
      EXPECT_EQ(got[i].tail, want[i].tail) << "call " << n << " (" << order[n] << "), pair " << i;
    }
  }
}

}  // namespace
}  // namespace rexnlu

namespace rexnlu {
namespace {

// ee/金融舆情-3 (a heavy e2e case) differs from `expected` in one decision, repeated for every
// event type whose hint tokenizes alike: the tail of the trigger found at character 175. This
// test shows that decision sits on the threshold: the tail logits there are within 1e-3 of 0.5,
// where float32 and the reference's arithmetic may legitimately disagree (as the Rex fixtures'
// min_abs_logit cases).
TEST(SiameseForward, TheOneDifferingDecisionIsOnTheThreshold) {
  Loaded l = load();
  const text::Tokenizer tok = text::Tokenizer::from_model_dir(tiny_dir(), {});
  std::string text;
  for (const auto& c : siamese_testing::e2e_cases())
    if (c["id"] == "ee/金融舆情-3") text = c["text"].get<std::string>();
  ASSERT_FALSE(text.empty());
  const text::Encoding e = tok.encode(text);
  models::PointerInput in;
  in.text = std::make_shared<const models::TextStates>(l.model().encode_texts({e.ids})[0]);
  in.text_length = static_cast<int32_t>(e.ids.size());
  in.hint_ids = tok.encode("股权冻结(事件触发词): ").ids;
  in.hint_first_position = in.text_length;
  const models::PointerLogits out = l.model().forward({in})[0];
  double closest = 1e9;
  for (size_t t = 0; t < e.ids.size(); ++t) {
    if (e.offsets[t].end == 177 || e.offsets[t].end == 179) {
      std::printf("token %zu [%d, %d): tail logit %.7f\n", t, e.offsets[t].start, e.offsets[t].end, out.tail[t]);
      closest = std::min(closest, std::abs(static_cast<double>(out.tail[t]) - 0.5));
    }
  }
  EXPECT_LT(closest, 1e-3);
}

}  // namespace
}  // namespace rexnlu
