// Loading a SiameseUIE directory: the registry picks the family from config.json and the tensor
// names, every tensor is declared once, and directories of neither family or with the wrong
// tensors get one clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "models/registry.h"
#include "rexnlu/engine.h"
#include "rexnlu/tokenizer.h"
#include "siamese_fixtures.h"

namespace rexnlu {
namespace {

namespace fs = std::filesystem;
using siamese_testing::tiny_dir;

// A scratch copy of the tiny model directory (config.json replaced by `config` when given).
struct ScratchDir {
  fs::path dir;
  explicit ScratchDir(const std::string& name) {
    dir = fs::temp_directory_path() / ("rexnlu_siamese_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const char* f : {"config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "model.safetensors"})
      fs::copy_file(fs::path(tiny_dir()) / f, dir / f);
  }
  ~ScratchDir() { fs::remove_all(dir); }
  void write(const std::string& file, const std::string& text) {
    fs::remove(dir / file);
    std::ofstream(dir / file) << text;
  }
  nlohmann::json config() const {
    std::ifstream in(dir / "config.json");
    return nlohmann::json::parse(in);
  }
};

std::string load_error(const fs::path& dir) {
  try {
    Engine::load(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(SiameseLoad, TheRegistryPicksTheFamilyAndInfoNamesIt) {
  EXPECT_STREQ(models::family_of(tiny_dir()).name, "siamese-uie");
  const Engine engine = Engine::load(tiny_dir());
  const ModelInfo& i = engine.model_info();
  EXPECT_EQ(i.family, "siamese-uie");
  EXPECT_NE(i.architecture.find("1 siamese + 6 joint"), std::string::npos) << i.architecture;
  EXPECT_EQ(i.layers, 7);
  EXPECT_EQ(i.hidden_size, 64);
  EXPECT_EQ(i.checkpoint_tensors, 123);
  // 121 declared tensors: everything but the unused pooler (2 tensors, 64*64 + 64 values).
  EXPECT_EQ(i.parameters, 21128 * 64 + 512 * 64 + 2 * 64 + 2 * 64 + 7 * (4 * (64 * 64 + 64) + 2 * (128 * 64) + 128 + 64 + 4 * 64) + 2 * 65);
  EXPECT_TRUE(engine.load_warnings().empty()) << engine.load_warnings().front();
}

TEST(SiameseLoad, TokenizeUsesTheDirectorysTokenizer) {
  // The fixture's tokenizer.json has a 5-token WordPiece vocabulary: HF's fast tokenizer (and so
  // the original) maps every word to [UNK] and ignores vocab.txt.
  const rexnlu::Tokenizer tok = rexnlu::Tokenizer::load(tiny_dir());
  const auto ids = tok.encode("谷爱凌").ids;
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 1, 1, 1, 3}));
}

TEST(SiameseLoad, ADirectoryOfNeitherFamilyNamesBoth) {
  ScratchDir d("neither");
  nlohmann::json c = d.config();
  c["model_type"] = "gpt2";
  d.write("config.json", c.dump());
  const std::string e = load_error(d.dir);
  EXPECT_NE(e.find("\"gpt2\" is not supported"), std::string::npos) << e;
  EXPECT_NE(e.find("rex-uninlu (model_type \"deberta-v2\")"), std::string::npos) << e;
  EXPECT_NE(e.find("siamese-uie (model_type \"bert\""), std::string::npos) << e;
}

TEST(SiameseLoad, ABertCheckpointWithoutTheSiameseTensorsIsNamedAsSuch) {
  ScratchDir d("plain_bert");
  fs::remove(d.dir / "model.safetensors");
  fs::copy_file(fs::path(REXNLU_MODELS_DIR) / "rexuninlu_tiny" / "model.safetensors", d.dir / "model.safetensors");
  const std::string e = load_error(d.dir);
  EXPECT_NE(e.find("without SiameseUIE's tensors"), std::string::npos) << e;
}

TEST(SiameseLoad, MissingAndMisshapenTensorsAreListedInOneError) {
  ScratchDir d("layers");
  nlohmann::json c = d.config();
  c["num_hidden_layers"] = 8;    // 2 lower layers: plm.encoder.layer.1.* is missing
  c["intermediate_size"] = 96;   // every FFN tensor has the wrong shape
  d.write("config.json", c.dump());
  const std::string e = load_error(d.dir);
  EXPECT_NE(e.find("plm.encoder.layer.1.attention.self.query.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("crossattention.layer.5.intermediate.dense.weight"), std::string::npos) << e;
}

TEST(SiameseLoad, ConfigProblemsNameTheKey) {
  ScratchDir d("config");
  nlohmann::json c = d.config();
  c["num_hidden_layers"] = 6;
  d.write("config.json", c.dump());
  EXPECT_NE(load_error(d.dir).find("num_hidden_layers = 6 is not supported"), std::string::npos) << load_error(d.dir);
  c["num_hidden_layers"] = 7;
  c["hidden_act"] = "relu";
  d.write("config.json", c.dump());
  EXPECT_NE(load_error(d.dir).find("hidden_act"), std::string::npos) << load_error(d.dir);
}

TEST(SiameseLoad, AnUnsupportedTokenizerJsonIsRefusedByField) {
  ScratchDir d("tokenizer");
  std::ifstream in(d.dir / "tokenizer.json");
  nlohmann::json t = nlohmann::json::parse(in);
  t["model"]["type"] = "BPE";
  d.write("tokenizer.json", t.dump());
  EXPECT_NE(load_error(d.dir).find("tokenizer.json: model type \"BPE\" is not supported"), std::string::npos)
      << load_error(d.dir);
  // Without tokenizer.json the directory's vocab.txt is the vocabulary.
  fs::remove(d.dir / "tokenizer.json");
  const rexnlu::Tokenizer tok = rexnlu::Tokenizer::load(d.dir);
  EXPECT_EQ(tok.encode("谷").ids.front(), 101);  // [CLS] is line 102 of vocab.txt
}

}  // namespace
}  // namespace rexnlu
