// Task presets (spec 8): a task name plus simple arguments -> the text (with its
// [CLASSIFY]/[MULTICLASSIFY] marker or "#") and the schema the model card uses for that task.
#pragma once

#include <string>
#include <vector>

namespace rexnlu {

struct TaskArgs {
  std::string task;   // ner re ee absa sentiment classify multi_classify nli matching mrc coref
  std::string text;   // the passage (first passage for nli / matching)
  std::string text2;  // second passage (nli, matching)
  // ner: entity types; re: "subject/relation(object)"; ee: "event(事件触发词)/role";
  // absa: sentiment classes (default: plain 情感词); classify / multi_classify: labels, "a/b" for
  // a hierarchy; sentiment, nli, matching: optional label override; mrc: answer choices
  // (empty = extractive); coref: {pronoun, candidate}.
  std::vector<std::string> labels;
  std::string question;  // mrc
};

struct TaskRequest {
  std::string text;
  std::string schema;  // JSON
};

// Throws rexnlu::Error (kInvalidInput) for an unknown task or missing arguments.
TaskRequest build_task(const TaskArgs& args);

const std::vector<std::string>& task_names();

}  // namespace rexnlu
