// Accuracy guard of the reduced precisions (--precision int8; issue 14): the e2e cases of the
// original (tests/data/rexuninlu_tiny/e2e_cases.jsonl) decoded by an int8 engine must match the
// original's output (which the fp32 engine matches: test_parity.cpp) wherever the original's
// decisions are not knife-edge. Each case records the smallest
// |logit| the original decided on (min_abs_logit); below kMargin a quantization error of that size
// may flip a decision legitimately, so those cases are reported, not required.
#include <gtest/gtest.h>

#include <cstdio>

#include "fixtures.h"
#include "uie/e2e_case.h"
#include "rexnlu/engine.h"

namespace rexnlu {
namespace {

using uie::testing::read_jsonl;

// The tiny fixture model's logits are small (|Z| mostly < 1), so its margin is small too: measured
// int8 |dZ| on these cases is recorded in docs/accuracy.md.
constexpr double kMargin = 0.05;

TEST(Precision, Int8DecodesTheE2eCasesAsTheOriginal) {
  Engine int8 = Engine::load(uie::testing::model_dir(), LoadOptions{Device::kCpu, Precision::kInt8, 0});
  EXPECT_EQ(int8.model_info().precision, "int8");
  int required = 0, required_same = 0, near = 0, near_same = 0;
  for (const auto& c : read_jsonl(uie::testing::tiny_dir() + "/e2e_cases.jsonl")) {
    const std::string id = c["id"].get<std::string>();
    SCOPED_TRACE(id);
    const Options o = rexnlu::testing::rex_case_options(c);
    const std::string text = c["text"].get<std::string>(), schema = c["schema"].dump();
    const std::string want = c["expected"].dump(), got = rexnlu::testing::paths_json(int8.extract(text, schema, o)).dump();
    const double margin = c["min_abs_logit"].get<double>();
    const bool same = want == got;
    if (margin >= kMargin) {
      ++required;
      required_same += same;
      EXPECT_TRUE(same) << "int8 " << got << "\noriginal " << want;
    } else {
      ++near;
      near_same += same;
    }
    if (!same) std::printf("int8 differs from the original: %-32s min_abs_logit %.2e\n", id.c_str(), margin);
  }
  std::printf("int8 vs the original: %d/%d cases with min_abs_logit >= %.2f identical; %d/%d below it identical\n",
              required_same, required, kMargin, near_same, near);
  EXPECT_GT(required, 0);
}

}  // namespace
}  // namespace rexnlu
