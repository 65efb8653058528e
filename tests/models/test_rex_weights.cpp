// The Rex network's tensor declarations (WeightLoader calls in deberta_v2_rex.cpp and
// rex_link_head.cpp) are its tensor table: the spec's counts, every checkpoint format of the tiny
// model, and the one error that lists every missing or misshapen tensor.
#include <gtest/gtest.h>

#include "io/checkpoint.h"
#include "io/io_test_util.h"
#include "io/pytorch_checkpoint.h"
#include "io/safetensors.h"
#include "models/rex/rex_config.h"
#include "models/rex/rex_uninlu_model.h"

namespace rexnlu::models {
namespace {

using namespace rexnlu::io;  // the checkpoint readers and test helpers
using rex::ModelConfig;

constexpr int64_t kTinyRows = 12804;  // vocab.txt (12,800) + 4 added tokens

ModelConfig tiny_config() { return rex::load_model_config(tiny_model_dir() / "config.json"); }

TEST(RexWeights, RealConfigDeclares207Tensors) {
  ModelConfig c = tiny_config();
  c.hidden_size = 768;
  c.num_attention_heads = 12;
  c.num_hidden_layers = 12;
  c.intermediate_size = 3072;
  const auto specs = RexUniNluModel::declared_tensors(c, kTinyRows);
  EXPECT_EQ(specs.size(), 207u);
  int64_t params = 0;
  for (const auto& s : specs) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    params += n;
  }
  EXPECT_EQ(params, 98'237'568);  // spec section 2
}

TEST(RexWeights, TinyModelLoadsInEveryFormat) {
  EXPECT_EQ(RexUniNluModel::declared_tensors(tiny_config(), kTinyRows).size(), 47u);
  for (const auto& p : {tiny_model_dir() / "model.safetensors", tiny_model_dir() / "pytorch_model.bin"}) {
    SCOPED_TRACE(p.string());
    TensorStore store = p.extension() == ".bin" ? load_pytorch_bin(p) : load_safetensors(p);
    const RexUniNluModel model(tiny_config(), store, kTinyRows);
    EXPECT_TRUE(model.unused_tensors().empty());
    EXPECT_EQ(model.weights_summary().tensors, 47);
  }
}

TEST(RexWeights, EmbeddingRowsMismatchExplainsTheVocab) {
  TensorStore store = load_safetensors(tiny_model_dir() / "model.safetensors");
  expect_model_error([&] { RexUniNluModel(tiny_config(), store, 12803); },
                     {"plm.embeddings.word_embeddings.weight: expected [12803, 64], found [12804, 64]",
                      "vocab.txt + 4 added tokens = 12803 tokens but plm.embeddings.word_embeddings.weight has 12804 rows"});
}

// A store with the tiny model's tensors, some of them changed, for the validator's messages.
TEST(RexWeights, ListsEveryProblemInOneError) {
  TensorStore real = load_safetensors(tiny_model_dir() / "model.safetensors");
  TensorStore store;
  store.set_source("fake.safetensors");
  for (const auto& name : real.names()) {
    if (name == "ffnq.bias" || name == "plm.encoder.layer.1.output.dense.weight") continue;  // missing
    TensorView v = real.at(name);
    if (name == "plm.encoder.layer.0.attention.self.query_proj.weight") v.shape = {64, 32};
    if (name == "rotary_emb.freqs") v.dtype = DType::kI32;
    store.add(name, v);
  }
  expect_model_error([&] { RexUniNluModel(tiny_config(), store, kTinyRows); },
                     {"fake.safetensors", "2 missing", "ffnq.bias", "plm.encoder.layer.1.output.dense.weight",
                      "plm.encoder.layer.0.attention.self.query_proj.weight: expected [64, 64], found [64, 32]",
                      "rotary_emb.freqs: expected dtype F32, found I32"});
}

TEST(RexWeights, LongMissingListIsCut) {
  TensorStore empty;
  try {
    RexUniNluModel(tiny_config(), empty, kTinyRows);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("47 missing"), std::string::npos) << msg;
    EXPECT_NE(msg.find("and 27 more"), std::string::npos) << msg;
  }
}

// Real checkpoints may carry unused buffers such as plm.embeddings.position_ids (int64): they
// load and come back as extras, not errors.
TEST(RexWeights, ExtraInt64TensorIsLoadedAndReported) {
  TensorStore real = load_safetensors(tiny_model_dir() / "model.safetensors");
  std::vector<FakeTensor> tensors;
  for (const auto& name : real.names()) {
    const TensorView& v = real.at(name);
    const auto* b = reinterpret_cast<const uint8_t*>(v.data);
    tensors.push_back({name, "FloatStorage", v.shape, std::vector<uint8_t>(b, b + v.nbytes())});
  }
  FakeTensor pos{"plm.embeddings.position_ids", "LongStorage", {1, 512}, {}};
  for (int64_t i = 0; i < 512; ++i)
    for (int byte = 0; byte < 8; ++byte) pos.data.push_back(static_cast<uint8_t>(i >> (8 * byte)));
  tensors.push_back(pos);
  TempDir dir;
  write_bytes(dir / "pytorch_model.bin", make_torch_zip(tensors));

  TensorStore store = load_checkpoint(dir.path());
  const auto extras = RexUniNluModel(tiny_config(), store, kTinyRows).unused_tensors();
  EXPECT_EQ(extras, std::vector<std::string>{"plm.embeddings.position_ids"});
  const TensorView& ids = store.at("plm.embeddings.position_ids");
  EXPECT_EQ(ids.dtype, DType::kI64);
  EXPECT_EQ(ids.shape, (std::vector<int64_t>{1, 512}));
  EXPECT_EQ(reinterpret_cast<const int64_t*>(ids.data)[511], 511);
}

}  // namespace
}  // namespace rexnlu::models
