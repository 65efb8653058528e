#include "rexnlu/load_options.h"

namespace rexnlu {

std::string_view device_name(Device d) {
  switch (d) {
    case Device::kCpu: return "cpu";
    case Device::kCuda: return "cuda";
  }
  return "?";
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kFloat32: return "fp32";
    case Precision::kFloat16: return "fp16";
    case Precision::kBFloat16: return "bf16";
    case Precision::kInt8: return "int8";
  }
  return "?";
}

std::optional<Device> parse_device(std::string_view name) {
  for (Device d : {Device::kCpu, Device::kCuda})
    if (name == device_name(d)) return d;
  return std::nullopt;
}

bool parse_device_spec(std::string_view spec, LoadOptions& options) {
  int index = 0;
  if (spec.starts_with("cuda:")) {
    const std::string_view digits = spec.substr(5);
    if (digits.empty() || digits.size() > 3) return false;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      index = index * 10 + (c - '0');
    }
    spec = "cuda";
  }
  const auto d = parse_device(spec);
  if (!d) return false;
  options.device = *d;
  options.device_index = index;
  return true;
}

std::optional<Precision> parse_precision(std::string_view name) {
  if (name == "float32") return Precision::kFloat32;
  if (name == "float16") return Precision::kFloat16;
  if (name == "bfloat16") return Precision::kBFloat16;
  for (Precision p : {Precision::kFloat32, Precision::kFloat16, Precision::kBFloat16, Precision::kInt8})
    if (name == precision_name(p)) return p;
  return std::nullopt;
}

Precision default_precision(Device device) { return device == Device::kCuda ? Precision::kFloat16 : Precision::kFloat32; }

}  // namespace rexnlu
