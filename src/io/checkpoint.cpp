#include "io/checkpoint.h"

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

bool is_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

}  // namespace

TensorStore load_checkpoint(const std::filesystem::path& model_dir) {
  const auto safetensors = model_dir / "model.safetensors";
  if (is_file(safetensors)) return load_safetensors(safetensors);
  const auto bin = model_dir / "pytorch_model.bin";
  if (is_file(bin)) return load_pytorch_bin(bin);
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
