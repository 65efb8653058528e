// The SiameseUIE family: ModelScope nlp_structbert_siamese-uie checkpoints (config.json
// model_type "bert"; tensors plm.*, crossattention.layer.*, head_clsf.*, tail_clsf.*). It brings
// the config rules (siamese_config.h), the network (siamese_uie_model.h) and its tensor
// declarations; the tokenizer is plain BERT (no added tokens).
#pragma once

#include "models/family.h"

namespace rexnlu::models::siamese {

extern const ModelFamily kFamily;

}  // namespace rexnlu::models::siamese
