// The special tokens of the Rex family (rex_family.h), in a file of their own so that the fuzz
// targets can tokenize as the Rex family does without linking the network.
#include "models/rex/rex_family.h"

namespace rexnlu::models::rex {

const std::vector<std::string>& added_tokens() {
  static const std::vector<std::string> tokens = {"[PREFIX]", "[TYPE]", "[CLASSIFY]", "[MULTICLASSIFY]"};
  return tokens;
}

}  // namespace rexnlu::models::rex
