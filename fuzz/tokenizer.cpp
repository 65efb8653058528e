// The tokenizer on any bytes as a request text: encode, and a (hint, text) pair cut into windows
// with a max_length and stride taken from the input. Offsets must stay inside the text.
#include <cstdint>

#include "fuzz_util.h"
#include "models/rex/rex_family.h"
#include "rexnlu/error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace {

const rexnlu::text::Tokenizer& tokenizer() {
  static const rexnlu::text::Tokenizer t =
      rexnlu::text::Tokenizer::from_model_dir(REXNLU_MODELS_DIR "/rexuninlu_tiny", rexnlu::models::rex::added_tokens());
  return t;
}

void check(const rexnlu::text::Encoding& e, size_t code_points) {
  if (e.ids.size() != e.offsets.size() || e.ids.size() != e.type_ids.size()) __builtin_trap();
  for (size_t i = 0; i < e.ids.size(); ++i) {
    if (e.ids[i] < 0 || e.ids[i] >= tokenizer().vocab_size()) __builtin_trap();
    const auto& o = e.offsets[i];
    if (o.start < 0 || o.start > o.end || static_cast<size_t>(o.end) > code_points) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rexnlu;
  if (size < 2) return 0;
  const int max_length = 4 + data[0] % 64;
  const int stride = data[1] % 16;
  const std::string_view input = fuzz::as_text(data + 2, size - 2);
  const size_t cut = input.find('\t');
  const std::string_view a = cut == std::string_view::npos ? input : input.substr(0, cut);
  const std::string_view b = cut == std::string_view::npos ? std::string_view() : input.substr(cut + 1);
  std::vector<char32_t> cps;
  try {
    text::decode_utf8(input, cps);
  } catch (const Error&) {
    return 0;  // requests with invalid UTF-8 are refused before tokenizing
  }
  std::vector<char32_t> a_cps, b_cps;
  text::decode_utf8(a, a_cps);
  text::decode_utf8(b, b_cps);
  check(tokenizer().encode_raw(input), cps.size());
  try {
    for (const auto& w : tokenizer().encode_pair_windows(a, b, max_length, stride)) {
      if (static_cast<int>(w.ids.size()) > max_length) __builtin_trap();  // every window fits
      for (size_t i = 0; i < w.ids.size(); ++i) {
        const size_t limit = w.type_ids[i] == 0 ? a_cps.size() : b_cps.size();
        if (w.offsets[i].end < 0 || static_cast<size_t>(w.offsets[i].end) > limit) __builtin_trap();
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
