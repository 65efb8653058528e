// Runs the built `rexnlu` program (REXNLU_CLI) and checks every command's behavior: readable and
// JSON output, batch lines with bad lines in the middle, --resume after a simulated crash, eval
// numbers, info fields, bench, --help, and errors (stderr + non-zero exit).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const std::string kTiny = REXNLU_MODELS_DIR "/rexuninlu_tiny";
const std::string kDemo = REXNLU_MODELS_DIR "/rexnlu-demo-zh-small";
const std::string kData = REXNLU_TEST_DATA "/cli";
const std::string kNerSchema = R"({"人物": null, "地理位置": null, "组织机构": null})";
const std::string kText = "由上海文艺出版社、中国作家协会创联部等单位在北京举办的研讨会上，与会者认为，小说的题材独具特色。";

fs::path work_dir() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("rexnlu_cli_test_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& content) { std::ofstream(p, std::ios::binary) << content; }

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Outcome {
  int rc = -1;
  std::string out, err;
};

// `rexnlu ARGS < stdin_file`, with $REXNLU_MODEL unset so the default model lookup is the real one.
Outcome rexnlu(const std::vector<std::string>& args, const std::string& stdin_file = "/dev/null", const std::string& env = "") {
  static int counter = 0;
  const fs::path out = work_dir() / ("out" + std::to_string(counter)), err = work_dir() / ("err" + std::to_string(counter));
  ++counter;
  std::string cmd = "env -u REXNLU_MODEL " + env + " " + quote(REXNLU_CLI);
  for (const auto& a : args) {
    cmd += ' ';  // (not " " + quote(a): GCC 12 warns falsely, -Wrestrict)
    cmd += quote(a);
  }
  cmd += " < " + quote(stdin_file) + " > " + quote(out.string()) + " 2> " + quote(err.string());
  const int status = std::system(cmd.c_str());
  Outcome r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

std::string head_lines(const std::string& file, size_t n) {
  std::string out;
  const auto lines = lines_of(read_file(file));
  for (size_t i = 0; i < n && i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

// ------------------------------------------------------------------ --help and errors
TEST(CliHelp, EveryCommandHasHelp) {
  for (const std::string cmd : {"", "extract", "eval", "info", "bench", "serve", "tokenize"}) {
    std::vector<std::string> args;
    if (!cmd.empty()) args.push_back(cmd);
    args.push_back("--help");
    const Outcome r = rexnlu(args);
    EXPECT_EQ(r.rc, 0) << cmd << "\n" << r.err;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd;
    EXPECT_NE(r.out.find("--help"), std::string::npos) << cmd;
    if (cmd != "" && cmd != "tokenize" && cmd != "serve") {
      EXPECT_NE(r.out.find("--model"), std::string::npos) << cmd;
    }
  }
}

void expect_error(const std::vector<std::string>& args, const std::string& message_part) {
  const Outcome r = rexnlu(args);
  EXPECT_NE(r.rc, 0) << args[0];
  EXPECT_NE(r.err.find(message_part), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(r.out, "") << args[0];
}

TEST(CliPrecision, InfoReportsInt8) {
  const Outcome r = rexnlu({"info", "--model", kTiny, "--precision", "int8", "--json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("\"precision\": \"int8\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("oneDNN u8 x s8 matmul"), std::string::npos) << r.out;
}

// No --precision (or "auto"): fp32 on the CPU, fp16 on a GPU, whichever of --device / --precision
// comes first; an explicit precision wins.
TEST(CliPrecision, AutoIsFp32OnTheCpuAndFp16OnTheGpu) {
  for (const std::vector<std::string>& extra : {std::vector<std::string>{}, {"--precision", "auto"}}) {
    std::vector<std::string> args{"info", "--model", kTiny, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Outcome r = rexnlu(args);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("\"precision\": \"fp32\""), std::string::npos) << r.out;
  }
  if (const Outcome probe = rexnlu({"info", "--model", kTiny, "--device", "cuda", "--json"}); probe.rc == 0) {
    EXPECT_NE(probe.out.find("\"precision\": \"fp16\""), std::string::npos) << probe.out;
    for (const std::vector<std::string>& order :
         {std::vector<std::string>{"--device", "cuda", "--precision", "fp32"}, {"--precision", "fp32", "--device", "cuda"}}) {
      std::vector<std::string> args{"info", "--model", kTiny, "--json"};
      args.insert(args.end(), order.begin(), order.end());
      const Outcome r = rexnlu(args);
      EXPECT_EQ(r.rc, 0) << r.err;
      EXPECT_NE(r.out.find("\"precision\": \"fp32\""), std::string::npos) << r.out;
    }
  }
  expect_error({"info", "--model", kTiny, "--precision", "fp64"}, "must be fp32, fp16, bf16, int8 or auto, not fp64");
}

TEST(CliErrors, GoToStderrWithNonZeroExit) {
  expect_error({"no-such-command"}, "A subcommand is required");  // CLI11's message
  expect_error({"extract", "张三", "--schema", kNerSchema, "--model", "/no/such/model"}, "/no/such/model");
  expect_error({"extract", "张三", "--model", kTiny}, "rexnlu extract: give --schema JSON or --task NAME");
  expect_error({"extract", "张三", "--schema", "{bad", "--model", kTiny}, "rexnlu extract:");
  expect_error({"extract", "张三", "--task", "nope", "--model", kTiny}, "unknown task 'nope'");
  expect_error({"extract", "--input", "/no/such/input.jsonl", "--model", kTiny}, "/no/such/input.jsonl");
  expect_error({"extract", "--resume", "--input", kData + "/st_ner_dev.jsonl", "--model", kTiny}, "--resume needs --output");
  expect_error({"extract", "张三", "--schema", kNerSchema, "--input", "x.jsonl"}, "either a TEXT or --input");
  expect_error({"eval", "--model", kTiny}, "--data");
  expect_error({"eval", "--data", "/no/such/data.jsonl", "--model", kTiny}, "/no/such/data.jsonl");
  expect_error({"info", "--model", "/no/such/model"}, "rexnlu info: /no/such/model");
#if REXNLU_HAVE_CUDA
  // A CUDA build: without a usable GPU the line names what is missing (driver, device); with one it runs.
  if (const Outcome r = rexnlu({"info", "--model", kTiny, "--device", "cuda"}); r.rc != 0) {
    EXPECT_NE(r.err.find("rexnlu info: device cuda:0: "), std::string::npos) << r.err;
  }
#else
  expect_error({"info", "--model", kTiny, "--device", "cuda"}, "rexnlu info: device cuda: this build has no CUDA backend");
#endif
  expect_error({"info", "--model", kTiny, "--device", "cuda:x"}, "must be cpu, cuda or cuda:N, not cuda:x");
  expect_error({"extract", "张三", "--schema", kNerSchema, "--model", kTiny, "--precision", "fp16"},
               "rexnlu extract: precision fp16: the CPU backend runs fp32, int8 and bf16 only");
  expect_error({"bench", "--model", kTiny, "--n", "0"}, "--n: 0 is out of range: give a whole number from 1 to");
  expect_error({"info", "--model", kTiny, "--threads", "-1"}, "--threads: -1 is out of range: give a whole number from 0 to 1024");
  expect_error({"bench", "--model", kTiny, "--texts", "/no/such/texts.txt"}, "/no/such/texts.txt");
}

TEST(CliErrors, EvalNamesTheBadLine) {
  const fs::path data = work_dir() / "bad_eval.jsonl";
  write_file(data, head_lines(kData + "/st_ner_dev.jsonl", 2) + "{\"text\": \"x\", \"schema\": {\"a\": null}}\n");
  const Outcome r = rexnlu({"eval", "--data", data.string(), "--model", kTiny});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find(data.string() + ":3: missing array \"info_list\""), std::string::npos) << r.err;
}

// ------------------------------------------------------------------ extract TEXT
TEST(CliExtract, PrettyOutputShowsEveryPathOfTheJson) {
  const Outcome json = rexnlu({"extract", kText, "--schema", kNerSchema, "--model", kTiny, "--json"});
  ASSERT_EQ(json.rc, 0) << json.err;
  const Json j = Json::parse(json.out);
  ASSERT_TRUE(j["output"].is_array());
  ASSERT_GT(j["output"].size(), 0u) << "the tiny model should link something in this text";

  const Outcome pretty = rexnlu({"extract", kText, "--schema", kNerSchema, "--model", kTiny});
  ASSERT_EQ(pretty.rc, 0) << pretty.err;
  EXPECT_EQ(pretty.out.find('\033'), std::string::npos) << "no ANSI escapes when stdout is not a terminal";
  std::map<std::string, int> per_type;
  for (const Json& path : j["output"]) {
    ASSERT_EQ(path.size(), 1u);
    const Json& item = path[0];
    ++per_type[item["type"].get<std::string>()];
    const std::string span = item["span"].get<std::string>();
    std::string offsets = "[";  // (built by appending: GCC 12 warns falsely on "literal" + string)
    offsets += std::to_string(item["offset"][0].get<int>());
    offsets += ',';
    offsets += std::to_string(item["offset"][1].get<int>());
    offsets += ')';
    const std::string shown = span.empty() ? "\"\"" : span;
    EXPECT_NE(pretty.out.find("  " + shown + "  " + offsets + "  p="), std::string::npos) << span << "\n" << pretty.out;
    if (item["offset"][1] > item["offset"][0]) {  // (the untrained model also links spans to [SEP]: end < start)
      EXPECT_NE(pretty.out.find("[" + span + "]"), std::string::npos) << "span highlighted in its sentence: " << span;
    }
  }
  for (const auto& [type, n] : per_type) {
    EXPECT_NE(pretty.out.find(type + " (" + std::to_string(n) + ")\n"), std::string::npos) << type << "\n" << pretty.out;
  }

  const Outcome color = rexnlu({"extract", kText, "--schema", kNerSchema, "--model", kTiny, "--color", "always"});
  EXPECT_NE(color.out.find("\033[1;31m"), std::string::npos);
}

TEST(CliExtract, TaskPresetAndDefaultModel) {
  const Outcome r = rexnlu({"extract", "这个手机很好用", "--task", "sentiment", "--model", kTiny, "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["output"].size(), 1u);
  EXPECT_EQ(j["output"][0][0]["span"], "[CLASSIFY]");

  // No --model: the bundled default model (models/rexnlu-demo-zh-small) is used.
  if (!fs::exists(kDemo + "/config.json")) GTEST_SKIP() << "bundled model not present";
  const Outcome d = rexnlu({"extract", kText, "--schema", kNerSchema, "--json"});
  ASSERT_EQ(d.rc, 0) << d.err;
  const Outcome explicit_demo = rexnlu({"extract", kText, "--schema", kNerSchema, "--json", "--model", kDemo});
  EXPECT_EQ(d.out, explicit_demo.out);
  const Outcome tiny = rexnlu({"extract", kText, "--schema", kNerSchema, "--json", "--model", kTiny});
  EXPECT_NE(d.out, tiny.out);
}

// ------------------------------------------------------------------ extract JSON lines
std::string batch_input() {
  const auto ner = lines_of(read_file(kData + "/st_ner_dev.jsonl"));
  std::string in;
  for (int i = 0; i < 3; ++i) in += ner[static_cast<size_t>(i)] + "\n";
  in += "{\"id\": \"bad-json\", \"text\": \n";                                       // line 4: invalid JSON
  in += "\n";                                                                        // line 5: empty
  in += "{\"id\": 6, \"text\": \"没有schema\"}\n";                                   // line 6: no schema
  in += "{\"id\": 7, \"text\": \"\", \"schema\": {\"人物\": null}}\n";               // line 7: engine rejects
  for (int i = 3; i < 8; ++i) in += ner[static_cast<size_t>(i)] + "\n";
  in += "{\"id\": \"task\", \"text\": \"很好用\", \"task\": \"sentiment\"}\n";      // line 13
  return in;
}

TEST(CliExtractLines, OneOutputLinePerInputLineInOrder) {
  const fs::path in = work_dir() / "batch_in.jsonl", out = work_dir() / "batch_out.jsonl";
  write_file(in, batch_input());
  const auto inputs = lines_of(batch_input());
  const Outcome r = rexnlu({"extract", "--model", kTiny, "--input", in.string(), "--output", out.string(), "--batch-size", "4"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.find("lines/s"), std::string::npos) << "no progress bar when stderr is not a terminal";
  const auto outputs = lines_of(read_file(out));
  ASSERT_EQ(outputs.size(), inputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Json o = Json::parse(outputs[i]);
    const int line = static_cast<int>(i) + 1;
    if (line >= 4 && line <= 7) {
      EXPECT_EQ(o["line"], line) << outputs[i];
      EXPECT_TRUE(o["error"].is_string()) << outputs[i];
      EXPECT_FALSE(o.contains("output"));
      continue;
    }
    EXPECT_TRUE(o["output"].is_array()) << outputs[i];
    EXPECT_EQ(o["id"], Json::parse(inputs[i])["id"]);
  }
  EXPECT_EQ(Json::parse(outputs[5])["error"], "missing \"schema\" (or \"task\")");
  EXPECT_EQ(Json::parse(outputs[5])["id"], 6);
  EXPECT_EQ(Json::parse(outputs[4])["error"], "empty line");

  // stdin -> stdout gives the same lines; a line's result equals `extract TEXT --json`.
  const Outcome piped = rexnlu({"extract", "--model", kTiny, "--batch-size", "3"}, in.string());
  ASSERT_EQ(piped.rc, 0);
  EXPECT_EQ(piped.out, read_file(out));
  const Json first_in = Json::parse(inputs[1]);
  const Outcome single = rexnlu({"extract", first_in["text"].get<std::string>(), "--schema", first_in["schema"].dump(),
                             "--model", kTiny, "--json"});
  Json first_out = Json::parse(outputs[1]);
  first_out.erase("id");
  EXPECT_EQ(first_out, Json::parse(single.out));
}

TEST(CliExtractLines, ResumeAfterACrashGivesExactlyTheFullOutput) {
  const fs::path in = work_dir() / "resume_in.jsonl", full = work_dir() / "resume_full.jsonl";
  write_file(in, batch_input());
  ASSERT_EQ(rexnlu({"extract", "--model", kTiny, "--input", in.string(), "--output", full.string()}).rc, 0);
  const std::string expected = read_file(full);
  const auto lines = lines_of(expected);
  // A crash after k complete lines and part of the next one, for several k (in and out of batches).
  for (size_t k : {size_t{0}, size_t{1}, size_t{4}, size_t{6}, size_t{11}, lines.size() - 1}) {
    std::string partial;
    for (size_t i = 0; i < k; ++i) partial += lines[i] + "\n";
    partial += lines[k].substr(0, lines[k].size() / 2);
    const fs::path out = work_dir() / ("resume_" + std::to_string(k) + ".jsonl");
    write_file(out, partial);
    const Outcome r = rexnlu({"extract", "--model", kTiny, "--input", in.string(), "--output", out.string(), "--resume",
                          "--batch-size", "2"});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(read_file(out), expected) << "crash after " << k << " lines";
  }
  // Resuming a finished run changes nothing; resuming with no output yet runs everything.
  ASSERT_EQ(rexnlu({"extract", "--model", kTiny, "--input", in.string(), "--output", full.string(), "--resume"}).rc, 0);
  EXPECT_EQ(read_file(full), expected);
  const fs::path fresh = work_dir() / "resume_fresh.jsonl";
  ASSERT_EQ(rexnlu({"extract", "--model", kTiny, "--input", in.string(), "--output", fresh.string(), "--resume"}).rc, 0);
  EXPECT_EQ(read_file(fresh), expected);
  // An output with more lines than the input is not this input's output.
  const fs::path longer = work_dir() / "resume_longer.jsonl";
  write_file(longer, expected + expected);
  const Outcome bad = rexnlu({"extract", "--model", kTiny, "--input", in.string(), "--output", longer.string(), "--resume"});
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.err.find("only 13"), std::string::npos) << bad.err;
}

TEST(CliExtractLines, ProgressBarOnATerminal) {
  if (std::system("command -v script > /dev/null 2>&1") != 0) GTEST_SKIP() << "no `script` to make a terminal";
  const fs::path in = work_dir() / "progress_in.jsonl", out = work_dir() / "progress_out.jsonl",
                 log = work_dir() / "progress_tty.log";
  write_file(in, head_lines(kData + "/st_ner_dev.jsonl", 10));
  // `script` runs the command with stdout and stderr on a pseudo-terminal.
  const std::string cmd = std::string(REXNLU_CLI) + " extract --model " + kTiny + " --input " + in.string() +
                          " --output " + out.string() + " --batch-size 4";
  ASSERT_EQ(std::system(("script -qec " + quote(cmd) + " " + quote(log.string()) + " > /dev/null").c_str()), 0);
  const std::string tty = read_file(log);
  EXPECT_NE(tty.find("100.0%  10 lines"), std::string::npos) << tty;
  EXPECT_NE(tty.find("lines/s"), std::string::npos);
  EXPECT_NE(tty.find("ETA"), std::string::npos);
  EXPECT_EQ(lines_of(read_file(out)).size(), 10u);
}

// ------------------------------------------------------------------ eval
// Gold files built from the tiny model's own predictions with known edits, so the expected
// numbers follow from the edits alone: per sample, drop the first predicted path from the gold
// (one false positive) and add a path the model cannot predict (one false negative).
TEST(CliEval, ExtractionNumbersFollowFromKnownEdits) {
  const fs::path samples = work_dir() / "eval_samples.jsonl", gold = work_dir() / "eval_gold.jsonl";
  write_file(samples, head_lines(kData + "/st_ner_dev.jsonl", 12));
  const Outcome pred = rexnlu({"extract", "--model", kTiny, "--input", samples.string()});
  ASSERT_EQ(pred.rc, 0) << pred.err;
  const auto inputs = lines_of(read_file(samples)), outputs = lines_of(pred.out);
  ASSERT_EQ(inputs.size(), outputs.size());
  int64_t predicted = 0, dropped = 0;
  std::string gold_lines;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Json sample = Json::parse(inputs[i]);
    Json info = Json::array();
    std::set<std::string> unique;
    const Json paths = Json::parse(outputs[i])["output"];
    for (size_t p = 0; p < paths.size(); ++p) {
      Json path = Json::array();
      for (const Json& item : paths[p]) path.push_back({{"type", item["type"]}, {"span", item["span"]}, {"offset", item["offset"]}});
      if (!unique.insert(path.dump()).second) continue;
      if (p == 0) {
        ++dropped;
        continue;
      }
      info.push_back(path);
    }
    predicted += static_cast<int64_t>(unique.size());
    info.push_back(Json::array({{{"type", "人物"}, {"span", "不存在"}, {"offset", {1000, 1003}}}}));
    sample["info_list"] = info;
    gold_lines += sample.dump() + "\n";
  }
  ASSERT_GT(dropped, 0);
  ASSERT_GT(predicted, dropped);
  write_file(gold, gold_lines);
  const Outcome r = rexnlu({"eval", "--model", kTiny, "--data", gold.string(), "--json", "--batch-size", "5"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json ext = Json::parse(r.out)["results"]["extraction"];
  EXPECT_EQ(ext["n"], 12);
  EXPECT_EQ(ext["tp"], predicted - dropped);
  EXPECT_EQ(ext["fp"], dropped);
  EXPECT_EQ(ext["fn"], 12);
  const double p = static_cast<double>(predicted - dropped) / static_cast<double>(predicted);
  const double rec = static_cast<double>(predicted - dropped) / static_cast<double>(predicted - dropped + 12);
  EXPECT_NEAR(ext["precision"].get<double>(), p, 1e-12);
  EXPECT_NEAR(ext["recall"].get<double>(), rec, 1e-12);
  EXPECT_NEAR(ext["f1"].get<double>(), 2 * p * rec / (p + rec), 1e-12);
  EXPECT_EQ(ext["per_type"]["人物"]["fn"], 12);

  // --limit, and the readable table.
  const Outcome limited = rexnlu({"eval", "--model", kTiny, "--data", gold.string(), "--limit", "3"});
  ASSERT_EQ(limited.rc, 0) << limited.err;
  EXPECT_NE(limited.out.find("extraction: 3 samples"), std::string::npos) << limited.out;
  EXPECT_NE(limited.out.find("overall (micro)"), std::string::npos);
}

TEST(CliEval, ClassificationAccuracyFollowsFromKnownEdits) {
  const fs::path samples = work_dir() / "cls_samples.jsonl", gold = work_dir() / "cls_gold.jsonl";
  write_file(samples, head_lines(kData + "/st_tc_single_label_dev.jsonl", 8));
  const Outcome pred = rexnlu({"extract", "--model", kTiny, "--input", samples.string()});
  ASSERT_EQ(pred.rc, 0) << pred.err;
  const auto inputs = lines_of(read_file(samples)), outputs = lines_of(pred.out);
  std::string gold_lines;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Json sample = Json::parse(inputs[i]);
    const Json out = Json::parse(outputs[i])["output"];
    ASSERT_EQ(out.size(), 1u) << outputs[i];
    std::string label = out[0][0]["type"];
    if (i % 2 == 1) {  // every other sample: a wrong gold label
      const std::string predicted = label;
      for (auto it = sample["schema"].begin(); it != sample["schema"].end(); ++it) {
        if (it.key() != predicted) label = it.key();
      }
      ASSERT_NE(label, predicted);
    }
    sample["info_list"] = Json::array({Json::array({{{"type", label}, {"span", "[CLASSIFY]"}, {"offset", {0, 10}}}})});
    gold_lines += sample.dump() + "\n";
  }
  write_file(gold, gold_lines);
  const Outcome r = rexnlu({"eval", "--model", kTiny, "--data", gold.string(), "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json cls = Json::parse(r.out)["results"]["classification"];
  EXPECT_EQ(cls["n"], 8);
  EXPECT_DOUBLE_EQ(cls["accuracy"].get<double>(), 0.5);
}

// The same files and model as docs/accuracy.md's PyTorch column (tools/train/evaluate.py; demo
// model v2: the PyTorch GPU column): rexnlu eval must report the same counts. Retraining the
// bundled model changes these numbers: take them from the new PyTorch evaluation, never from
// rexnlu's own output.
TEST(CliEval, MatchesThePyTorchEvaluationOfTheBundledModel) {
  if (!fs::exists(kDemo + "/model.safetensors")) GTEST_SKIP() << "bundled model not present";
  const Outcome ner = rexnlu({"eval", "--model", kDemo, "--data", kData + "/st_ner_dev.jsonl", "--json"});
  ASSERT_EQ(ner.rc, 0) << ner.err;
  const Json e = Json::parse(ner.out)["results"]["extraction"];
  EXPECT_EQ(e["tp"], 159);
  EXPECT_EQ(e["fp"], 23);
  EXPECT_EQ(e["fn"], 47);
  EXPECT_NEAR(e["f1"].get<double>(), 0.8196, 5e-5);
  const Outcome absa = rexnlu({"eval", "--model", kDemo, "--data", kData + "/st_absa_dev.jsonl", "--json"});
  ASSERT_EQ(absa.rc, 0) << absa.err;
  const Json a = Json::parse(absa.out)["results"]["extraction"];
  EXPECT_EQ(a["tp"], 95);
  EXPECT_EQ(a["fp"], 31);
  EXPECT_EQ(a["fn"], 93);
  const Outcome tc = rexnlu({"eval", "--model", kDemo, "--data", kData + "/st_tc_single_label_dev.jsonl", "--json"});
  ASSERT_EQ(tc.rc, 0) << tc.err;
  EXPECT_NEAR(Json::parse(tc.out)["results"]["classification"]["accuracy"].get<double>(), 0.62, 1e-12);
}

// ------------------------------------------------------------------ info, bench
// The tiny model's sizes, counted independently from its safetensors header and vocab.txt.
TEST(CliInfo, ReportsArchitectureSizesAndSource) {
  std::ifstream st(kTiny + "/model.safetensors", std::ios::binary);
  uint64_t header_len = 0;
  st.read(reinterpret_cast<char*>(&header_len), 8);
  std::string header(header_len, '\0');
  st.read(header.data(), static_cast<std::streamsize>(header_len));
  int64_t parameters = 0;
  const Json tensors = Json::parse(header);
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    int64_t n = 1;
    for (const auto& d : it.value()["shape"]) n *= d.get<int64_t>();
    parameters += n;
  }
  const int64_t vocab_lines = static_cast<int64_t>(lines_of(read_file(kTiny + "/vocab.txt")).size());

  const Outcome r = rexnlu({"info", "--model", kTiny, "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["layers"], 2);
  EXPECT_EQ(j["hidden_size"], 64);
  EXPECT_EQ(j["attention_heads"], 4);
  EXPECT_EQ(j["intermediate_size"], 128);
  EXPECT_EQ(j["parameters"], parameters);
  EXPECT_EQ(j["parameter_bytes"], 4 * parameters);
  EXPECT_EQ(j["vocab_size"], vocab_lines + 4);
  EXPECT_EQ(j["checkpoint_format"], "safetensors");
  EXPECT_EQ(j["source"], "--model");
  EXPECT_EQ(j["model_dir"], fs::weakly_canonical(kTiny).string());
  EXPECT_EQ(j["checkpoint"], fs::weakly_canonical(kTiny + "/model.safetensors").string());
  EXPECT_EQ(j["warnings"], Json::array());

  const Outcome text = rexnlu({"info", "--model", kTiny});
  ASSERT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("layers / hidden / heads / FFN:  2 / 64 / 4 / 128\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("loaded from:"), std::string::npos);

  const Outcome env = rexnlu({"info", "--json"}, "/dev/null", "REXNLU_MODEL=" + quote(kTiny));
  ASSERT_EQ(env.rc, 0) << env.err;
  EXPECT_EQ(Json::parse(env.out)["source"], "$REXNLU_MODEL");
  EXPECT_EQ(Json::parse(env.out)["layers"], 2);
}

TEST(CliInfo, DefaultIsTheBundledModel) {
  if (!fs::exists(kDemo + "/config.json")) GTEST_SKIP() << "bundled model not present";
  const Outcome r = rexnlu({"info", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["source"], "bundled default");
  EXPECT_EQ(fs::path(j["model_dir"].get<std::string>()).filename(), "rexnlu-demo-zh-small");
}

TEST(CliBench, RunsAndReportsThroughputAndLatency) {
  const Outcome r = rexnlu({"bench", "--model", kTiny, "--n", "6", "--batch", "4", "--warmup", "1", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["requests"], 6);
  EXPECT_GT(j["text_tokens"].get<int64_t>(), 0);
  EXPECT_GT(j["requests_per_second"].get<double>(), 0);
  EXPECT_GT(j["forward_calls"].get<int64_t>(), 0);
  EXPECT_LE(j["latency_ms"]["p50"].get<double>(), j["latency_ms"]["p95"].get<double>());

  const fs::path texts = work_dir() / "bench_texts.txt";
  write_file(texts, "张三在北京工作。\n" + head_lines(kData + "/st_ner_dev.jsonl", 2));
  const Outcome t = rexnlu({"bench", "--model", kTiny, "--n", "3", "--texts", texts.string()});
  ASSERT_EQ(t.rc, 0) << t.err;
  for (const char* field : {"requests/s", "text tokens/s", "p50", "p95"}) {
    EXPECT_NE(t.out.find(field), std::string::npos) << field << "\n" << t.out;
  }
}

// ------------------------------------------------------------------ SiameseUIE
// eval and bench on a SiameseUIE directory (the second family): the gold is the ORIGINAL
// pipeline's output on the tiny fixture model (tests/data/siamese_uie_tiny/e2e_cases.jsonl, the
// NER cases, which rexnlu matches exactly), so eval must find every gold path and nothing else.
TEST(CliSiamese, EvalAndBenchRunOnASiameseUieDirectory) {
  const std::string model = REXNLU_TEST_DATA "/siamese_uie_tiny";
  const fs::path gold = work_dir() / "siamese_gold.jsonl";
  std::string gold_lines;
  std::set<std::string> paths;  // unique (sample, path): what eval counts
  int samples = 0;
  for (const std::string& line : lines_of(read_file(model + "/e2e_cases.jsonl"))) {
    Json c = Json::parse(line);
    if (c["id"].get<std::string>().rfind("ner/", 0) != 0) continue;  // 6 cases, 228 paths: enough, and quick
    for (const Json& p : c["expected"]) paths.insert(c["id"].get<std::string>() + p.dump());
    gold_lines += Json{{"id", c["id"]}, {"text", c["text"]}, {"schema", c["schema"]}, {"info_list", c["expected"]}}.dump() + "\n";
    ++samples;
  }
  ASSERT_GT(paths.size(), 10u);
  write_file(gold, gold_lines);
  const Outcome r = rexnlu({"eval", "--model", model, "--data", gold.string(), "--json", "--batch-size", "4"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json ext = Json::parse(r.out)["results"]["extraction"];
  EXPECT_EQ(ext["n"], samples);
  EXPECT_EQ(ext["tp"], static_cast<int64_t>(paths.size()));
  EXPECT_EQ(ext["fp"], 0);
  EXPECT_EQ(ext["fn"], 0);

  const Outcome b = rexnlu({"bench", "--model", model, "--n", "4", "--batch", "2", "--warmup", "1", "--json"});
  ASSERT_EQ(b.rc, 0) << b.err;
  const Json j = Json::parse(b.out);
  EXPECT_EQ(j["requests"], 4);
  EXPECT_GT(j["forward_calls"].get<int64_t>(), 0);
  EXPECT_GT(j["requests_per_second"].get<double>(), 0);
}

// ------------------------------------------------------------------ hardening
// Every numeric flag has a range; the error names the flag and the value as given. Before, --port
// 83536 listened on 18000 and --max-body-bytes -1 meant no limit (the server ran: `timeout` ends it).
TEST(CliArguments, NumericFlagsOutsideTheirRangeAreRefused) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"serve", "--port", "83536"}, "--port: 83536 is out of range: give a whole number from 0 to 65535"},
      {{"serve", "--port", "-1"}, "--port: -1 is out of range"},
      {{"serve", "--max-body-bytes", "-1"}, "--max-body-bytes: -1 is out of range: give a whole number from 1 to"},
      {{"serve", "--max-body-bytes", "99999999999999999999"}, "--max-body-bytes: 99999999999999999999 is out of range"},
      {{"serve", "--threads", "0"}, "--threads: 0 is out of range: give a whole number from 1 to 1024"},
      {{"serve", "--threads", "4x"}, "--threads: '4x' is not a whole number (give 1 to 1024)"},
      {{"serve", "--max-texts", "0"}, "--max-texts: 0 is out of range"},
      {{"serve", "--max-queue", "-5"}, "--max-queue: -5 is out of range"},
      {{"serve", "--token-budget", "0"}, "--token-budget: 0 is out of range"},
      {{"serve", "--deadline-ms", "0"}, "--deadline-ms: 0 is out of range"},
      {{"serve", "--batch-wait-us", "-1"}, "--batch-wait-us: -1 is out of range"},
      {{"extract", "--batch-size", "0"}, "--batch-size: 0 is out of range: give a whole number from 1 to 4096"},
      {{"eval", "--data", "x", "--limit", "-1"}, "--limit: -1 is out of range"},
      {{"eval", "--data", "x", "--batch-size", "100000"}, "--batch-size: 100000 is out of range"},
      {{"bench", "--batch", "0"}, "--batch: 0 is out of range"},
      {{"bench", "--warmup", "-1"}, "--warmup: -1 is out of range"},
  };
  for (const auto& [args, message] : cases) {
    const Outcome r = rexnlu(args, "/dev/null", "timeout 20");
    EXPECT_NE(r.rc, 0) << args[1] << " " << args[2];
    EXPECT_NE(r.rc, 124) << args[1] << " " << args[2] << ": the command ran instead of refusing the value";
    EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  }
}

// A line whose schema or id nests 80,000 arrays exited 139 and lost the rest of the batch (and
// --resume died on it every time). It is one error line now, and every other line is answered.
TEST(CliExtractLines, DeeplyNestedLineIsAnErrorLineNotACrash) {
  const std::string deep = std::string(80000, '[') + std::string(80000, ']');
  const std::string good = R"({"text": ")" + kText + R"(", "schema": )" + kNerSchema + "}";
  const fs::path in = work_dir() / "deep_in.jsonl", out = work_dir() / "deep_out.jsonl";
  write_file(in, good + "\n" + R"({"text": "张三", "schema": {"人物": )" + deep + "}}\n" +
                     R"({"id": )" + deep + R"(, "text": "张三", "schema": {"人物": null}})" + "\n" + good + "\n");
  const Outcome r = rexnlu({"extract", "--model", kTiny, "--input", in.string(), "--output", out.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto lines = lines_of(read_file(out));
  ASSERT_EQ(lines.size(), 4u);
  for (size_t i : {size_t{1}, size_t{2}}) {
    const Json o = Json::parse(lines[i]);
    EXPECT_EQ(o["line"], i + 1);
    EXPECT_NE(o["error"].get<std::string>().find("nested deeper than the limit of 64"), std::string::npos) << lines[i];
  }
  EXPECT_EQ(lines[0], lines[3]);
  EXPECT_TRUE(Json::parse(lines[3])["output"].is_array()) << lines[3];
  // The same schema given with --schema is refused up front.
  const std::string deep_flag = std::string(20000, '[') + std::string(20000, ']');  // an argument has at most 128 KiB
  const Outcome flag = rexnlu({"extract", "--model", kTiny, "--input", in.string(), "--schema", deep_flag});
  EXPECT_NE(flag.rc, 0);
  EXPECT_NE(flag.err.find("--schema is not valid JSON"), std::string::npos) << flag.err;
}

}  // namespace
