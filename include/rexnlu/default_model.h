// Where the bundled default model lives, so that `rexnlu extract` works with no --model.
#pragma once

#include <filesystem>

namespace rexnlu {

// The directory of the bundled default model, looked up in this order:
//   1. $REXNLU_MODEL, if set;
//   2. <directory of the running program>/../models/<default name>, then ./models/<default name>
//      (an installed or copied tree);
//   3. the models/ folder of the source tree rexnlu was built from.
// Returns the first that holds a config.json, else the last candidate (the caller's load then
// reports what is missing).
std::filesystem::path default_model_dir();

// The folder name of the bundled default model under models/.
const char* default_model_name();

}  // namespace rexnlu
