// state_dict files: round trips, and the errors a user meets with a file that does not fit.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "condbench/decoder/config.h"
#include "condbench/error.h"
#include "condbench/model.h"
#include "condbench/random.h"
#include "condbench/torch_save_files.h"
#include "reference.h"

namespace condbench::testing {
namespace {

class StateDictFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("condbench-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The message condbench gives when loading `state` into a default model.
  static std::string load_error(const StateDict& state) {
    EarlyExitModel model(model_config("mlp"), 1);
    try {
      model->load_state_dict(state);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;
};

// The decoder's state_dict is read as a family's: its sizes from the shapes, then every key, shape and
// dtype against its contract, each refusal naming the key (the last layer's missing norm too, not
// read as a shallower decoder).
TEST_F(StateDictFile, ADecodersIsCheckedKeyByKeyAsAFamilys) {
  DecoderConfig c;
  c.vocab = 8;
  c.d_model = 8;
  c.heads = 2;
  c.layers = 3;
  c.ffn = 16;
  c.context = 8;
  c.exit_every = 2;
  c.prompt = c.generate = 1;
  const std::vector<ParameterSpec> specs = decoder_parameters(c);
  const FlatParameters params = seeded_decoder_parameters(c, 1);
  const auto state = [&] {
    StateDict sd;
    for (size_t i = 0; i < specs.size(); ++i)
      sd.emplace_back(specs[i].name, at::tensor(params[i]).reshape(specs[i].shape));
    return sd;
  };
  const auto refusal = [&](const StateDict& sd) -> std::string {
    save_state_dict_file(sd, path("d.pt"));
    DecoderConfig given;  // what a state_dict cannot say: heads, exit_every, the sequence's lengths
    given.heads = 2;
    given.prompt = given.generate = 1;
    try {
      EXPECT_EQ(load_decoder_file(path("d.pt"), given).config, c);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const auto with = [&](const std::function<void(StateDict&)>& change) {
    StateDict sd = state();
    change(sd);
    return refusal(sd);
  };
  const auto entry = [](StateDict& sd, const std::string& key) -> at::Tensor& {
    return std::find_if(sd.begin(), sd.end(), [&](const auto& e) { return e.first == key; })->second;
  };
  const std::string file = "weights '" + path("d.pt") + "': ";
  EXPECT_EQ(refusal(state()), "");
  EXPECT_EQ(
      with([](StateDict& sd) {
        sd.erase(std::find_if(sd.begin(), sd.end(), [](const auto& e) { return e.first == "layers.2.norm1.weight"; }));
      }),
      file + "missing key 'layers.2.norm1.weight' before 'layers.2.attn.out.bias'");
  EXPECT_EQ(with([&](StateDict& sd) {
              entry(sd, "layers.1.fc1.weight") = at::zeros({15, 8});
            }),
            file + "'layers.1.fc1.weight' has shape [15, 8], expected [16, 8]");
  EXPECT_EQ(with([](StateDict& sd) { sd.emplace_back("extra", at::zeros({1})); }), file + "unexpected key 'extra'");
  EXPECT_EQ(with([&](StateDict& sd) { entry(sd, "layers.0.fc2.bias") = at::zeros({8}, at::kLong); }),
            file + "'layers.0.fc2.bias' is not a floating-point tensor");
  EXPECT_EQ(with([](StateDict& sd) { sd.erase(sd.begin()); }),
            file + "has no 'embed.weight': not a decoder's state_dict (docs/models.md)");
}

TEST_F(StateDictFile, ParameterNamesAreThoseOfThePyTorchModule) {
  const EarlyExitModel model(model_config("mlp"), 1);
  std::vector<std::string> names;
  for (const auto& p : model->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"backbone.0.weight", "backbone.0.bias", "backbone.1.weight",
                                             "backbone.1.bias", "backbone.2.weight", "backbone.2.bias", "exit1.weight",
                                             "exit1.bias", "exit2.weight", "exit2.bias", "exit3.weight", "exit3.bias",
                                             "final.weight", "final.bias"}));
  EXPECT_EQ(model->named_parameters()["backbone.0.weight"].sizes(), (std::vector<int64_t>{64, 32}));
}

TEST_F(StateDictFile, SeedGivesTheSameWeightsEveryTime) {
  const EarlyExitModel a(model_config("mlp"), 42), b(model_config("mlp"), 42), c(model_config("mlp"), 43);
  EXPECT_EQ(a->flat_parameters(), b->flat_parameters());
  EXPECT_NE(a->flat_parameters(), c->flat_parameters());
  // SplitMix64's published first output for seed 0: the generator is the one every machine runs.
  EXPECT_EQ(SplitMix64(0).next(), 0xE220A8397B1DCDAFull);
}

TEST_F(StateDictFile, SaveThenLoadRoundTripsBitExactly) {
  ModelConfig config = mlp_config(7, 13, 5, 4);
  const EarlyExitModel model(config, 3);
  save_state_dict_file(model->state_dict(), path("w.pt"));
  const StateDict loaded = load_state_dict_file(path("w.pt"));
  EXPECT_EQ(infer_config(loaded), config);
  const EarlyExitModel again(infer_config(loaded), loaded);
  EXPECT_EQ(again->flat_parameters(), model->flat_parameters());  // bit for bit
  ASSERT_EQ(loaded.size(), model->state_dict().size());
  for (size_t i = 0; i < loaded.size(); ++i) EXPECT_EQ(loaded[i].first, model->state_dict()[i].first);  // order kept
}

TEST_F(StateDictFile, MissingKeyIsNamed) {
  StateDict state = EarlyExitModel(model_config("mlp"), 1)->state_dict();
  state.erase(state.begin() + 8);  // exit2.weight
  EXPECT_NE(load_error(state).find("missing key 'exit2.weight'"), std::string::npos) << load_error(state);
}

TEST_F(StateDictFile, ExtraKeyIsNamed) {
  StateDict state = EarlyExitModel(model_config("mlp"), 1)->state_dict();
  state.emplace_back("exit9.weight", at::zeros({10, 64}));
  EXPECT_NE(load_error(state).find("unexpected key 'exit9.weight'"), std::string::npos) << load_error(state);
}

TEST_F(StateDictFile, WrongShapeIsNamed) {
  StateDict state = EarlyExitModel(model_config("mlp"), 1)->state_dict();
  state[2].second = at::zeros({64, 63});  // backbone.1.weight
  const std::string message = load_error(state);
  EXPECT_NE(message.find("'backbone.1.weight' has shape [64, 63], expected [64, 64]"), std::string::npos) << message;
}

TEST_F(StateDictFile, FailedLoadLeavesTheModelAsItWas) {
  EarlyExitModel model(model_config("mlp"), 1);
  const FlatParameters before = model->flat_parameters();
  StateDict state = EarlyExitModel(model_config("mlp"), 2)->state_dict();
  state.pop_back();
  EXPECT_THROW(model->load_state_dict(state), Error);
  EXPECT_EQ(model->flat_parameters(), before);
}

TEST_F(StateDictFile, UnreadableOrForeignFilesGiveOneLineErrors) {
  EXPECT_THROW(load_state_dict_file(path("absent.pt")), Error);
  std::ofstream(path("text.pt")) << "not a pickle";
  try {
    load_state_dict_file(path("text.pt"));
    FAIL() << "a text file loaded";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("text.pt"), std::string::npos);
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
  }
}

TEST_F(StateDictFile, ConfigIsReadFromTheShapes) {
  const ModelConfig config = mlp_config(11, 17, 3, 5);
  EXPECT_EQ(infer_config(EarlyExitModel(config, 1)->state_dict()), config);
  StateDict no_final = EarlyExitModel(config, 1)->state_dict();
  no_final.pop_back();
  no_final.pop_back();
  EXPECT_THROW(infer_config(no_final), Error);
}

}  // namespace
}  // namespace condbench::testing
