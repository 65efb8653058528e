// The public tokenizer and UTF-8 helpers (include/rexnlu/tokenizer.h) over src/text.
#include "rexnlu/tokenizer.h"

#include "models/registry.h"
#include "text/tokenizer.h"
#include "uie/utf8.h"

namespace rexnlu {

struct Tokenizer::Impl {
  text::Tokenizer tokenizer;
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::filesystem::path& model_dir) {
  const models::ModelFamily& family = models::family_of(model_dir);
  return Tokenizer(std::make_unique<Impl>(Impl{text::Tokenizer::from_model_dir(model_dir, family.added_tokens())}));
}

namespace {
Tokens tokens_of(const text::Encoding& e) {
  Tokens t;
  t.ids = e.ids;
  t.offsets.reserve(e.size());
  for (const auto& o : e.offsets) t.offsets.emplace_back(o.start, o.end);
  t.type_ids.assign(e.type_ids.begin(), e.type_ids.end());
  return t;
}
}  // namespace

Tokens Tokenizer::encode(std::string_view utf8) const { return tokens_of(impl_->tokenizer.encode(utf8)); }
Tokens Tokenizer::encode_pair(std::string_view a, std::string_view b) const {
  return tokens_of(impl_->tokenizer.encode_pair(a, b));
}

std::u32string utf8_to_code_points(std::string_view utf8, std::string_view what) { return uie::decode_utf8(utf8, what); }
std::string code_points_to_utf8(std::u32string_view code_points) { return uie::encode_utf8(code_points); }

}  // namespace rexnlu
