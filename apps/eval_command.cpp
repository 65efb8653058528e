#include "eval_command.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command_util.h"
#include "eval_metrics.h"
#include "progress_bar.h"
#include "request_json.h"
#include "rexnlu/error.h"
#include "text_table.h"

namespace rexnlu::apps {
namespace {

struct EvalFlags {
  LoadOptions load;
  std::string model, data, predictions;
  int64_t limit = 0;
  int batch_size = 16;
  std::string match = "offsets";
  bool json = false;
  bool no_progress = false;
};

struct Sample {
  Json id;
  std::string text;
  std::vector<EvalPath> gold;
  Request request;
};

EvalPath path_from_json(const Json& path) {
  if (!path.is_array()) throw InputError("each \"info_list\" entry must be an array of items");
  EvalPath out;
  for (const Json& item : path) {
    if (!item.is_object() || !item.contains("type") || !item["type"].is_string() || !item.contains("span") ||
        !item["span"].is_string()) {
      throw InputError("an info_list item needs string \"type\" and \"span\"");
    }
    EvalItem it{item["type"].get<std::string>(), item["span"].get<std::string>(), 0, 0};
    if (item.contains("offset")) {
      const Json& o = item["offset"];
      if (!o.is_array() || o.size() != 2 || !o[0].is_number_integer() || !o[1].is_number_integer()) {
        throw InputError("\"offset\" must be [start, end]");
      }
      it.start = o[0].get<int64_t>();
      it.end = o[1].get<int64_t>();
    }
    out.push_back(std::move(it));
  }
  return out;
}

Sample parse_sample(const std::string& line) {
  const Json j = parse_json_input(line);
  if (!j.is_object() || !j.contains("text") || !j["text"].is_string()) throw InputError("missing string \"text\"");
  if (!j.contains("schema")) throw InputError("missing \"schema\"");
  if (!j.contains("info_list") || !j["info_list"].is_array()) throw InputError("missing array \"info_list\"");
  Sample s;
  s.id = j.value("id", Json());
  s.text = j["text"].get<std::string>();
  for (const Json& path : j["info_list"]) s.gold.push_back(path_from_json(path));
  Options options;  // the pipeline's defaults, as tools/train/decode.py uses them
  options.probabilities = false;
  options.byte_offsets = false;  // gold offsets are code points
  s.request = Request{s.text, dump_json(j["schema"]), options};
  return s;
}

std::vector<EvalPath> predicted_paths(const Result& r) {
  std::vector<EvalPath> out;
  for (const Path& p : r.paths) {
    EvalPath path;
    for (const Span& s : p) path.push_back(EvalItem{s.type, s.span, s.start, s.end});
    out.push_back(std::move(path));
  }
  return out;
}

Json counts_json(const Counts& c) {
  return {{"precision", c.precision()}, {"recall", c.recall()}, {"f1", c.f1()}, {"tp", c.tp}, {"fp", c.fp}, {"fn", c.fn}};
}

Json report_json(const EvalFlags& f, const std::string& model_dir, const EvalScorer& scorer, double seconds) {
  Json out = {{"data", f.data}, {"model", model_dir}, {"match", f.match}, {"seconds", seconds}};
  Json kinds = Json::object();
  for (const auto& [kind, score] : scorer.scores()) {
    Json k = {{"n", score.samples}};
    if (kind == TaskKind::kClassification) k["accuracy"] = score.accuracy();
    if (kind == TaskKind::kMultiLabel) k["exact_match"] = score.accuracy();
    const Json total = counts_json(score.total);
    for (auto it = total.begin(); it != total.end(); ++it) k[it.key()] = it.value();
    Json per_type = Json::object();
    for (const auto& [type, counts] : score.per_type) per_type[type] = counts_json(counts);
    k["per_type"] = per_type;
    kinds[task_kind_name(kind)] = k;
  }
  out["results"] = kinds;
  return out;
}

std::string report_text(const EvalFlags& f, const std::string& model_dir, const EvalScorer& scorer, double seconds) {
  std::string out = "data:  " + f.data + "\nmodel: " + model_dir + "\ntime:  " + format_fixed(seconds, 1) + " s\n";
  for (const auto& [kind, score] : scorer.scores()) {
    out += "\n" + std::string(task_kind_name(kind)) + ": " + std::to_string(score.samples) + " samples";
    if (kind == TaskKind::kExtraction) {
      out += f.match == "offsets" ? " (a path is correct iff the same gold path exists: types, spans, offsets)\n"
                                  : " (a path is correct iff the same gold path exists: types, spans; offsets ignored)\n";
    } else {
      out += " (per-label rows: predicted label sets vs gold label sets)\n";
    }
    TextTable table({kind == TaskKind::kExtraction ? "type (last item)" : "label", "gold", "pred", "tp", "precision",
                     "recall", "f1"});
    auto row = [&](const std::string& name, const Counts& c) {
      table.add_row({name, std::to_string(c.tp + c.fn), std::to_string(c.tp + c.fp), std::to_string(c.tp),
                     format_fixed(c.precision(), 4), format_fixed(c.recall(), 4), format_fixed(c.f1(), 4)});
    };
    for (const auto& [type, counts] : score.per_type) row(type, counts);
    row("overall (micro)", score.total);
    out += table.to_string();
    if (kind == TaskKind::kClassification) {
      out += "accuracy: " + format_fixed(score.accuracy(), 4) + " (" + std::to_string(score.correct) + "/" +
             std::to_string(score.samples) + ")\n";
    }
    if (kind == TaskKind::kMultiLabel) {
      out += "exact-match accuracy (label set == gold set): " + format_fixed(score.accuracy(), 4) + " (" +
             std::to_string(score.correct) + "/" + std::to_string(score.samples) + ")\n";
    }
  }
  return out;
}

void run_eval(const EvalFlags& f) {
  if (f.batch_size < 1) throw InputError("--batch-size must be >= 1");
  if (f.limit < 0) throw InputError("--limit must be >= 0");
  std::ifstream in(f.data, std::ios::binary);
  if (!in) throw IoError("cannot open --data " + f.data);
  const auto bytes_total = static_cast<int64_t>(std::filesystem::file_size(f.data));
  std::ofstream predictions;
  if (!f.predictions.empty()) {
    predictions.open(f.predictions, std::ios::binary);
    if (!predictions) throw IoError("cannot open --predictions " + f.predictions + " for writing");
  }
  const std::string model_dir = resolve_model_dir(f.model).string();
  Engine engine = load_engine(f.model, f.load);
  const auto start = std::chrono::steady_clock::now();
  std::optional<ProgressBar> progress;
  if (!f.no_progress && is_terminal(stderr)) progress.emplace(stderr, bytes_total, 0);

  EvalScorer scorer(f.match == "text" ? SpanMatch::kText : SpanMatch::kOffsets);
  std::vector<Sample> batch;
  std::vector<int64_t> batch_lines;
  int64_t line_number = 0, samples = 0, bytes = 0;
  auto run_batch = [&] {
    std::vector<Request> requests;
    for (const Sample& s : batch) requests.push_back(s.request);
    const std::vector<Result> results = engine.extract_batch(requests);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!results[i].ok()) throw InputError(f.data + ":" + std::to_string(batch_lines[i]) + ": " + results[i].error);
      scorer.add(batch[i].text, batch[i].gold, predicted_paths(results[i]));
      if (predictions.is_open()) {
        predictions << dump_json(result_line(batch[i].id, results[i])) << '\n';
      }
    }
    samples += static_cast<int64_t>(batch.size());
    batch.clear();
    batch_lines.clear();
    if (progress) progress->update(samples, bytes);
  };
  std::string line;
  while ((f.limit == 0 || samples + static_cast<int64_t>(batch.size()) < f.limit) && std::getline(in, line)) {
    ++line_number;
    bytes += static_cast<int64_t>(line.size()) + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // as decode.py: blank lines are not samples
    try {
      batch.push_back(parse_sample(line));
    } catch (const Json::exception& e) {
      throw InputError(f.data + ":" + std::to_string(line_number) + ": invalid JSON: " + e.what());
    } catch (const Error& e) {
      throw InputError(f.data + ":" + std::to_string(line_number) + ": " + e.what());
    }
    batch_lines.push_back(line_number);
    if (batch.size() >= static_cast<size_t>(f.batch_size)) run_batch();
  }
  if (!batch.empty()) run_batch();
  if (progress) progress->finish();
  if (samples == 0) throw InputError(f.data + ": no samples");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (f.json) {
    std::cout << report_json(f, model_dir, scorer, seconds).dump(2) << '\n';
  } else {
    std::cout << report_text(f, model_dir, scorer, seconds);
  }
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "eval", "Evaluate on a JSON lines file in the sample_tasks format: span P/R/F1 per type and overall, accuracy "
              "for classification");
  auto f = std::make_shared<EvalFlags>();
  cmd->add_option("--data", f->data, R"(JSON lines {"id", "text", "info_list", "schema"})")->required();
  add_model_option(*cmd, f->model);
  add_load_options(*cmd, f->load);
  cmd->add_option("--limit", f->limit, "evaluate the first N samples only (0 = all)")->capture_default_str()->check(int_range(0, INT64_MAX));
  cmd->add_option("--batch-size", f->batch_size, "samples per engine batch")->capture_default_str()->check(int_range(1, 4096));
  cmd->add_option("--match", f->match, "extraction paths match on offsets (strict) or on text only (types + spans)")
      ->check(CLI::IsMember({"offsets", "text"}))
      ->capture_default_str();
  cmd->add_option("--predictions", f->predictions, "also write the predictions as JSON lines to this file");
  cmd->add_flag("--json", f->json, "print the report as JSON");
  cmd->add_flag("--no-progress", f->no_progress, "no progress bar (it is only shown when stderr is a terminal)");
  cmd->callback([f] { run_command("eval", [&] { run_eval(*f); }); });
}

}  // namespace rexnlu::apps
