// Tokenizer throughput, single thread, over the texts of a JSON-lines file (CLUENER train).
//   tokenizer_bench [TEXTS_JSONL] [MODEL_DIR] [min_seconds=2]
// Defaults: <repo>/../shared/data/cluener2020/train.json and the bundled model. Prints a table
// (texts/s, tokens/s, MB/s of UTF-8 input) for encode_raw, encode and the pipeline's pair windows
// (a level-0 NER hint, max_length 512, stride 32). bench/tokenizer_bench_hf.py measures HF
// tokenizers (Rust, through its Python bindings) on the same texts.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rexnlu/default_model.h"
#include "rexnlu/error.h"
#include "models/rex/rex_family.h"
#include "text/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> read_texts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw rexnlu::IoError(path + ": cannot open");
  std::vector<std::string> texts;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    texts.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
  }
  return texts;
}

struct Result {
  double seconds = 0;
  size_t passes = 0;
  size_t tokens = 0;  // per pass
};

// Runs whole passes over the texts until min_seconds have passed (after one warm-up pass).
Result measure(const std::vector<std::string>& texts, double min_seconds,
               const std::function<size_t(const std::string&)>& tokenize) {
  Result r;
  for (const auto& t : texts) r.tokens += tokenize(t);  // warm-up, and the token count
  const auto start = Clock::now();
  do {
    size_t tokens = 0;
    for (const auto& t : texts) tokens += tokenize(t);
    if (tokens != r.tokens) std::fprintf(stderr, "token count changed between passes\n");
    ++r.passes;
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (r.seconds < min_seconds);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string texts_path = argc > 1 ? argv[1] : REXNLU_SOURCE_DIR "/../shared/data/cluener2020/train.json";
  const std::string model_dir = argc > 2 ? argv[2] : rexnlu::default_model_dir().string();
  const double min_seconds = argc > 3 ? std::stod(argv[3]) : 2.0;
  try {
    const auto texts = read_texts(texts_path);
    const auto tokenizer = rexnlu::text::Tokenizer::from_model_dir(model_dir, rexnlu::models::rex::added_tokens());
    size_t bytes = 0;
    for (const auto& t : texts) bytes += t.size();
    const std::string hint = "[PREFIX][TYPE]人物[TYPE]地理位置[TYPE]组织机构";
    const auto hint_raw = tokenizer.encode_raw(hint);

    std::printf("texts: %zu from %s (%.2f MB UTF-8), model %s, 1 thread\n", texts.size(), texts_path.c_str(),
                static_cast<double>(bytes) / 1e6, model_dir.c_str());
    std::printf("%-34s %12s %14s %10s %12s\n", "what", "texts/s", "tokens/s", "MB/s", "us/text");
    auto report = [&](const char* what, const Result& r) {
      const double per_pass = r.seconds / static_cast<double>(r.passes);
      std::printf("%-34s %12.0f %14.0f %10.1f %12.2f\n", what, static_cast<double>(texts.size()) / per_pass,
                  static_cast<double>(r.tokens) / per_pass, static_cast<double>(bytes) / per_pass / 1e6,
                  per_pass / static_cast<double>(texts.size()) * 1e6);
    };
    report("encode_raw(text)", measure(texts, min_seconds, [&](const std::string& t) {
             return tokenizer.encode_raw(t).size();
           }));
    report("encode(text) [CLS] t [SEP]", measure(texts, min_seconds, [&](const std::string& t) {
             return tokenizer.encode(t).size();
           }));
    report("encode_pair_windows(hint, text)", measure(texts, min_seconds, [&](const std::string& t) {
             size_t n = 0;
             for (const auto& w : tokenizer.encode_pair_windows(hint, t, 512, 32)) n += w.size();
             return n;
           }));
    report("pair_windows(hint_raw, raw(text))", measure(texts, min_seconds, [&](const std::string& t) {
             size_t n = 0;
             for (const auto& w : tokenizer.pair_windows(hint_raw, tokenizer.encode_raw(t), 512, 32)) n += w.size();
             return n;
           }));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenizer_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
