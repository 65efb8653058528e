#include "bench_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command_util.h"
#include "request_json.h"
#include "rexnlu/error.h"
#include "text_table.h"

namespace rexnlu::apps {
namespace {

struct BenchFlags {
  LoadOptions load;
  std::string model, texts, schema = R"({"人物": null, "地理位置": null, "组织机构": null})";
  int n = 64;
  int batch = 1;
  int warmup = 2;
  bool json = false;
};

// The fixed benchmark set: news-style sentences of 20-120 characters.
const char* const kBuiltinTexts[] = {
    "1944年毕业于北大的名古屋铁道会长谷口清太郎等人在日本积极筹资，共筹款2.7亿日元，参加捐款的日本企业有69家。",
    "由上海文艺出版社、中国作家协会创联部等单位在北京举办的研讨会上，与会者认为，小说的题材独具特色。",
    "目前，北京市正在制定全面改善环境质量计划，特别是首先改善空气质量的措施。",
    "阿里巴巴集团创始人马云在杭州出席了第三届世界互联网大会，并发表了主题演讲。",
    "据新华社报道，国务院总理李克强昨天在人民大会堂会见了来访的德国总理默克尔，双方就中德关系交换了意见。",
    "华为技术有限公司总部位于广东省深圳市龙岗区，创始人任正非于1987年创立了这家公司。",
    "中国女排在里约奥运会决赛中以3比1战胜塞尔维亚队，时隔12年再次获得奥运会金牌，主教练郎平功不可没。",
    "清华大学和北京大学的研究人员在《自然》杂志上联合发表了一篇关于量子计算的论文，引起了国际学术界的广泛关注，"
    "多位来自麻省理工学院和斯坦福大学的学者对此给予了高度评价。",
};

std::vector<Request> load_requests(const BenchFlags& f) {
  std::vector<Request> out;
  if (f.texts.empty()) {
    for (const char* t : kBuiltinTexts) out.push_back(Request{t, f.schema, {}});
    return out;
  }
  std::ifstream in(f.texts, std::ios::binary);
  if (!in) throw IoError("cannot open --texts " + f.texts);
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      // A JSON request line as `extract --input` takes, or a plain text (with --schema).
      out.push_back(line[0] == '{' ? request_from_json(parse_json_input(line), {}) : Request{line, f.schema, {}});
    } catch (const std::exception& e) {
      throw InputError(f.texts + ":" + std::to_string(line_number) + ": " + e.what());
    }
  }
  if (out.empty()) throw InputError(f.texts + ": no texts");
  return out;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

void run_bench(const BenchFlags& f) {
  if (f.n < 1 || f.batch < 1 || f.warmup < 0) throw InputError("--n and --batch must be >= 1, --warmup >= 0");
  const std::vector<Request> pool = load_requests(f);
  Engine engine = load_engine(f.model, f.load);
  auto make_batch = [&](int64_t first, int64_t count) {
    std::vector<Request> batch;
    for (int64_t i = 0; i < count; ++i) batch.push_back(pool[static_cast<size_t>(first + i) % pool.size()]);
    return batch;
  };
  for (int i = 0; i < f.warmup; ++i) {
    for (const Result& r : engine.extract_batch(make_batch(0, f.batch))) {
      if (!r.ok()) throw InputError("request failed: " + r.error);
    }
  }
  using Clock = std::chrono::steady_clock;
  std::vector<double> latencies;
  int64_t tokens = 0, done = 0, paths = 0;
  const int64_t forwards_before = engine.forward_calls();
  const Clock::time_point start = Clock::now();
  while (done < f.n) {
    const int64_t count = std::min<int64_t>(f.batch, f.n - done);
    const std::vector<Request> batch = make_batch(done, count);
    const Clock::time_point t0 = Clock::now();
    const std::vector<Result> results = engine.extract_batch(batch);
    latencies.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    for (size_t i = 0; i < results.size(); ++i) {
      if (!results[i].ok()) throw InputError("request failed: " + results[i].error);
      paths += static_cast<int64_t>(results[i].paths.size());
      tokens += engine.count_tokens(batch[i].text);
    }
    done += count;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const int64_t forwards = engine.forward_calls() - forwards_before;
  const double p50 = percentile(latencies, 0.50), p95 = percentile(latencies, 0.95);
  const double mean = seconds / static_cast<double>(latencies.size());
  const Json j = {{"model", resolve_model_dir(f.model).string()},
                  {"texts", f.texts.empty() ? "builtin" : f.texts},
                  {"requests", done},
                  {"batch", f.batch},
                  {"seconds", seconds},
                  {"requests_per_second", static_cast<double>(done) / seconds},
                  {"text_tokens_per_second", static_cast<double>(tokens) / seconds},
                  {"latency_ms", {{"mean", 1e3 * mean}, {"p50", 1e3 * p50}, {"p95", 1e3 * p95}}},
                  {"text_tokens", tokens},
                  {"forward_calls", forwards},
                  {"paths", paths}};
  if (f.json) {
    std::cout << j.dump(2) << '\n';
    return;
  }
  std::cout << "model: " << j["model"].get<std::string>() << "\ntexts: " << j["texts"].get<std::string>() << " ("
            << pool.size() << " distinct), " << done << " requests in batches of " << f.batch << ", " << f.warmup
            << " warm-up batches\n\n";
  TextTable t({"metric", "value"});
  t.add_row({"requests/s", format_fixed(static_cast<double>(done) / seconds, 1)});
  t.add_row({"text tokens/s", format_fixed(static_cast<double>(tokens) / seconds, 0)});
  t.add_row({"latency per batch p50 (ms)", format_fixed(1e3 * p50, 2)});
  t.add_row({"latency per batch p95 (ms)", format_fixed(1e3 * p95, 2)});
  t.add_row({"latency per batch mean (ms)", format_fixed(1e3 * mean, 2)});
  t.add_row({"model forward calls", std::to_string(forwards)});
  t.add_row({"paths found", std::to_string(paths)});
  std::cout << t.to_string();
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure end-to-end extraction throughput and latency (p50/p95)");
  auto f = std::make_shared<BenchFlags>();
  add_model_option(*cmd, f->model);
  add_load_options(*cmd, f->load);
  cmd->add_option("--texts", f->texts, "texts to run: plain lines (with --schema) or extract JSON lines (default: 8 built-in news sentences)");
  cmd->add_option("--schema", f->schema, "schema for plain-text lines")->capture_default_str();
  cmd->add_option("--n", f->n, "requests to time (cycling over the texts)")->capture_default_str()->check(int_range(1, 1000000000));
  cmd->add_option("--batch", f->batch, "requests per extract_batch call (latency is per call)")->capture_default_str()->check(int_range(1, 4096));
  cmd->add_option("--warmup", f->warmup, "untimed batches first")->capture_default_str()->check(int_range(0, 1000000));
  cmd->add_flag("--json", f->json, "print JSON");
  cmd->callback([f] { run_command("bench", [&] { run_bench(*f); }); });
}

}  // namespace rexnlu::apps
