// End-to-end parity with the original implementation: real tokenizer + real CPU model on
// models/rexuninlu_tiny against tests/data/rexuninlu_tiny/e2e_cases.jsonl.
#include <gtest/gtest.h>

#include <cstdio>

#include "engine/engine_impl.h"
#include "fixtures.h"
#include "uie/e2e_case.h"
#include "models/registry.h"
#include "test_device.h"

namespace rexnlu {
namespace {

using uie::testing::read_jsonl;

// Passes batches to the real model and counts the sequences (the original's forward passes).
// dense: the pipeline gets every dense Z (LinkModel's default forward_links over the model's
// forward) instead of what its queries ask (the model's own forward_links: links only in extraction).
class CountingModel : public models::LinkModel {
 public:
  explicit CountingModel(std::unique_ptr<models::LinkModel> inner) : inner_(std::move(inner)) {}
  std::vector<models::LinkLogits> forward(const std::vector<models::SequenceInput>& batch) override {
    sequences += static_cast<int64_t>(batch.size());
    return inner_->forward(batch);
  }
  std::vector<models::SequenceLinks> forward_links(const std::vector<models::SequenceInput>& batch) override {
    if (dense) return LinkModel::forward_links(batch);
    sequences += static_cast<int64_t>(batch.size());
    return inner_->forward_links(batch);
  }
  int64_t forward_calls() const override { return inner_->forward_calls(); }
  int64_t sequences = 0;
  bool dense = false;

 private:
  std::unique_ptr<models::LinkModel> inner_;
};

TEST(Parity, EndToEndCasesOfTheOriginal) {
  const std::string dir = uie::testing::model_dir();
  // The engine's load path (the family from the registry), with the network wrapped to count sequences.
  // The device and precision from REXNLU_TEST_DEVICE / REXNLU_TEST_PRECISION (CPU fp32 by default).
  const LoadOptions load = rexnlu::testing::test_load_options();
  // Must-match threshold on min_abs_logit: 1e-3 in fp32, 1e-2 in fp16 (11 significant bits), 8e-2 in
  // bf16: 8 significant bits round 8x coarser than fp16's 11, and bf16 weights alone move this tiny
  // model's logits by up to 0.2 (docs/parity.md). No case of the fixture clears 8e-2, so in bf16 this
  // test asserts the sequence counts (the recursion's shape) and reports the decisions; bf16
  // decisions are asserted on the demo model (tests/models/test_demo_precision, real margins).
  const double strict_min = load.precision == Precision::kFloat32   ? 1e-3
                            : load.precision == Precision::kBFloat16 ? 8e-2
                                                                     : 1e-2;
  models::LoadedModel loaded = models::family_of(dir).load(dir, load);
  auto counting = std::make_unique<CountingModel>(std::move(loaded.network));
  CountingModel* model = counting.get();
  Engine engine(std::make_unique<Engine::Impl>(Engine::Impl{std::move(loaded.tokenizer), std::move(counting), {}}));

  int strict = 0, strict_ok = 0, loose = 0, loose_ok = 0, seq_ok = 0, cases = 0;
  for (const auto& c : read_jsonl(uie::testing::tiny_dir() + "/e2e_cases.jsonl")) {
    const std::string id = c["id"].get<std::string>();
    SCOPED_TRACE(id);
    const Options o = rexnlu::testing::rex_case_options(c);
    const int64_t calls_before = engine.forward_calls(), seqs_before = model->sequences;
    const Result r = engine.extract(c["text"].get<std::string>(), c["schema"].dump(), o);
    const int64_t calls = engine.forward_calls() - calls_before, seqs = model->sequences - seqs_before;
    // The dense Z decode the same (bit-identical scores on the CPU and on the GPU: one kernel).
    model->dense = true;
    EXPECT_EQ(rexnlu::testing::paths_json(engine.extract(c["text"].get<std::string>(), c["schema"].dump(), o)),
              rexnlu::testing::paths_json(r))
        << "dense vs links";
    model->dense = false;
    const bool same = rexnlu::testing::paths_json(r) == c["expected"];
    const int64_t original_calls = c["forward_calls"].get<int64_t>();
    ++cases;
    seq_ok += seqs == original_calls;
    if (c["min_abs_logit"].get<double>() >= strict_min) {
      ++strict;
      strict_ok += same;
      EXPECT_TRUE(same) << "got " << rexnlu::testing::paths_json(r).dump() << "\nexpected " << c["expected"].dump();
      EXPECT_EQ(seqs, original_calls) << "sequences run vs the original's forward passes";
    } else {
      ++loose;
      loose_ok += same;
    }
    std::printf("%-40s %s  sequences %3lld (original forward passes %3lld)  batched forwards %lld\n", id.c_str(),
                same ? "same" : "DIFF", static_cast<long long>(seqs), static_cast<long long>(original_calls),
                static_cast<long long>(calls));
  }
  // Where no case clears the margin (bf16), the recursion's shape is what can be asserted: every
  // case runs as many sequences as the original's forward passes (56/56 on the H200 in fp32, fp16
  // and bf16 alike, session 10).
  if (strict == 0) {
    EXPECT_EQ(seq_ok, cases) << "cases whose sequence count differs from the original's forward passes";
  }
  std::printf("parity (%s): %d/%d cases with min_abs_logit >= %g identical; %d/%d near-threshold cases also identical; "
              "sequence counts equal the original's forward passes in %d/%d cases\n",
              std::string(precision_name(load.precision)).c_str(), strict_ok, strict, strict_min, loose_ok, loose, seq_ok,
              cases);
}

}  // namespace
}  // namespace rexnlu
