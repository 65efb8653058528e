// --resume of `rexnlu extract`: the output file says how far an interrupted run got.
#pragma once

#include <cstdint>
#include <filesystem>

namespace rexnlu::apps {

// Cuts `output` back to its last '\n' (a line a crash left half-written is dropped, it will be
// redone) and returns how many complete lines it holds. A missing file holds 0 lines.
// Throws rexnlu::Error (kIo) when the file cannot be read or truncated.
int64_t keep_complete_lines(const std::filesystem::path& output);

}  // namespace rexnlu::apps
