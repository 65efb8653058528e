// Task presets (spec 8): a task name plus simple arguments -> the text (with its
// [CLASSIFY]/[MULTICLASSIFY] marker or "#") and the schema the model card uses for that task.
#pragma once

#include <string>
#include <vector>

#include "rexnlu/tasks.h"

namespace rexnlu::uie {

using TaskArgs = rexnlu::TaskArgs;  // declared in the public API (include/rexnlu/tasks.h)
using TaskRequest = rexnlu::TaskRequest;

using rexnlu::build_task;  // implemented in tasks.cpp
using rexnlu::task_names;

}  // namespace rexnlu::uie
