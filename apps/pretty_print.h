// `rexnlu extract TEXT` for a person: paths grouped by their type chain, one path per line, each
// followed by its sentence with the spans highlighted (ANSI colors on a terminal, [brackets]
// otherwise).
#pragma once

#include <string>

#include "rexnlu/result.h"

namespace rexnlu::apps {

// `text` is the text the offsets refer to (after a task preset rewrote it); offsets must be in
// code points. Paths whose offsets fall outside the text are printed without context.
std::string pretty_result(const std::string& text, const Result& result, bool color);

}  // namespace rexnlu::apps
