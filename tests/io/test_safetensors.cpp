#include <gtest/gtest.h>

#include <cmath>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "io_test_util.h"
#include "rexnlu/error.h"

namespace rexnlu::io {
namespace {

TEST(Safetensors, LoadsTinyModel) {
  TensorStore store = load_safetensors(tiny_model_dir() / "model.safetensors");
  EXPECT_EQ(store.size(), 47u);
  const TensorView& emb = store.at("plm.embeddings.word_embeddings.weight");
  EXPECT_EQ(emb.dtype, DType::kF32);
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{12804, 64}));
  EXPECT_EQ(store.at("plm.encoder.conv.conv.weight").shape, (std::vector<int64_t>{64, 64, 3}));
  // rotary_emb.freqs = 1 / 10000^(2m / 64), computed by torch in float32 (spec section 2).
  const TensorView& freqs = store.at("rotary_emb.freqs");
  ASSERT_EQ(freqs.shape, (std::vector<int64_t>{32}));
  for (int m = 0; m < 32; ++m)
    EXPECT_NEAR(freqs.f32()[m], 1.0 / std::pow(10000.0, 2.0 * m / 64.0), 1e-6) << m;
}

TEST(Checkpoint, PrefersSafetensors) {
  TensorStore store = load_checkpoint(tiny_model_dir());
  EXPECT_EQ(store.source().filename(), "model.safetensors");
}

TEST(Checkpoint, MissingWeightsNameTheDirectoryAndFiles) {
  TempDir dir;
  expect_model_error([&] { load_checkpoint(dir.path()); },
                     {dir.path().string(), "model.safetensors", "pytorch_model.bin"});
}

}  // namespace
}  // namespace rexnlu::io
