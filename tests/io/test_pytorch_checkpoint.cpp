#include <gtest/gtest.h>

#include <cstring>

#include "io/pytorch_checkpoint.h"
#include "io/safetensors.h"
#include "io_test_util.h"

namespace rexnlu::io {
namespace {

// The four files of the tiny model were written by torch / safetensors from the same tensors:
// every reader must give the same names, dtypes, shapes and bit-identical bytes.
void expect_same_tensors(const TensorStore& a, const TensorStore& b) {
  ASSERT_EQ(a.names(), b.names()) << a.source() << " vs " << b.source();
  for (const auto& name : a.names()) {
    const TensorView& x = a.at(name);
    const TensorView& y = b.at(name);
    EXPECT_EQ(x.dtype, y.dtype) << name;
    ASSERT_EQ(x.shape, y.shape) << name;
    EXPECT_EQ(std::memcmp(x.data, y.data, x.nbytes()), 0) << name << " differs";
  }
}

TEST(PytorchCheckpoint, AllFormatsGiveIdenticalTensors) {
  TensorStore st = load_safetensors(tiny_model_dir() / "model.safetensors");
  ASSERT_EQ(st.size(), 47u);
  for (const auto& p : {tiny_model_dir() / "pytorch_model.bin",
                        tiny_data_dir() / "bin_variants" / "pytorch_model_ordereddict.bin",
                        tiny_data_dir() / "bin_variants" / "pytorch_model_legacy.bin"}) {
    SCOPED_TRACE(p.string());
    TensorStore bin = load_pytorch_bin(p);
    expect_same_tensors(st, bin);
  }
}

}  // namespace
}  // namespace rexnlu::io
