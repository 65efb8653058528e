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

void expect_decodes_the_e2e_cases_as_the_original(Precision precision) {
  const std::string name(precision_name(precision));
  Engine engine = Engine::load(uie::testing::model_dir(), LoadOptions{Device::kCpu, precision, 0});
  EXPECT_EQ(engine.model_info().precision, name);
  int required = 0, required_same = 0, near = 0, near_same = 0;
  for (const auto& c : read_jsonl(uie::testing::tiny_dir() + "/e2e_cases.jsonl")) {
    const std::string id = c["id"].get<std::string>();
    SCOPED_TRACE(id);
    const Options o = rexnlu::testing::rex_case_options(c);
    const std::string text = c["text"].get<std::string>(), schema = c["schema"].dump();
    const std::string want = c["expected"].dump(), got = rexnlu::testing::paths_json(engine.extract(text, schema, o)).dump();
    const double margin = c["min_abs_logit"].get<double>();
    const bool same = want == got;
    if (margin >= kMargin) {
      ++required;
      required_same += same;
      EXPECT_TRUE(same) << name << " " << got << "\noriginal " << want;
    } else {
      ++near;
      near_same += same;
    }
    if (!same) std::printf("%s differs from the original: %-32s min_abs_logit %.2e\n", name.c_str(), id.c_str(), margin);
  }
  std::printf("%s vs the original: %d/%d cases with min_abs_logit >= %.2f identical; %d/%d below it identical\n",
              name.c_str(), required_same, required, kMargin, near_same, near);
  EXPECT_GT(required, 0);
}

TEST(Precision, Int8DecodesTheE2eCasesAsTheOriginal) { expect_decodes_the_e2e_cases_as_the_original(Precision::kInt8); }

// bf16 rounds each linear layer's operands to 8 significant bits (relative error <= 2^-9, finer
// than int8's steps), so the same margin applies. Measured (AVX2, emulated bf16): 10 of the 56
// cases differ, all with min_abs_logit <= 1.3e-2 (int8: 16, up to 1.8e-2); the 2 above it match.
TEST(Precision, Bf16DecodesTheE2eCasesAsTheOriginal) {
  expect_decodes_the_e2e_cases_as_the_original(Precision::kBFloat16);
}

}  // namespace
}  // namespace rexnlu
