// Task presets produce the model card's input conventions (spec 8).
#include <gtest/gtest.h>

#include "rexnlu/error.h"
#include "uie/tasks.h"

namespace rexnlu::uie {
namespace {

TaskRequest run(TaskArgs a) { return build_task(a); }

TEST(Tasks, EachTaskBuildsItsTextAndSchema) {
  auto r = run({"ner", "北京", "", {"人物", "地理位置"}, ""});
  EXPECT_EQ(r.text, "北京");
  EXPECT_EQ(r.schema, R"j({"人物":null,"地理位置":null})j");
  r = run({"re", "t", "", {"人物/任职于(组织机构)", "人物/毕业院校(组织机构)", "组织机构/简称(组织机构)"}, ""});
  EXPECT_EQ(r.schema, R"j({"人物":{"任职于(组织机构)":null,"毕业院校(组织机构)":null},"组织机构":{"简称(组织机构)":null}})j");
  r = run({"ee", "t", "", {"胜负(事件触发词)/时间", "胜负(事件触发词)/胜者"}, ""});
  EXPECT_EQ(r.schema, R"j({"胜负(事件触发词)":{"时间":null,"胜者":null}})j");
  r = run({"absa", "很满意，音质很好", "", {}, ""});
  EXPECT_EQ(r.text, "#很满意，音质很好");
  EXPECT_EQ(r.schema, R"j({"属性词":{"情感词":null}})j");
  r = run({"absa", "#好", "", {"正向情感"}, ""});
  EXPECT_EQ(r.text, "#好");
  EXPECT_EQ(r.schema, R"j({"属性词":{"正向情感(情感词)":null}})j");
  r = run({"sentiment", "亏了。", "", {}, ""});
  EXPECT_EQ(r.text, "[CLASSIFY]亏了。");
  EXPECT_EQ(r.schema, R"j({"正向情感":null,"负向情感":null})j");
  r = run({"classify", "[CLASSIFY]雨刷", "", {"电器-附件/雨刮、洗涤器故障", "APP系统功能/蓝牙钥匙故障"}, ""});
  EXPECT_EQ(r.text, "[CLASSIFY]雨刷");
  EXPECT_EQ(r.schema, R"j({"电器-附件":{"雨刮、洗涤器故障":null},"APP系统功能":{"蓝牙钥匙故障":null}})j");
  r = run({"multi_classify", "童话", "", {"童话", "小说"}, ""});
  EXPECT_EQ(r.text, "[MULTICLASSIFY]童话");
  r = run({"nli", "呃", "从未", {}, ""});
  EXPECT_EQ(r.text, "[CLASSIFY]段落1：呃；段落2：从未");
  EXPECT_EQ(r.schema, R"j({"段落2和段落1的关系是：蕴含":null,"段落2和段落1的关系是：矛盾":null,"段落2和段落1的关系是：中立":null})j");
  r = run({"matching", "a", "b", {}, ""});
  EXPECT_EQ(r.schema, R"j({"文本匹配：相似":null,"文本匹配：不相似":null})j");
  r = run({"mrc", "大莱龙铁路位于山东省", "", {}, "大莱龙铁路位于哪里？"});
  EXPECT_EQ(r.text, "大莱龙铁路位于山东省");
  EXPECT_EQ(r.schema, R"j({"大莱龙铁路位于哪里？":null})j");
  r = run({"mrc", "A：坐飞机去吧。", "", {"飞机票太贵", "坐飞机头晕"}, "B为什么不坐飞机?"});
  EXPECT_EQ(r.text, "[CLASSIFY]A：坐飞机去吧。");
  EXPECT_EQ(r.schema, R"j({"B为什么不坐飞机?飞机票太贵":null,"B为什么不坐飞机?坐飞机头晕":null})j");
  r = run({"coref", "它", "", {"它", "事物"}, ""});
  EXPECT_EQ(r.schema,
            R"j({"下面的句子中，代词“它”指代的是“事物”吗？是的":null,"下面的句子中，代词“它”指代的是“事物”吗？不是":null})j");
}

TEST(Tasks, MissingArgumentsAreInputErrors) {
  for (TaskArgs a : {TaskArgs{"ner", "x", "", {}, ""}, TaskArgs{"nli", "x", "", {}, ""}, TaskArgs{"mrc", "x", "", {}, ""},
                     TaskArgs{"coref", "x", "", {"它"}, ""}, TaskArgs{"translate", "x", "", {}, ""}}) {
    EXPECT_THROW(build_task(a), Error) << a.task;
  }
}

}  // namespace
}  // namespace rexnlu::uie
