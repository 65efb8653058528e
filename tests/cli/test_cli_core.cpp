// --resume's output check, the progress line, the readable extract view, tables, request lines.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "pretty_print.h"
#include "progress_bar.h"
#include "request_json.h"
#include "resume_output.h"
#include "rexnlu/error.h"
#include "text_table.h"

namespace rexnlu::apps {
namespace {

namespace fs = std::filesystem;

fs::path temp_file(const std::string& name, const std::string& content) {
  const fs::path dir = fs::temp_directory_path() / ("rexnlu_cli_core_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ResumeOutput, DropsAPartialLastLine) {
  const fs::path p = temp_file("partial.jsonl", "{\"a\":1}\n{\"b\":2}\n{\"c\":");
  EXPECT_EQ(keep_complete_lines(p), 2);
  EXPECT_EQ(read(p), "{\"a\":1}\n{\"b\":2}\n");
}

TEST(ResumeOutput, KeepsACompleteFile) {
  const fs::path p = temp_file("complete.jsonl", "x\n\ny\n");
  EXPECT_EQ(keep_complete_lines(p), 3);
  EXPECT_EQ(read(p), "x\n\ny\n");
}

TEST(ResumeOutput, MissingOrEmptyFileHasNoLines) {
  EXPECT_EQ(keep_complete_lines(fs::temp_directory_path() / "rexnlu_no_such_file.jsonl"), 0);
  const fs::path only_partial = temp_file("only_partial.jsonl", "{\"half");
  EXPECT_EQ(keep_complete_lines(only_partial), 0);
  EXPECT_EQ(read(only_partial), "");
}

TEST(ResumeOutput, CountsLinesAcrossReadBuffers) {
  std::string content;
  for (int i = 0; i < 20000; ++i) content += "line " + std::to_string(i) + "\n";  // > 64 KiB
  const fs::path p = temp_file("long.jsonl", content + "tail");
  EXPECT_EQ(keep_complete_lines(p), 20000);
  EXPECT_EQ(read(p), content);
}

TEST(ProgressLine, KnownTotalShowsBarPercentRateAndEta) {
  ProgressSnapshot s;
  s.lines = 10;
  s.bytes_done = 500;
  s.bytes_total = 1000;
  s.seconds = 2.0;
  // 250 bytes/s over the 500 bytes left -> 2 s; 10 lines in 2 s -> 5 lines/s.
  EXPECT_EQ(format_progress(s, 10), "[#####.....] 50.0%  10 lines  5.0 lines/s  ETA 0:00:02");
}

TEST(ProgressLine, ResumedBytesDoNotCountInTheRate) {
  ProgressSnapshot s;
  s.lines = 1;
  s.bytes_skipped = 900;
  s.bytes_done = 910;
  s.bytes_total = 1000;
  s.seconds = 1.0;  // 10 bytes/s this run, 90 left -> 9 s
  EXPECT_EQ(format_progress(s, 4), "[###.] 91.0%  1 lines  1.0 lines/s  ETA 0:00:09");
}

TEST(ProgressLine, UnknownTotalShowsCountAndRateOnly) {
  ProgressSnapshot s;
  s.lines = 30;
  s.bytes_done = 3000;
  s.seconds = 10.0;
  EXPECT_EQ(format_progress(s), "30 lines  3.0 lines/s");
}

Result sample_result() {
  Result r;
  r.paths.push_back({Span{"人物", "谷口清太郎", 18, 23, 0.93}});
  r.paths.push_back({Span{"组织机构", "名古屋铁道", 11, 16, 0.8}});
  r.paths.push_back({Span{"人物", "北大", 8, 10, 0.5}});
  return r;
}

TEST(PrettyPrint, GroupsByTypeWithSpansInTheirSentence) {
  const std::string text = "1944年毕业于北大的名古屋铁道会长谷口清太郎等人在日本积极筹资。第二句。";
  const std::string expected =
      "人物 (2)\n"
      "  谷口清太郎  [18,23)  p=0.93\n"
      "      1944年毕业于北大的名古屋铁道会长[谷口清太郎]等人在日本积极筹资。…\n"
      "  北大  [8,10)  p=0.50\n"
      "      1944年毕业于[北大]的名古屋铁道会长谷口清太郎等人在日本积极筹资。…\n"
      "组织机构 (1)\n"
      "  名古屋铁道  [11,16)  p=0.80\n"
      "      1944年毕业于北大的[名古屋铁道]会长谷口清太郎等人在日本积极筹资。…\n";
  EXPECT_EQ(pretty_result(text, sample_result(), false), expected);
}

TEST(PrettyPrint, ColorOnlyWhenAsked) {
  const std::string text = "1944年毕业于北大的名古屋铁道会长谷口清太郎等人在日本积极筹资。";
  EXPECT_EQ(pretty_result(text, sample_result(), false).find('\033'), std::string::npos);
  const std::string colored = pretty_result(text, sample_result(), true);
  EXPECT_NE(colored.find("\033[1;31m谷口清太郎\033[0m"), std::string::npos) << colored;
  EXPECT_EQ(colored.find("[谷口清太郎]"), std::string::npos);
}

TEST(PrettyPrint, PathOnOneLineBothSpansHighlighted) {
  const std::string text = "大豐銀行常務董事總經理何厚鏵先生";
  Result r;
  r.paths.push_back({Span{"组织机构", "大豐銀行", 0, 4, 0.9}, Span{"高管(人物)", "何厚鏵", 11, 14, 0.8}});
  EXPECT_EQ(pretty_result(text, r, false),
            "组织机构 → 高管(人物) (1)\n"
            "  大豐銀行 → 何厚鏵  [0,4) [11,14)  p=0.90 0.80\n"
            "      [大豐銀行]常務董事總經理[何厚鏵]先生\n");
}

TEST(PrettyPrint, ContextIsClippedAroundLongTexts) {
  const std::string text = std::string(120, 'a') + "目标" + std::string(40, 'b');
  Result r;
  r.paths.push_back({Span{"x", "目标", 120, 122, 1.0}});
  const std::string out = pretty_result(text, r, false);
  EXPECT_NE(out.find("      …" + std::string(30, 'a') + "[目标]" + std::string(30, 'b') + "…\n"), std::string::npos)
      << out;
}

TEST(PrettyPrint, ClassificationAndOddOffsetsNeverBreak) {
  Result r;
  r.paths.push_back({Span{"正向情感", "[CLASSIFY]", 0, 10, 0.75}});
  EXPECT_EQ(pretty_result("[CLASSIFY]很好用", r, false), "正向情感 (1)\n  正向情感  p=0.75\n");
  Result odd;
  odd.paths.push_back({Span{"人物", "x", 5, 3, 0.5}});      // end < start (linked to [SEP])
  odd.paths.push_back({Span{"人物", "y", 2, 99, 0.5}});     // past the end
  const std::string out = pretty_result("很好用", odd, false);
  EXPECT_EQ(out, "人物 (2)\n  x  [5,3)  p=0.50\n  y  [2,99)  p=0.50\n");
  EXPECT_EQ(pretty_result("很好用", Result{}, false), "(nothing found)\n");
}

TEST(TextTable, AlignsByTerminalColumns) {
  EXPECT_EQ(display_width("ab"), 2u);
  EXPECT_EQ(display_width("人物"), 4u);
  EXPECT_EQ(display_width("：a"), 3u);
  TextTable t({"type", "n"});
  t.add_row({"人物", "12"});
  t.add_row({"overall", "3"});
  EXPECT_EQ(t.to_string(), "type      n\n-----------\n人物     12\noverall   3\n");
}

TEST(RequestJson, SchemaTaskAndOptions) {
  const Request r = request_from_json(Json::parse(R"({"text": "张三", "schema": {"人物": null}, "options": {"max_len": 64}})"), {});
  EXPECT_EQ(r.text, "张三");
  EXPECT_EQ(r.schema, R"({"人物":null})");
  EXPECT_EQ(r.options.max_len, 64);
  const Request t = request_from_json(Json::parse(R"({"text": "很好", "task": "classify", "labels": ["正向", "负向"]})"), {});
  EXPECT_EQ(t.text.rfind("[CLASSIFY]", 0), 0u);
  EXPECT_NE(t.schema.find("正向"), std::string::npos);
  EXPECT_THROW(request_from_json(Json::parse(R"({"text": "x"})"), {}), Error);
  EXPECT_THROW(request_from_json(Json::parse(R"({"schema": {}})"), {}), Error);
  EXPECT_THROW(request_from_json(Json::parse(R"([1])"), {}), Error);
  EXPECT_THROW(request_from_json(Json::parse(R"({"text": "x", "task": "ner", "labels": [1]})"), {}), Error);
  EXPECT_THROW(request_from_flags("x", "", TaskFlags{}, {}), Error);
}

}  // namespace
}  // namespace rexnlu::apps
