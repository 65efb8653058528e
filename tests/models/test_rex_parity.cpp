// The RexUniNLU encoder + link head against the ORIGINAL implementation's outputs on the tiny
// model (tests/data/rexuninlu_tiny/forward_cases.jsonl, float64 reference): every case alone,
// and all cases in one batch (a sequence's result must not depend on its batch mates).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "models/rex/rex_config.h"
#include "io/safetensors.h"
#include "models/rex/packed_batch.h"
#include "models/rex/rex_family.h"
#include "models/rex/rex_uninlu_model.h"
#include "rexnlu/error.h"
#include "test_device.h"

namespace rexnlu::models {
namespace {

using rexnlu::testing::has_gpu;

struct ForwardCase {
  std::string id;
  SequenceInput input;
  std::vector<double> hidden;  // [L*H]
  std::vector<double> logits;  // [L*L]
};

std::vector<ForwardCase> load_cases() {
  std::ifstream in(std::string(REXNLU_TEST_DATA) + "/rexuninlu_tiny/forward_cases.jsonl");
  if (!in) throw std::runtime_error("cannot open forward_cases.jsonl");
  std::vector<ForwardCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    ForwardCase c;
    c.id = j.at("id").get<std::string>();
    c.input.ids = j.at("input_ids").get<std::vector<int32_t>>();
    c.input.position_ids = j.at("position_ids").get<std::vector<int32_t>>();
    for (const auto& row : j.at("attention_mask"))
      for (char ch : row.get<std::string>()) c.input.mask.push_back(ch == '1' ? 1 : 0);
    for (const auto& row : j.at("hidden"))
      for (double v : row) c.hidden.push_back(v);
    for (const auto& row : j.at("logits"))
      for (double v : row) c.logits.push_back(v);
    cases.push_back(std::move(c));
  }
  return cases;
}

const std::filesystem::path kModelDir = std::filesystem::path(REXNLU_MODELS_DIR) / "rexuninlu_tiny";
constexpr int64_t kTinyRows = 12804;  // vocab.txt (12,800) + 4 added tokens

RexUniNluModel& tiny_model() {
  static std::unique_ptr<RexUniNluModel> model = [] {
    const rex::ModelConfig config = rex::load_model_config(kModelDir / "config.json");
    const io::TensorStore weights = io::load_safetensors(kModelDir / "model.safetensors");
    return std::make_unique<RexUniNluModel>(config, weights, kTinyRows, rexnlu::testing::test_load_options());
  }();
  return *model;
}

// Every case's input, in order: the tiny model's batch of all cases.
std::vector<SequenceInput> inputs_of(const std::vector<ForwardCase>& cases) {
  std::vector<SequenceInput> batch;
  for (const auto& c : cases) batch.push_back(c.input);
  return batch;
}

// Largest |got - want| / max(1, |want|) over the arrays; the parity criterion is <= 1e-4. `want`:
// the original's (double) or another of our passes (float).
template <typename Want>
double scaled_error(const std::vector<float>& got, const std::vector<Want>& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const double w = want[i];
    worst = std::max(worst, std::abs(got[i] - w) / std::max(1.0, std::abs(w)));
  }
  return worst;
}

constexpr double kTolerance = 1e-4;

TEST(RexParity, FixturesAreComplete) {
  const auto cases = load_cases();
  ASSERT_EQ(cases.size(), 24u);
  for (const auto& c : cases) {
    const size_t L = c.input.ids.size();
    ASSERT_EQ(c.input.mask.size(), L * L) << c.id;
    ASSERT_EQ(c.logits.size(), L * L) << c.id;
    ASSERT_EQ(c.hidden.size() % L, 0u) << c.id;
  }
}

TEST(RexParity, EachCaseAloneMatchesOriginal) {
  auto& model = tiny_model();
  double worst_h = 0, worst_z = 0;
  for (const auto& c : load_cases()) {
    const auto out = model.forward_with_hidden({c.input});
    const double eh = scaled_error(out.hidden.at(0), c.hidden);
    const double ez = scaled_error(out.logits.at(0), c.logits);
    EXPECT_LE(eh, kTolerance) << c.id << " hidden";
    EXPECT_LE(ez, kTolerance) << c.id << " logits";
    worst_h = std::max(worst_h, eh);
    worst_z = std::max(worst_z, ez);
  }
  std::printf("alone: max scaled error hidden %.3g, logits %.3g\n", worst_h, worst_z);
}

TEST(RexParity, AllCasesInOneBatchMatchOriginal) {
  auto& model = tiny_model();
  const auto cases = load_cases();
  const std::vector<SequenceInput> batch = inputs_of(cases);
  // Twice, in both orders: neighbours and batch position must not matter.
  for (bool reversed : {false, true}) {
    std::vector<SequenceInput> b = batch;
    if (reversed) std::reverse(b.begin(), b.end());
    const auto out = model.forward_with_hidden(b);
    ASSERT_EQ(out.logits.size(), cases.size());
    double worst_h = 0, worst_z = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[reversed ? cases.size() - 1 - i : i];
      const double eh = scaled_error(out.hidden[i], c.hidden);
      const double ez = scaled_error(out.logits[i], c.logits);
      EXPECT_LE(eh, kTolerance) << c.id << " hidden (batched)";
      EXPECT_LE(ez, kTolerance) << c.id << " logits (batched)";
      worst_h = std::max(worst_h, eh);
      worst_z = std::max(worst_z, ez);
    }
    std::printf("batch of %zu%s: max scaled error hidden %.3g, logits %.3g\n", cases.size(),
                reversed ? " (reversed)" : "", worst_h, worst_z);
  }
}

TEST(RexParity, BatchedEqualsAlone) {
  // Same kernels, same per-sequence products: packing may change only the last bits. It is
  // bit-identical where the BLAS's summation order does not depend on the number of rows (oneDNN
  // with AVX-512); oneDNN's AVX2 sgemm picks row-count-dependent kernels (the AMD EPYC CI machine),
  // so the test asserts a difference well below the parity tolerance and identical link decisions.
  auto& model = tiny_model();
  const auto cases = load_cases();
  std::vector<SequenceInput> batch = {cases[3].input, cases[14].input, cases[7].input};
  const auto together = model.forward(batch);
  size_t values = 0, identical = 0;
  double worst = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto alone = model.forward({batch[i]});
    ASSERT_EQ(alone[0].size(), together[i].size()) << "sequence " << i;
    for (size_t k = 0; k < alone[0].size(); ++k) {
      const float a = alone[0][k], t = together[i][k];
      ++values;
      identical += a == t;
      worst = std::max(worst, std::abs(double(a) - t) / std::max(1.0, std::abs(double(a))));
      if (std::abs(a) > 1e-3f) {
        EXPECT_EQ(a > 0, t > 0) << "sequence " << i << " logit " << k << ": " << a << " vs " << t;
      }
    }
  }
  std::printf("batched vs alone: %zu of %zu logits bit-identical, max scaled difference %.3g\n", identical,
              values, worst);
  EXPECT_LE(worst, 5e-5);  // half the parity tolerance; 1.3e-5 measured on the AVX2 machine
}

// A device backend records a forward per shape and replays it (CUDA graphs: plain run, then
// capture, then replays). Every pass of a shape must give exactly the first pass's answers, also
// after a larger batch moved the scratch memory (the recording is then stale and remade). On the
// CPU this checks determinism only.
TEST(RexParity, RepeatedShapesGiveIdenticalAnswers) {
  auto& model = tiny_model();
  const auto cases = load_cases();
  const std::vector<SequenceInput> small = {cases[3].input, cases[14].input}, big = {
      cases[0].input, cases[1].input, cases[2].input, cases[5].input, cases[7].input, cases[9].input};
  const auto first = model.forward_with_hidden(small);
  for (int pass = 0; pass < 5; ++pass) {
    if (pass == 3) model.forward(big);  // grows the workspace: new addresses
    const auto again = model.forward_with_hidden(small);
    ASSERT_EQ(again.logits.size(), first.logits.size());
    for (size_t i = 0; i < small.size(); ++i) {
      EXPECT_EQ(again.logits[i], first.logits[i]) << "pass " << pass << " sequence " << i;
      EXPECT_EQ(again.hidden[i], first.hidden[i]) << "pass " << pass << " sequence " << i;
    }
  }
  // And the replayed answers are the original's.
  EXPECT_LE(scaled_error(first.logits[0], cases[3].logits), kTolerance);
  EXPECT_LE(scaled_error(first.hidden[1], cases[14].hidden), kTolerance);
}

// The GPU at fp16 / bf16 keeps the encoder's activations in 16 bits (Backend::activation_type();
// docs/architecture.md). On the tiny model, all cases in one batch: the description names the
// activations' type, the hidden states come back (widened on the device), finite and near the
// original's, and a replay gives the same bits. The bounds only catch gross errors (a buffer read
// in the wrong type, a missing conversion): the same rounding emulated on the CPU (weights, every
// op's output and the conv taps rounded to 16 bits, the link head's q|k left fp32; a throwaway
// patch, branch gpu16's report) gave max scaled errors hidden 3.4e-3 / logits 3.4e-2 in fp16 and
// 3.0e-2 / 0.27 in bf16; the bounds are about 5x (fp16) and 4x (bf16) those. The measured errors
// are printed, with fp32 activations (REXNLU_CUDA_16BIT_ACTIVATIONS=0; 16-bit ones are the default)
// beside them for comparison.
TEST(RexCuda16, SixteenBitActivationsStayNearTheOriginal) {
  if (!has_gpu()) GTEST_SKIP() << "no usable GPU";
  const rex::ModelConfig config = rex::load_model_config(kModelDir / "config.json");
  const io::TensorStore weights = io::load_safetensors(kModelDir / "model.safetensors");
  const auto cases = load_cases();
  const std::vector<SequenceInput> batch = inputs_of(cases);
  for (Precision p : {Precision::kFloat16, Precision::kBFloat16}) {
    const std::string name(precision_name(p));
    for (const bool fp32_activations : {false, true}) {
      if (fp32_activations) setenv("REXNLU_CUDA_16BIT_ACTIVATIONS", "0", 1);
      RexUniNluModel model(config, weights, kTinyRows, LoadOptions{Device::kCuda, p, 0});
      if (fp32_activations) unsetenv("REXNLU_CUDA_16BIT_ACTIVATIONS");
      const std::string want_desc = std::string(fp32_activations ? "fp32" : name) + " activations";
      EXPECT_NE(model.backend_description().find(name + " weights, " + want_desc), std::string::npos)
          << model.backend_description();
      const auto out = model.forward_with_hidden(batch);
      const auto again = model.forward_with_hidden(batch);  // recorded, then replayed
      double worst_h = 0, worst_z = 0;
      for (size_t i = 0; i < cases.size(); ++i) {
        const auto finite = [](const std::vector<float>& v) {
          return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
        };
        EXPECT_TRUE(finite(out.hidden[i]) && finite(out.logits[i])) << name << " sequence " << i << ": NaN or inf";
        worst_h = std::max(worst_h, scaled_error(out.hidden[i], cases[i].hidden));
        worst_z = std::max(worst_z, scaled_error(out.logits[i], cases[i].logits));
        EXPECT_EQ(again.logits[i], out.logits[i]) << name << " sequence " << i << ": a replay changed the logits";
        EXPECT_EQ(again.hidden[i], out.hidden[i]) << name << " sequence " << i << ": a replay changed the states";
      }
      std::printf("[tiny %s, %s] batch of %zu: max scaled error hidden %.3g, logits %.3g\n", name.c_str(),
                  want_desc.c_str(), cases.size(), worst_h, worst_z);
      const bool fp16 = p == Precision::kFloat16;
      EXPECT_LT(worst_h, fp16 ? 2e-2 : 0.12) << name << " " << want_desc << " hidden";
      EXPECT_LT(worst_z, fp16 ? 0.2 : 1.0) << name << " " << want_desc << " logits";
    }
  }
}

// Programmatic dependent launch (REXNLU_CUDA_PDL=1, backends/cuda/types.cuh): every kernel of
// ours waits for its predecessor's completion before touching memory, so the tiny model's forward
// (all cases in one batch) gives exactly the bits of plain launches, in fp32 and fp16, on the
// first pass (plain), the second (captured into a CUDA graph with programmatic edges, then
// launched) and the third (a replay). Where the device is older than sm_90 the switch is ignored.
TEST(RexCuda16, ProgrammaticDependentLaunchGivesTheSameBits) {
  if (!has_gpu()) GTEST_SKIP() << "no usable GPU";
  const rex::ModelConfig config = rex::load_model_config(kModelDir / "config.json");
  const io::TensorStore weights = io::load_safetensors(kModelDir / "model.safetensors");
  const auto cases = load_cases();
  const std::vector<SequenceInput> batch = inputs_of(cases);
  for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
    const std::string name(precision_name(p));
    setenv("REXNLU_CUDA_PDL", "0", 1);
    RexUniNluModel plain(config, weights, kTinyRows, LoadOptions{Device::kCuda, p, 0});
    setenv("REXNLU_CUDA_PDL", "1", 1);
    RexUniNluModel pdl(config, weights, kTinyRows, LoadOptions{Device::kCuda, p, 0});
    unsetenv("REXNLU_CUDA_PDL");
    const std::string desc = pdl.backend_description();
    const bool sm90 = desc.find("(sm_9") != std::string::npos || desc.find("(sm_1") != std::string::npos;
    EXPECT_EQ(desc.find("programmatic dependent launch") != std::string::npos, sm90) << desc;
    EXPECT_EQ(plain.backend_description().find("programmatic"), std::string::npos) << plain.backend_description();
    const auto want = plain.forward_with_hidden(batch);
    for (int pass = 0; pass < 3; ++pass) {
      const auto got = pdl.forward_with_hidden(batch);
      ASSERT_EQ(got.logits.size(), want.logits.size());
      for (size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(got.logits[i], want.logits[i]) << name << " pass " << pass << " sequence " << i << ": logits";
        EXPECT_EQ(got.hidden[i], want.hidden[i]) << name << " pass " << pass << " sequence " << i << ": hidden";
      }
      // And the plain model again between them (the process-wide switch follows each pass's backend).
      const auto again = plain.forward_with_hidden(batch);
      EXPECT_EQ(again.logits, want.logits) << name << " pass " << pass << ": plain launches changed";
    }
    std::printf("[tiny %s] PDL on vs off: %zu sequences, 3 passes compared bit for bit (%s)\n", name.c_str(),
                cases.size(), sm90 ? "PDL active" : "PDL ignored below sm_90");
  }
}

// The tiny model loaded with REXNLU_PAD_TO=value (the variable unset again afterwards).
std::unique_ptr<RexUniNluModel> tiny_model_padded_to(const char* value) {
  const rex::ModelConfig config = rex::load_model_config(kModelDir / "config.json");
  const io::TensorStore weights = io::load_safetensors(kModelDir / "model.safetensors");
  setenv("REXNLU_PAD_TO", value, 1);
  struct Unset {
    ~Unset() { unsetenv("REXNLU_PAD_TO"); }
  } unset;
  return std::make_unique<RexUniNluModel>(config, weights, kTinyRows, rexnlu::testing::test_load_options());
}

TEST(RexParity, PaddedBatchCutsPaddingOffFromTheTokens) {
  SequenceInput a, b;
  a.ids = {5, 6, 7};
  a.position_ids = {0, 1, 2};
  a.mask = {1, 1, 0, 1, 1, 1, 0, 1, 1};
  b.ids = {8, 9, 10, 11};
  b.position_ids = {0, 1, 1, 2};
  b.mask.assign(16, 1);
  const std::vector<SequenceInput> batch = {a, b};  // outlives packed (its masks are referenced)
  const PackedBatch packed = PackedBatch::pack(batch, 100);
  const PackedBatch p = PackedBatch::padded(packed, 4);
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{0, 4, 8}));  // 3 -> 4 tokens, 4 stays 4
  EXPECT_EQ(p.ids, (std::vector<int32_t>{5, 6, 7, 0, 8, 9, 10, 11}));
  EXPECT_EQ(p.position_ids, (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 1, 2}));
  EXPECT_EQ(p.real, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 1}));
  ASSERT_EQ(p.num_sequences(), 2);
  // Tokens keep their mask among themselves and do not see padding; padding sees padding only.
  const std::vector<uint8_t> want_a = {1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1};
  EXPECT_EQ(std::vector<uint8_t>(p.masks[0], p.masks[0] + 16), want_a);
  EXPECT_EQ(std::vector<uint8_t>(p.masks[1], p.masks[1] + 16), b.mask);
  EXPECT_THROW(PackedBatch::padded(packed, 0), Error);
}

// One sequence runs padded to a multiple of REXNLU_PAD_TO tokens (by default where the backend
// replays recordings: a GPU with CUDA graphs then serves every length of a bucket with one
// recording). Its answers must be those of the unpadded pass: every case alone, three rounds (on a
// GPU the padded model runs each bucket eagerly, then records, then replays a recording made for
// another length of the bucket), near the unpadded answers with the same link decisions, and near
// the original's. On the CPU (no recordings) this checks the padding itself.
TEST(RexParity, PaddedSingleSequencesGiveTheUnpaddedAnswers) {
  const auto cases = load_cases();
  const auto plain = tiny_model_padded_to("0");
  for (const char* multiple : {"32", "7"}) {
    const auto padded = tiny_model_padded_to(multiple);
    double worst_h = 0, worst_z = 0;
    size_t padded_cases = 0;
    for (int round = 0; round < 3; ++round)
      for (const auto& c : cases) {
        const auto want = plain->forward_with_hidden({c.input});
        const auto got = padded->forward_with_hidden({c.input});
        padded_cases += round == 0 && c.input.ids.size() % std::stoul(multiple) != 0;
        ASSERT_EQ(got.logits.at(0).size(), want.logits.at(0).size()) << c.id;
        ASSERT_EQ(got.hidden.at(0).size(), want.hidden.at(0).size()) << c.id;
        worst_z = std::max(worst_z, scaled_error(got.logits[0], want.logits[0]));
        worst_h = std::max(worst_h, scaled_error(got.hidden[0], want.hidden[0]));
        for (size_t k = 0; k < want.logits[0].size(); ++k)
          if (std::abs(want.logits[0][k]) > 1e-3f) {
            ASSERT_EQ(got.logits[0][k] > 0, want.logits[0][k] > 0)
                << c.id << " padded to " << multiple << ", round " << round << ", logit " << k;
          }
        EXPECT_LE(scaled_error(got.logits[0], c.logits), kTolerance) << c.id << " padded to " << multiple;
        EXPECT_LE(scaled_error(got.hidden[0], c.hidden), kTolerance) << c.id << " padded to " << multiple;
      }
    std::printf("padded to %s (%zu of %zu cases padded) vs unpadded, 3 rounds: max scaled difference hidden %.3g, "
                "logits %.3g\n", multiple, padded_cases, cases.size(), worst_h, worst_z);
    EXPECT_GT(padded_cases, cases.size() / 2);
    EXPECT_LE(worst_h, 5e-5) << "padded to " << multiple;
    EXPECT_LE(worst_z, 5e-5) << "padded to " << multiple;
  }
}

TEST(RexParity, PaddingSwitchRefusesOtherValues) {
  for (const char* bad : {"abc", "-1", "513", "32x", "99999999999999999999"}) {
    try {
      tiny_model_padded_to(bad);
      ADD_FAILURE() << "REXNLU_PAD_TO=" << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("REXNLU_PAD_TO=") + bad + ": expected"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(std::getenv("REXNLU_PAD_TO"), nullptr);
}

// A device model runs one uncounted pass at load (its kernels loaded before the first request);
// the CPU none.
TEST(RexParity, DeviceModelsWarmUpAtLoad) {
  const rex::ModelConfig config = rex::load_model_config(kModelDir / "config.json");
  const io::TensorStore weights = io::load_safetensors(kModelDir / "model.safetensors");
  const RexUniNluModel cpu(config, weights, kTinyRows);
  EXPECT_EQ(cpu.forward_calls(), 0);
  EXPECT_EQ(cpu.workspace_bytes(), 0u) << "the CPU ran a pass at load";
  if (!has_gpu()) GTEST_SKIP() << "no usable GPU";
  RexUniNluModel gpu(config, weights, kTinyRows, LoadOptions{Device::kCuda, Precision::kFloat16, 0});
  EXPECT_EQ(gpu.forward_calls(), 0);
  EXPECT_GT(gpu.workspace_bytes(), 0u) << "no pass at load";
  const auto cases = load_cases();
  EXPECT_LE(scaled_error(gpu.forward({cases[0].input})[0], cases[0].logits), 0.2);
  EXPECT_EQ(gpu.forward_calls(), 1);
}

TEST(RexParity, RejectsMalformedInputWithAMessage) {
  auto& model = tiny_model();
  SequenceInput s;
  s.ids = {1, 2, 3};
  s.position_ids = {0, 1, 2};
  s.mask.assign(9, 1);
  EXPECT_NO_THROW(model.forward({s}));
  auto bad = s;
  bad.mask.pop_back();
  EXPECT_THROW(model.forward({bad}), Error);
  bad = s;
  bad.ids[1] = 99999;
  EXPECT_THROW(model.forward({bad}), Error);
  bad = s;
  bad.position_ids[2] = -1;
  EXPECT_THROW(model.forward({bad}), Error);
  bad = s;
  bad.ids.clear();
  bad.position_ids.clear();
  bad.mask.clear();
  EXPECT_THROW(model.forward({bad}), Error);
  EXPECT_TRUE(model.forward({}).empty());
}

// Activations of one layer are released before the next, so the scratch peak of a pass does not
// grow with depth (a 12-layer model at a 2,048-token batch would otherwise hold ~0.7 GB).
TEST(RexParity, ScratchMemoryDoesNotGrowWithLayers) {
  const rex::ModelConfig two = rex::load_model_config(kModelDir / "config.json");
  ASSERT_EQ(two.num_hidden_layers, 2);
  rex::ModelConfig one = two;
  one.num_hidden_layers = 1;
  const io::TensorStore weights = io::load_safetensors(kModelDir / "model.safetensors");
  RexUniNluModel shallow(one, weights, kTinyRows), deep(two, weights, kTinyRows);
  const std::vector<SequenceInput> batch = inputs_of(load_cases());
  for (int pass = 0; pass < 2; ++pass) {  // the first pass grows block by block; the second has one
    shallow.forward(batch);
    deep.forward(batch);
  }
  EXPECT_GT(shallow.workspace_bytes(), 0u);
  EXPECT_EQ(deep.workspace_bytes(), shallow.workspace_bytes());
  const size_t before = deep.workspace_bytes();
  deep.forward({batch[0]});  // a smaller batch reuses the block
  EXPECT_EQ(deep.workspace_bytes(), before);
}

TEST(RexParity, LoadsFromModelDirectory) {
  const auto model = rex::kFamily.load(kModelDir, {}).network;  // the engine's load path
  const auto cases = load_cases();
  const auto z = model->forward({cases[0].input});
  EXPECT_LE(scaled_error(z[0], cases[0].logits), kTolerance);
  EXPECT_EQ(model->forward_calls(), 1);
}

}  // namespace
}  // namespace rexnlu::models
