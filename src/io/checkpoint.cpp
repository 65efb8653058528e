#include "io/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <system_error>

#include "io/pytorch_checkpoint.h"
#include "io/safetensors.h"
#include "rexnlu/error.h"

namespace rexnlu::io {

namespace {

// Long lists are cut: a checkpoint of the wrong model could otherwise give a 200-line message.
constexpr size_t kMaxListed = 20;

void append_list(std::string& msg, const std::string& title, const std::vector<std::string>& items) {
  if (items.empty()) return;
  msg += "\n  " + std::to_string(items.size()) + " " + title + ":";
  for (size_t i = 0; i < items.size() && i < kMaxListed; ++i) msg += "\n    " + items[i];
  if (items.size() > kMaxListed)
    msg += "\n    ... and " + std::to_string(items.size() - kMaxListed) + " more";
}

// Present in any form: a directory or FIFO by that name is then refused by name (MappedFile)
// rather than skipped.
bool present(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

// The first element of p[0, n) that is NaN or infinite, or n. Blocks keep the loop vectorizable.
int64_t first_non_finite(const float* p, int64_t n, bool& all_zero) {
  constexpr int64_t kBlock = 4096;
  uint32_t nonzero = 0;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t end = std::min(n, begin + kBlock);
    uint32_t special = 0;
    for (int64_t i = begin; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, p + i, sizeof bits);
      special |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);  // exponent all ones
      nonzero |= bits & 0x7fffffffu;                                             // -0.0 counts as zero
    }
    if (special) {
      for (int64_t i = begin; i < end; ++i)
        if (!std::isfinite(p[i])) return i;
    }
  }
  all_zero = nonzero == 0;
  return n;
}

}  // namespace

TensorStore load_checkpoint(const std::filesystem::path& model_dir) {
  const auto safetensors = model_dir / "model.safetensors";
  if (present(safetensors)) return load_safetensors(safetensors);
  const auto bin = model_dir / "pytorch_model.bin";
  if (present(bin)) return load_pytorch_bin(bin);
  throw ModelError(model_dir.string() + ": no weights found (looked for model.safetensors and pytorch_model.bin)");
}

bool check_tensor(const TensorStore& store, const TensorSpec& spec, std::vector<std::string>& missing,
                  std::vector<std::string>& wrong) {
  const TensorView* v = store.find(spec.name);
  if (!v) {
    missing.push_back(spec.name);
    return false;
  }
  bool ok = true;
  if (v->shape != spec.shape) {
    std::string m = spec.name + ": expected " + shape_string(spec.shape) + ", found " + shape_string(v->shape);
    if (!spec.rows_meaning.empty() && !spec.shape.empty() && v->shape.size() == spec.shape.size() &&
        v->shape[0] != spec.shape[0])
      m += " (" + spec.rows_meaning + " but " + spec.name + " has " + std::to_string(v->shape[0]) + " rows)";
    wrong.push_back(std::move(m));
    ok = false;
  }
  if (v->dtype != spec.dtype) {
    wrong.push_back(spec.name + ": expected dtype " + std::string(dtype_name(spec.dtype)) + ", found " +
                    std::string(dtype_name(v->dtype)));
    ok = false;
  }
  return ok;
}

void throw_tensor_problems(const TensorStore& store, const std::vector<std::string>& missing,
                           const std::vector<std::string>& wrong) {
  if (missing.empty() && wrong.empty()) return;
  std::string msg = store.source().string() + ": the checkpoint does not match the model architecture";
  append_list(msg, "missing tensor(s)", missing);
  append_list(msg, "tensor(s) with a wrong shape or dtype", wrong);
  throw ModelError(msg);
}

std::vector<std::string> unused_tensors(const TensorStore& store, const std::vector<TensorSpec>& specs) {
  std::set<std::string> expected;
  for (const auto& spec : specs) expected.insert(spec.name);
  std::vector<std::string> extras;
  for (const auto& name : store.names())
    if (!expected.count(name)) extras.push_back(name);
  return extras;
}

std::vector<std::string> check_tensor_values(const TensorStore& store, const std::vector<TensorSpec>& specs) {
  std::vector<std::string> zero;
  for (const auto& spec : specs) {
    const TensorView* v = store.find(spec.name);
    if (!v || v->dtype != DType::kF32) continue;
    bool all_zero = false;
    const int64_t n = v->numel();
    const int64_t bad = first_non_finite(v->f32(), n, all_zero);
    if (bad < n) {
      const float x = v->f32()[bad];
      throw ModelError(store.source().string() + ": tensor '" + spec.name + "' holds " +
                       (std::isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf") + " at element " + std::to_string(bad) +
                       " of " + std::to_string(n) + " (a model with non-finite weights gives no answers)");
    }
    const bool bias = spec.name.size() >= 5 && spec.name.compare(spec.name.size() - 5, 5, ".bias") == 0;
    if (all_zero && n > 0 && !bias) zero.push_back(spec.name);
  }
  if (zero.empty()) return {};
  std::string msg = store.source().string() + ": " + std::to_string(zero.size()) +
                    " weight tensor(s) hold only zeros, so answers will be empty or meaningless (an untrained or damaged checkpoint?):";
  for (size_t i = 0; i < zero.size() && i < kMaxListed; ++i) msg += (i ? ", " : " ") + zero[i];
  if (zero.size() > kMaxListed) msg += ", ... and " + std::to_string(zero.size() - kMaxListed) + " more";
  return {msg};
}

std::string checkpoint_format(const std::filesystem::path& file) {
  if (file.filename() == "model.safetensors") return "safetensors";
  std::ifstream in(file, std::ios::binary);
  char magic[2] = {0, 0};
  in.read(magic, 2);
  // torch.save >= 1.6 writes a zip archive; older versions a bare pickle stream.
  return magic[0] == 'P' && magic[1] == 'K' ? "PyTorch zip (torch.save)" : "PyTorch legacy pickle (torch.save)";
}

std::vector<std::string> validate_tensors(const TensorStore& store, const std::vector<TensorSpec>& specs) {
  std::vector<std::string> missing, wrong;
  for (const auto& spec : specs) check_tensor(store, spec, missing, wrong);
  throw_tensor_problems(store, missing, wrong);
  return unused_tensors(store, specs);
}

}  // namespace rexnlu::io
