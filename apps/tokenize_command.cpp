#include "tokenize_command.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "rexnlu/default_model.h"
#include "rexnlu/error.h"
#include "rexnlu/json.h"
#include "rexnlu/tokenizer.h"

namespace rexnlu::apps {
namespace {

using nlohmann::json;

void append_encoding(const Tokens& e, std::string& out) {
  out += "{\"input_ids\":[";
  for (size_t i = 0; i < e.ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(e.ids[i]);
  }
  out += "],\"offsets\":[";
  for (size_t i = 0; i < e.ids.size(); ++i) {
    if (i) out += ',';
    out += '[';
    out += std::to_string(e.offsets[i].first);
    out += ',';
    out += std::to_string(e.offsets[i].second);
    out += ']';
  }
  out += "],\"token_type_ids\":[";
  for (size_t i = 0; i < e.ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(e.type_ids[i]);
  }
  out += "]}\n";
}

void append_error(size_t line_number, const std::string& message, std::string& out) {
  const nlohmann::ordered_json error = {{"line", line_number}, {"error", message}};
  // Parser messages may quote the offending (invalid UTF-8) bytes: replace them, never throw.
  out += error.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  out += '\n';
}

// One input line: {"text": ...} or {"text": ..., "pair": ...}.
void tokenize_line(const Tokenizer& tokenizer, const std::string& line, size_t line_number,
                   std::string& out) {
  nlohmann::ordered_json request;  // what parse_json_input gives
  try {
    request = parse_json_input(line);
  } catch (const json::exception& e) {
    append_error(line_number, std::string("invalid JSON: ") + e.what(), out);
    return;
  }
  if (!request.is_object() || !request.contains("text") || !request["text"].is_string()) {
    append_error(line_number, "expected an object with a string \"text\"", out);
    return;
  }
  const bool has_pair = request.contains("pair") && !request["pair"].is_null();
  if (has_pair && !request["pair"].is_string()) {
    append_error(line_number, "\"pair\" must be a string", out);
    return;
  }
  try {
    const auto& text = request["text"].get_ref<const std::string&>();
    if (has_pair) {
      append_encoding(tokenizer.encode_pair(text, request["pair"].get_ref<const std::string&>()), out);
    } else {
      append_encoding(tokenizer.encode(text), out);
    }
  } catch (const Error& e) {
    append_error(line_number, e.what(), out);
  }
}

int run_tokenize(const std::string& model_dir) {
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(model_dir));
  } catch (const Error& e) {
    std::cerr << "rexnlu tokenize: " << e.what() << "\n";
    return 2;
  }
  std::ios::sync_with_stdio(false);
  std::string line;
  std::string out;
  size_t line_number = 0;
  while (std::getline(std::cin, line)) {  // records end at '\n' only
    ++line_number;
    tokenize_line(*tokenizer, line, line_number, out);
    if (out.size() > (1u << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize JSON lines from stdin ({\"text\": ...} or {\"text\": ..., \"pair\": ...}); "
      "writes {\"input_ids\", \"offsets\", \"token_type_ids\"} per line, or {\"line\", \"error\"}");
  auto model_dir = std::make_shared<std::string>(default_model_dir().string());
  cmd->add_option("--model", *model_dir, "model directory (config.json names the model family; vocab.txt, tokenizer_config.json, ...)")
      ->capture_default_str();
  cmd->callback([model_dir] {
    if (const int code = run_tokenize(*model_dir); code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace rexnlu::apps
