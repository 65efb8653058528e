// The Rex family: RexUniNLU checkpoints (config.json model_type "deberta-v2", the Rex variant,
// spec sections 1-4). It brings the config rules (rex_config.h), the special tokens the
// tokenizer appends, the network (rex_uninlu_model.h) and its tensor declarations.
#pragma once

#include <string>
#include <vector>

#include "models/family.h"

namespace rexnlu::models::rex {

// [PREFIX] [TYPE] [CLASSIFY] [MULTICLASSIFY]: added by ms_wrapper.py at load, in this order
// (ids vocab_size .. vocab_size+3 unless vocab.txt has them). The pipeline's prompts use them.
const std::vector<std::string>& added_tokens();

extern const ModelFamily kFamily;

}  // namespace rexnlu::models::rex
