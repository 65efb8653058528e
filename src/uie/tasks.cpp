#include "uie/tasks.h"

#include <nlohmann/json.hpp>

#include "rexnlu/error.h"

namespace rexnlu {  // declared in the public API (include/rexnlu/tasks.h)

namespace {

using Json = nlohmann::ordered_json;

std::string with_marker(const std::string& marker, const std::string& text) {
  return text.rfind(marker, 0) == 0 ? text : marker + text;
}

// {"a": null, "b": null}; "x/y" entries nest: {"x": {"y": null}}.
Json schema_of(const std::vector<std::string>& labels) {
  Json schema = Json::object();
  for (const std::string& label : labels) {
    Json* node = &schema;
    size_t begin = 0;
    for (;;) {
      const size_t slash = label.find('/', begin);
      const std::string part = label.substr(begin, slash == std::string::npos ? std::string::npos : slash - begin);
      if (slash == std::string::npos) {
        if (!node->contains(part)) (*node)[part] = nullptr;
        break;
      }
      if (!node->contains(part) || (*node)[part].is_null()) (*node)[part] = Json::object();
      node = &(*node)[part];
      begin = slash + 1;
    }
  }
  return schema;
}

void need(bool ok, const std::string& task, const std::string& what) {
  if (!ok) throw InputError("task '" + task + "' needs " + what);
}

}  // namespace

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> names = {"ner", "re", "ee", "absa", "sentiment", "classify",
                                                 "multi_classify", "nli", "matching", "mrc", "coref"};
  return names;
}

TaskRequest build_task(const TaskArgs& a) {
  const std::string& t = a.task;
  const auto& labels = a.labels;
  auto or_default = [&](std::vector<std::string> defaults) { return labels.empty() ? defaults : labels; };
  auto two_passages = [&]() {
    need(!a.text2.empty(), t, "two passages (text and text2)");
    return with_marker("[CLASSIFY]", "段落1：" + a.text + "；段落2：" + a.text2);
  };
  if (t == "ner" || t == "re" || t == "ee") {
    need(!labels.empty(), t, t == "ner" ? "entity types (labels)" : "labels of the form parent/child");
    return {a.text, schema_of(labels).dump()};
  }
  if (t == "absa") {
    Json inner = Json::object();
    if (labels.empty()) inner["情感词"] = nullptr;
    for (const auto& s : labels) inner[s + "(情感词)"] = nullptr;
    // "#" stands for a missing aspect term (rex/data/absa convention): the model may return it.
    return {with_marker("#", a.text), Json{{"属性词", inner}}.dump()};
  }
  if (t == "sentiment") return {with_marker("[CLASSIFY]", a.text), schema_of(or_default({"正向情感", "负向情感"})).dump()};
  if (t == "classify") {
    need(!labels.empty(), t, "labels");
    return {with_marker("[CLASSIFY]", a.text), schema_of(labels).dump()};
  }
  if (t == "multi_classify") {
    need(!labels.empty(), t, "labels");
    return {with_marker("[MULTICLASSIFY]", a.text), schema_of(labels).dump()};
  }
  if (t == "nli") {
    const std::string p = "段落2和段落1的关系是：";
    return {two_passages(), schema_of(or_default({p + "蕴含", p + "矛盾", p + "中立"})).dump()};
  }
  if (t == "matching") return {two_passages(), schema_of(or_default({"文本匹配：相似", "文本匹配：不相似"})).dump()};
  if (t == "mrc") {
    need(!a.question.empty(), t, "a question");
    if (labels.empty()) return {a.text, Json{{a.question, nullptr}}.dump()};  // extractive: the question is the type
    Json schema = Json::object();
    for (const auto& choice : labels) schema[a.question + choice] = nullptr;  // multiple choice
    return {with_marker("[CLASSIFY]", a.text), schema.dump()};
  }
  if (t == "coref") {
    need(labels.size() == 2, t, "labels [pronoun, candidate]");
    const std::string q = "下面的句子中，代词“" + labels[0] + "”指代的是“" + labels[1] + "”吗？";
    return {with_marker("[CLASSIFY]", a.text), Json{{q + "是的", nullptr}, {q + "不是", nullptr}}.dump()};
  }
  throw InputError("unknown task '" + t + "' (known: ner re ee absa sentiment classify multi_classify nli matching mrc coref)");
}

}  // namespace rexnlu
