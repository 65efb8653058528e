// The model families rexnlu knows, and which one a checkpoint directory belongs to.
#pragma once

#include <filesystem>
#include <vector>

#include "models/family.h"

namespace rexnlu::models {

const std::vector<const ModelFamily*>& model_families();

// The family whose recognizes() accepts model_dir/config.json. Throws rexnlu::Error (kIo when the
// file cannot be read, kInvalidModel when it is not JSON or no family knows it, listing the families).
const ModelFamily& family_of(const std::filesystem::path& model_dir);

}  // namespace rexnlu::models
