// What a loaded model is (`rexnlu info`, GET /v1/info): its family, sizes, vocabulary,
// checkpoint and the backend it runs on.
#pragma once

#include <cstdint>
#include <string>

namespace rexnlu {

struct ModelInfo {
  std::string family;        // model family picked from config.json, e.g. "rex-uninlu"
  std::string architecture;  // e.g. "deberta-v2 encoder + rotary token-pair link head (RexUniNLU)"
  std::string model_type;    // config.json's model_type
  int layers = 0, hidden_size = 0, attention_heads = 0, head_dim = 0, intermediate_size = 0;
  int max_position_embeddings = 0, position_buckets = 0;
  int64_t vocab_size = 0;         // tokens the tokenizer can produce (vocab.txt + added tokens)
  int64_t added_tokens = 0;       // of which the family's special tokens appended to vocab.txt
  int64_t config_vocab_size = 0;  // config.json's vocab_size
  int64_t parameters = 0;         // elements of the tensors the network declares
  int64_t parameter_bytes = 0;    // their bytes in the checkpoint
  std::string dtypes;             // their dtypes in the checkpoint, e.g. "F32"
  std::string checkpoint;         // the weight file
  std::string checkpoint_format;  // "safetensors", "PyTorch zip (torch.save)", ...
  int64_t checkpoint_tensors = 0;
  std::string backend;            // e.g. "cpu, 2 threads, fp32, oneDNN sgemm ..."
  std::string device;             // LoadOptions' device and precision names: "cpu", "int8"
  std::string precision;
};

}  // namespace rexnlu
