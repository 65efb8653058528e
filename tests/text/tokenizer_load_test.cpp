// Tokenizer::from_model_dir: the checkpoint files and the errors for broken ones.
#include <gtest/gtest.h>

#include "rexnlu/error.h"
#include "text/test_util.h"

namespace rexnlu::text {
namespace {

namespace fs = std::filesystem;

class ModelDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rexnlu_tok_load_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
  }
  // The error message of loading dir_, or "" when it loads.
  std::string load_error() {
    try {
      Tokenizer::from_model_dir(dir_, models::rex::added_tokens());
      return "";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
      return e.what();
    }
  }
  fs::path dir_;
};

TEST(TokenizerLoad, RexUniNluModel) {
  const Tokenizer& tok = testing::tiny_tokenizer();
  EXPECT_EQ(tok.vocab_size(), 12804);
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.cls_id(), 1);
  EXPECT_EQ(tok.sep_id(), 2);
  EXPECT_EQ(tok.unk_id(), 3);
  EXPECT_EQ(tok.token_to_id("[PREFIX]"), 12800);
  EXPECT_EQ(tok.token_to_id("[TYPE]"), 12801);
  EXPECT_EQ(tok.token_to_id("[CLASSIFY]"), 12802);
  EXPECT_EQ(tok.token_to_id("[MULTICLASSIFY]"), 12803);
  EXPECT_EQ(tok.token_to_id("[MULTICLASSIFY]"), 12803);
  EXPECT_EQ(tok.token_to_id("!"), 104);
  EXPECT_EQ(tok.token_to_id("no such token"), -1);
  EXPECT_EQ(tok.id_to_token(12801), "[TYPE]");
  EXPECT_EQ(tok.id_to_token(104), "!");
  EXPECT_THROW(tok.id_to_token(12804), Error);
  EXPECT_THROW(tok.id_to_token(-1), Error);
}

TEST_F(ModelDir, DefaultsWithoutConfigFiles) {
  write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n##b\n");
  const Tokenizer tok = Tokenizer::from_model_dir(dir_, models::rex::added_tokens());
  EXPECT_EQ(tok.vocab_size(), 11);
  EXPECT_EQ(tok.token_to_id("[PREFIX]"), 7);
  EXPECT_EQ(tok.token_to_id("[MULTICLASSIFY]"), 10);
  EXPECT_EQ(tok.encode_raw("AB").ids, (std::vector<int32_t>{5, 6}));  // lowercased by default
}

TEST_F(ModelDir, ConfigTurnsLowercaseOff) {
  write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nA\n");
  write("tokenizer_config.json", R"({"do_lower_case": false})");
  const Tokenizer tok = Tokenizer::from_model_dir(dir_, models::rex::added_tokens());
  EXPECT_EQ(tok.encode_raw("A a").ids, (std::vector<int32_t>{6, 5}));
}

TEST_F(ModelDir, OddVocabLinesKeepTheirIds) {
  // Only '\n' ends an entry: U+2028 and a lone '\r' mid-line stay inside; "\r\n" is one line end.
  write("vocab.txt", "[PAD]\r\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nx\u2028y\n\nz");
  const Tokenizer tok = Tokenizer::from_model_dir(dir_, models::rex::added_tokens());
  EXPECT_EQ(tok.id_to_token(0), "[PAD]");
  EXPECT_EQ(tok.token_to_id("x\u2028y"), 5);
  EXPECT_EQ(tok.id_to_token(6), "");
  EXPECT_EQ(tok.token_to_id("z"), 7);
  EXPECT_EQ(tok.token_to_id("[PREFIX]"), 8);
}

TEST_F(ModelDir, SpecialTokenNamesFromTheMap) {
  write("vocab.txt", "<pad>\n<unk>\n<s>\n</s>\n<mask>\na\n");
  write("special_tokens_map.json",
        R"({"unk_token": "<unk>", "sep_token": "</s>", "pad_token": "<pad>", "cls_token": {"content": "<s>"}, "mask_token": "<mask>"})");
  const Tokenizer tok = Tokenizer::from_model_dir(dir_, models::rex::added_tokens());
  EXPECT_EQ(tok.cls_id(), 2);
  EXPECT_EQ(tok.encode("a").ids, (std::vector<int32_t>{2, 5, 3}));
  EXPECT_EQ(tok.encode_raw("a<unk>").ids, (std::vector<int32_t>{5, 1}));
}

TEST_F(ModelDir, Errors) {
  EXPECT_NE(load_error().find("vocab.txt: missing"), std::string::npos);
  write("vocab.txt", "");
  EXPECT_NE(load_error().find("no tokens"), std::string::npos);
  write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\na\n");
  EXPECT_NE(load_error().find("line 7: duplicate entry \"a\" (first at line 6)"), std::string::npos) << load_error();
  write("vocab.txt", "[PAD]\n[CLS]\n[SEP]\n[MASK]\n");
  EXPECT_NE(load_error().find("unk_token \"[UNK]\""), std::string::npos) << load_error();
  write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n\xff\n");
  EXPECT_NE(load_error().find("line 6"), std::string::npos) << load_error();
  write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
  write("tokenizer_config.json", "{broken");
  EXPECT_NE(load_error().find("tokenizer_config.json: invalid JSON"), std::string::npos) << load_error();
  write("tokenizer_config.json", R"({"do_lower_case": "yes"})");
  EXPECT_NE(load_error().find("do_lower_case"), std::string::npos) << load_error();
  write("tokenizer_config.json", "{}");
  write("special_tokens_map.json", R"({"unk_token": 5})");
  EXPECT_NE(load_error().find("unk_token"), std::string::npos) << load_error();
}

}  // namespace
}  // namespace rexnlu::text
