// rexnlu::Engine over a fake model: errors leave the engine usable, warnings, batches, offsets, JSON.
#include <gtest/gtest.h>

#include "engine/engine_impl.h"
#include "fixtures.h"

namespace rexnlu {
namespace {

using uie::testing::FakeLinkModel;
using uie::testing::link_first_token;

Engine fake_engine(FakeLinkModel::Fill fill = link_first_token) {
  return Engine(std::make_unique<Engine::Impl>(Engine::Impl{
      text::Tokenizer::from_model_dir(uie::testing::model_dir(), models::rex::added_tokens()), std::make_unique<FakeLinkModel>(fill), {}}));
}

TEST(Engine, BadInputThrowsAndTheEngineStaysUsable) {
  Engine engine = fake_engine();
  const std::string schema = R"j({"人物": null})j";
  for (auto [text, s] : std::vector<std::pair<std::string, std::string>>{
           {"", schema}, {"\xc3\x28", schema}, {"北京", "[]"}, {"北京", "{}"}, {"北京", R"j({"a": 3})j"}, {"北京", "{"}}) {
    try {
      engine.extract(text, s);
      ADD_FAILURE() << "no error for " << s;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
    }
  }
  Options bad;
  bad.stride = -1;
  EXPECT_THROW(engine.extract("北京", schema, bad), Error);
  const Result r = engine.extract(" 北京", schema);
  ASSERT_EQ(r.paths.size(), 1u);
  EXPECT_EQ(r.paths[0][0].span, "北");
  EXPECT_EQ(r.paths[0][0].start, 1);  // the leading space is skipped
  EXPECT_EQ(r.to_json(), R"j({"output":[[{"type":"人物","span":"北","offset":[1,2],"probability":0.9526}]]})j");
}

TEST(Engine, ByteOffsetsAndBatchesWithABadRequest) {
  Engine engine = fake_engine();
  Options bytes;
  bytes.byte_offsets = true;
  bytes.probabilities = false;
  std::vector<Request> requests = {
      {"北京", R"j({"人物": null})j", bytes},
      {"北京", R"j({"人物": 1})j", {}},
      {"上海", R"j({"地点": null})j", {}},
  };
  auto results = engine.extract_batch(requests);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].to_json(), R"j({"output":[[{"type":"人物","span":"北","offset":[0,3]}]]})j");
  EXPECT_FALSE(results[1].ok());
  EXPECT_EQ(results[1].error_kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(results[2].paths.at(0).at(0).span, "上");
  EXPECT_EQ(engine.forward_calls(), 1);  // both good requests in one forward
}

TEST(Engine, OverlongTypeNamesAreSkippedWithAWarning) {
  Engine engine = fake_engine();
  std::string long_type;
  for (int i = 0; i < 130; ++i) long_type += "长";
  const Result r = engine.extract("北京", "{\"" + long_type + "\": null, \"人物\": null}");
  ASSERT_EQ(r.paths.size(), 1u);
  EXPECT_EQ(r.paths[0][0].type, "人物");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.to_json().find("\"warnings\""), std::string::npos);
}

TEST(Engine, DedupIsOnByDefault) {
  // A span inside the overlap of two windows is found twice; the original keeps both.
  static const int32_t marked =
      text::Tokenizer::from_model_dir(uie::testing::model_dir(), models::rex::added_tokens()).token_to_id("乙");
  Engine engine = fake_engine([](const models::SequenceInput& s) {
    const int32_t L = s.length();
    models::LinkLogits z(static_cast<size_t>(L) * L, -5.0f);
    int32_t H = 0;
    while (H < L && s.ids[H] != 2) ++H;
    for (int32_t i = H + 1; i < L; ++i) {
      if (s.ids[i] != marked) continue;
      z[static_cast<size_t>(i) * L + i] = 3.0f;
      z[static_cast<size_t>(i) * L + 2] = 3.0f;  // token 2 = the only [TYPE]
      z[static_cast<size_t>(2) * L + i] = 3.0f;
    }
    return z;
  });
  std::string text;
  for (int i = 0; i < 40; ++i) text += i == 14 ? "乙" : "甲";
  Options o;
  o.max_len = 24;  // hint "[PREFIX][TYPE]人物" = 4 tokens: windows of 17 starting at 0, 13, 26
  o.stride = 4;
  o.hint_max_len = 8;
  const Result with = engine.extract(text, R"j({"人物": null})j", o);
  o.dedup = false;
  const Result without = engine.extract(text, R"j({"人物": null})j", o);
  ASSERT_EQ(without.paths.size(), 2u);
  ASSERT_EQ(with.paths.size(), 1u);
  EXPECT_EQ(with.paths[0][0].start, 14);
}

}  // namespace
}  // namespace rexnlu
