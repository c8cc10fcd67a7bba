// read_manifest / parse_manifest: a model file's manifest.json as model_file.py compile writes it
// is read whole; each way a manifest from someone else's machine can be wrong is one line naming the
// key. No LibTorch, no package: the manifest alone.
#include "condbench/model_file_manifest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "condbench/error.h"

namespace condbench {
namespace {

namespace fs = std::filesystem;

// A two-stage model on rows of 4 values, 3 classes: what model_file.py compile writes for it.
nlohmann::json good_manifest() {
  auto part = [](const std::string& name, nlohmann::json in, nlohmann::json out, const std::string& package) {
    return nlohmann::json{{"name", name},        {"input", std::move(in)}, {"output", std::move(out)},
                          {"flops_per_row", 64}, {"bytes", 160},           {"package", package}};
  };
  return {
      {"format", kModelFileFormat},
      {"torch", "2.15.0"},
      {"device", "cpu"},
      {"file", "mlp.py"},
      {"digest", "0123456789abcdef"},
      {"stages", 2},
      {"classes", 3},
      {"confidence", "max softmax"},
      {"input", {{"dtype", "float32"}, {"inputs", {{{"row", {"rows", 4}}, {"below", nullptr}}}}, {"pool", nullptr}}},
      {"parts",
       {part("stages[0]", {"rows", 4}, {"rows", 8}, "stage0.pt2"),
        part("exits[0]", {"rows", 8}, {"rows", 3}, "exit0.pt2"),
        part("stages[1]", {"rows", 8}, {"rows", 8}, "stage1.pt2"),
        part("exits[1]", {"rows", 8}, {"rows", 3}, "exit1.pt2"), part("final", {"rows", 8}, {"rows", 3}, "final.pt2")}},
      {"confidence_package", nullptr},
      {"whole_model",
       {{"cond", {{"package", "cond.pt2"}, {"workaround", "layout_optimization=False"}, {"default", "differs"}}},
        {"masked", {{"unavailable", "torch.export cannot export it"}}}}},
      {"reference", "reference.pt"},
      {"reads", {{{"path", "/home/u/helper.py"}, {"sha256", "00"}}}}};
}

// The one-line error parse_manifest gives for `json`, or "" when it accepts it.
std::string refusal(const nlohmann::json& json) {
  try {
    parse_manifest(json.dump(), "F");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string with(const std::function<void(nlohmann::json&)>& change) {
  nlohmann::json json = good_manifest();
  change(json);
  return refusal(json);
}

TEST(ModelFileManifest, ReadsWhatModelFilePyWrites) {
  const ModelFileManifest m = parse_manifest(good_manifest().dump(), "F");
  EXPECT_EQ(m.torch, "2.15.0");
  EXPECT_EQ(m.device, "cpu");
  EXPECT_EQ(m.file, "mlp.py");
  EXPECT_EQ(m.digest, "0123456789abcdef");
  EXPECT_EQ(m.stages(), 2);
  EXPECT_EQ(m.classes, 3);
  ASSERT_EQ(m.parts.size(), 5u);
  EXPECT_EQ(m.parts[2].name, "stages[1]");
  EXPECT_EQ(m.parts[0].input_row, (std::vector<int64_t>{4}));
  EXPECT_EQ(m.parts[4].output_row, (std::vector<int64_t>{3}));
  EXPECT_EQ(m.parts[1].package, "exit0.pt2");
  EXPECT_DOUBLE_EQ(m.parts[3].flops_per_row, 64);
  EXPECT_DOUBLE_EQ(m.parts[3].bytes, 160);
  EXPECT_EQ(m.confidence_package, "");
  EXPECT_EQ(m.whole_model.at("cond").package, "cond.pt2");
  EXPECT_EQ(m.whole_model.at("cond").workaround, "layout_optimization=False");
  EXPECT_EQ(m.whole_model.at("cond").default_refused, "differs");
  EXPECT_EQ(m.whole_model.at("masked").package, "");
  EXPECT_EQ(m.whole_model.at("masked").unavailable, "torch.export cannot export it");
  EXPECT_EQ(m.reference, "reference.pt");
  EXPECT_EQ(m.reads, std::vector<std::string>{"/home/u/helper.py"});
  EXPECT_EQ(with([](nlohmann::json& j) { j["confidence_package"] = "confidence.pt2"; }), "");
  EXPECT_EQ(with([](nlohmann::json& j) { j.erase("reads"); }), "");  // a folder made before it was kept
  EXPECT_FALSE(m.integer_input);
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].row, (std::vector<int64_t>{4}));
  EXPECT_EQ(m.pool, "");
}

TEST(ModelFileManifest, TokenIdsAndAMaskPackIntoTheFirstStagesRow) {
  nlohmann::json json = good_manifest();
  json["input"] = {{"dtype", "int64"},
                   {"inputs", {{{"row", {"rows", 2}}, {"below", 1000}}, {{"row", {"rows", 2}}, {"below", 2}}}},
                   {"pool", "pool.pt"}};
  const ModelFileManifest m = parse_manifest(json.dump(), "F");
  EXPECT_TRUE(m.integer_input);
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(m.inputs[0].below, 1000);
  EXPECT_EQ(m.inputs[1].below, 2);
  EXPECT_EQ(m.pool, "pool.pt");
  // The input rows in floats' worth of bytes: twice the values of an int64 input (4 per row here),
  // beside the float input's of the same manifest.
  const auto input_rows = [](const ModelFileManifest& manifest) {
    for (const MemoryTerm& term : manifest.memory_terms())
      if (term.what == "the input rows") return term.times;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(input_rows(m), 2 * 2 * 4);
  EXPECT_DOUBLE_EQ(input_rows(parse_manifest(good_manifest().dump(), "F")), 2 * 4);
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& j) { j["input"]["dtype"] = "float16"; }, "input.dtype: 'float16', not float32 or int64"},
      {[](nlohmann::json& j) { j["input"]["inputs"][1]["below"] = nullptr; }, "input.inputs[1].below: not an integer"},
      {[](nlohmann::json& j) {
         j["input"]["inputs"][1]["row"] = {"rows", 3};
       },
       "input.inputs: do not pack into stages[0]'s input [rows, 4] (5 values a row)"},
      {[](nlohmann::json& j) { j["input"]["pool"] = "../pool.pt"; }, "input.pool: not \"pool.pt\""},
      {[](nlohmann::json& j) { j["input"]["dtype"] = "float32"; }, "input.inputs[0].below: a limit on a float input"},
      {[](nlohmann::json& j) { j["input"]["inputs"] = nlohmann::json::array(); }, "input.inputs: not a list of 1 to 8"},
      {[](nlohmann::json& j) { j.erase("input"); }, "input: missing"},
  };
  for (const auto& [change, said] : cases) {
    nlohmann::json changed = json;
    change(changed);
    const std::string error = refusal(changed);
    EXPECT_NE(error.find("model file F: manifest.json: " + said), std::string::npos) << error << "\nwant: " << said;
  }
}

TEST(ModelFileManifest, EachWrongKeyIsOneLineNamingIt) {
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& j) { j["format"] = kModelFileFormat - 1; }, "format: made by another condbench"},
      {[](nlohmann::json& j) { j.erase("torch"); }, "torch: missing"},
      {[](nlohmann::json& j) { j["device"] = "tpu"; }, "device: 'tpu', not \"cpu\" or \"cuda\""},
      {[](nlohmann::json& j) { j["file"] = "../x.py"; }, "file: '../x.py' is not a file name"},
      {[](nlohmann::json& j) { j["digest"] = "0123"; }, "digest: not 16 hexadecimal digits"},
      {[](nlohmann::json& j) { j["stages"] = kModelFileMaxStages + 1; }, "stages: not an integer in 1..256"},
      {[](nlohmann::json& j) { j["classes"] = 2.5; }, "classes: not an integer"},
      {[](nlohmann::json& j) { j["parts"].erase(4); }, "parts: not a list of 5 parts"},
      {[](nlohmann::json& j) { j["parts"][1]["name"] = "exits[1]"; }, "parts[1].name: 'exits[1]', expected 'exits[0]'"},
      {[](nlohmann::json& j) {
         j["parts"][0]["input"] = {"batch", 4};
       },
       "parts[0].input: not a shape"},
      {[](nlohmann::json& j) {
         j["parts"][0]["input"] = {"rows", kModelFileMaxRowValues, 2};
       },
       "parts[0].input: more than 4194304 per row"},
      {[](nlohmann::json& j) {
         j["parts"][2]["input"] = {"rows", 9};
       },
       "parts[2].input: stages[1] takes [rows, 9] where the stage before gives [rows, 8]"},
      {[](nlohmann::json& j) {
         j["parts"][1]["output"] = {"rows", 4};
       },
       "parts[1].output: exits[0] gives [rows, 4], not logits [rows, 3]"},
      {[](nlohmann::json& j) { j["parts"][3]["flops_per_row"] = -1; }, "parts[3].flops_per_row: not a count"},
      {[](nlohmann::json& j) { j["parts"][4]["package"] = "/bin/sh"; }, "parts[4].package: '/bin/sh', expected"},
      {[](nlohmann::json& j) { j["confidence_package"] = "x.pt2"; }, "confidence_package: not \"confidence.pt2\""},
      {[](nlohmann::json& j) { j["whole_model"].erase("masked"); }, "whole_model.masked: missing"},
      {[](nlohmann::json& j) { j["whole_model"]["cond"]["package"] = "masked.pt2"; },
       "whole_model.cond.package: not \"cond.pt2\""},
      {[](nlohmann::json& j) { j["whole_model"]["cond"].erase("default"); }, "whole_model.cond.default: missing"},
      {[](nlohmann::json& j) { j["reference"] = "../reference.pt"; }, "reference: not \"reference.pt\""},
      {[](nlohmann::json& j) { j["reads"] = "/home/u/helper.py"; }, "reads: not a list of at most 4096 files"},
      {[](nlohmann::json& j) { j["reads"][0]["path"] = "helper.py"; }, "reads[0].path: not an absolute path"},
      {[](nlohmann::json& j) { j["reads"][0].erase("path"); }, "reads[0].path: missing"},
  };
  for (const auto& [change, said] : cases) {
    const std::string error = with(change);
    EXPECT_NE(error.find("model file F: manifest.json: " + said), std::string::npos) << error << "\nwant: " << said;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  for (const std::string text : {"", "[]", "{", "null", "\"manifest\""})
    EXPECT_THROW(parse_manifest(text, "F"), Error) << text;
}

TEST(ModelFileManifest, ReadsOnlyAPlainFileOfAtMostOneMebibyte) {
  const fs::path dir = fs::path(testing::TempDir()) / "condbench_manifest_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const std::string& text) { std::ofstream(dir / "real.json", std::ios::binary) << text; };
  auto error = [&]() -> std::string {
    try {
      read_manifest(dir.string());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error().find("no manifest.json"), std::string::npos);
  write(good_manifest().dump());
  fs::create_symlink(dir / "real.json", dir / "manifest.json");  // a link could point anywhere
  EXPECT_NE(error().find("no manifest.json"), std::string::npos);
  fs::remove(dir / "manifest.json");
  fs::rename(dir / "real.json", dir / "manifest.json");
  EXPECT_EQ(error(), "");
  EXPECT_EQ(read_manifest(dir.string()).file, "mlp.py");
  std::ofstream(dir / "manifest.json", std::ios::binary) << std::string((1 << 20) + 1, ' ');
  EXPECT_NE(error().find("manifest.json: unreadable or over 1 MiB"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace condbench
