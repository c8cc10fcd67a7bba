// A compiled model file's manifest.json, read and checked: see condbench/model_file_manifest.h.
#include "condbench/model_file_manifest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "condbench/error.h"

namespace condbench {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxManifestBytes = 1u << 20;  // a manifest of 256 stages is ~100 KB

// The package file names model_file.py writes: stages[2] -> stage2.pt2, exits[2] -> exit2.pt2.
std::string package_of(const std::string& part) {
  if (part == "final" || part == "confidence") return part + ".pt2";
  const bool stage = part.rfind("stages[", 0) == 0;
  return (stage ? "stage" : "exit") + part.substr(part.find('[') + 1, part.size() - part.find('[') - 2) + ".pt2";
}

// The manifest's fields, each checked, each error naming the field.
class ManifestReader {
 public:
  explicit ManifestReader(std::string folder) : folder_(std::move(folder)) {}

  [[noreturn]] void bad(const std::string& field, const std::string& why) const {
    fail("model file " + folder_ + ": manifest.json: " + field + ": " + why);
  }
  const nlohmann::json& field(const nlohmann::json& in, const std::string& key, const std::string& where) const {
    const auto it = in.find(key);
    if (it == in.end()) bad(where + key, "missing");
    return *it;
  }
  std::string text(const nlohmann::json& in, const std::string& key, const std::string& where = "") const {
    const nlohmann::json& v = field(in, key, where);
    if (!v.is_string()) bad(where + key, "not a string");
    return v.get<std::string>();
  }
  int64_t integer(const nlohmann::json& in, const std::string& key, int64_t lo, int64_t hi,
                  const std::string& where = "") const {
    const nlohmann::json& v = field(in, key, where);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      bad(where + key, "not an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
    return v.get<int64_t>();
  }
  double amount(const nlohmann::json& in, const std::string& key, const std::string& where) const {
    const nlohmann::json& v = field(in, key, where);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 1e18)
      bad(where + key, "not a count in 0..1e18");
    return v.get<double>();
  }
  // ["rows", d1, d2, ...] -> {d1, d2, ...}
  std::vector<int64_t> row(const nlohmann::json& in, const std::string& key, const std::string& where) const {
    const nlohmann::json& v = field(in, key, where);
    if (!v.is_array() || v.empty() || v.size() > 8 || v[0] != "rows")
      bad(where + key, "not a shape [\"rows\", ...] of at most 8 dimensions");
    std::vector<int64_t> shape;
    int64_t elements = 1;
    for (size_t i = 1; i < v.size(); ++i) {
      if (!v[i].is_number_integer() || v[i].get<int64_t>() < 1 || v[i].get<int64_t>() > kModelFileMaxRowValues)
        bad(where + key, "dimension " + std::to_string(i) + " is not in 1.." + std::to_string(kModelFileMaxRowValues));
      shape.push_back(v[i].get<int64_t>());
      elements *= shape.back();
      if (elements > kModelFileMaxRowValues)
        bad(where + key, "more than " + std::to_string(kModelFileMaxRowValues) + " per row");
    }
    return shape;
  }

 private:
  std::string folder_;
};

// "input": {"dtype": "float32" | "int64", "inputs": [{"row": ["rows", ...], "below": N | null}, ...],
// "pool": "pool.pt" | null}: what example_input() gives, packed into stages[0]'s input row.
void read_input(const ManifestReader& m, const nlohmann::json& json, ModelFileManifest& manifest) {
  const nlohmann::json& input = m.field(json, "input", "");
  if (!input.is_object()) m.bad("input", "not an object");
  const std::string dtype = m.text(input, "dtype", "input.");
  if (dtype != "float32" && dtype != "int64") m.bad("input.dtype", "'" + printable(dtype) + "', not float32 or int64");
  manifest.integer_input = dtype == "int64";
  const nlohmann::json& inputs = m.field(input, "inputs", "input.");
  if (!inputs.is_array() || inputs.empty() || inputs.size() > static_cast<size_t>(kModelFileMaxInputs))
    m.bad("input.inputs", "not a list of 1 to " + std::to_string(kModelFileMaxInputs) + " inputs");
  int64_t values = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string where = "input.inputs[" + std::to_string(i) + "].";
    if (!inputs[i].is_object()) m.bad(where, "not an object");
    ManifestInput one;
    one.row = m.row(inputs[i], "row", where);
    int64_t elements = 1;
    for (const int64_t d : one.row) elements *= d;
    values += elements;
    const auto below = inputs[i].find("below");
    if (manifest.integer_input)
      one.below = m.integer(inputs[i], "below", 1, int64_t{1} << 40, where);
    else if (below != inputs[i].end() && !below->is_null())
      m.bad(where + "below", "a limit on a float input");
    manifest.inputs.push_back(std::move(one));
  }
  const std::vector<int64_t>& packed = manifest.parts.front().input_row;
  const bool whole =
      inputs.size() == 1 ? manifest.inputs.front().row == packed : packed == std::vector<int64_t>{values};
  if (!whole)
    m.bad("input.inputs",
          "do not pack into stages[0]'s input " + row_text(packed) + " (" + std::to_string(values) + " values a row)");
  const auto pool = input.find("pool");
  if (manifest.integer_input) {
    manifest.pool = m.text(input, "pool", "input.");
    if (manifest.pool != "pool.pt") m.bad("input.pool", "not \"pool.pt\"");
  } else if (pool != input.end() && !pool->is_null()) {
    m.bad("input.pool", "a pool for a float input (condbench draws its own)");
  }
}

}  // namespace

std::string row_text(const std::vector<int64_t>& row) {
  std::string text = "[rows";
  for (const int64_t d : row) text += ", " + std::to_string(d);
  return text + "]";
}

bool plain_file(const std::string& path) {
  std::error_code ec;
  return fs::symlink_status(path, ec).type() == fs::file_type::regular;
}

ModelFileManifest parse_manifest(std::string_view text, const std::string& folder) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) fail("model file " + folder + ": manifest.json: not a JSON object");
  const ManifestReader m(folder);
  ModelFileManifest manifest;
  if (m.integer(json, "format", 0, 1 << 20) != kModelFileFormat)
    m.bad("format", "made by another condbench (format " + json["format"].dump() + ", this one reads " +
                        std::to_string(kModelFileFormat) + "): compile the model file again");
  manifest.torch = m.text(json, "torch");
  manifest.device = m.text(json, "device");
  if (manifest.device != "cpu" && manifest.device != "cuda")
    m.bad("device", "'" + printable(manifest.device) + "', not \"cpu\" or \"cuda\"");
  manifest.file = m.text(json, "file");
  if (manifest.file.empty() || manifest.file.size() > 64 ||
      manifest.file.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789._-") != std::string::npos)
    m.bad("file", "'" + printable(manifest.file) + "' is not a file name of letters, digits, '.', '_' and '-'");
  manifest.digest = m.text(json, "digest");
  if (manifest.digest.size() != 16 || manifest.digest.find_first_not_of("0123456789abcdef") != std::string::npos)
    m.bad("digest", "not 16 hexadecimal digits");
  const int stages = static_cast<int>(m.integer(json, "stages", 1, kModelFileMaxStages));
  manifest.classes = static_cast<int>(m.integer(json, "classes", 1, kModelFileMaxClasses));
  const std::vector<int64_t> logits_row{manifest.classes};

  const nlohmann::json& parts = m.field(json, "parts", "");
  if (!parts.is_array() || parts.size() != static_cast<size_t>(2 * stages + 1))
    m.bad("parts", "not a list of " + std::to_string(2 * stages + 1) + " parts (a stage and an exit each, the final)");
  std::vector<int64_t> state;  // the row shape the stage before gives; parts read it (empty: the input)
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string where = "parts[" + std::to_string(i) + "].";
    if (!parts[i].is_object()) m.bad(where, "not an object");
    const int k = static_cast<int>(i / 2);
    const bool stage = i % 2 == 0 && static_cast<int>(i) < 2 * stages;
    const std::string name = i + 1 == parts.size() ? "final" : (stage ? "stages[" : "exits[") + std::to_string(k) + "]";
    ModelFilePart part;
    part.name = m.text(parts[i], "name", where);
    if (part.name != name) m.bad(where + "name", "'" + printable(part.name) + "', expected '" + name + "'");
    part.input_row = m.row(parts[i], "input", where);
    part.output_row = m.row(parts[i], "output", where);
    part.flops_per_row = m.amount(parts[i], "flops_per_row", where);
    part.bytes = m.amount(parts[i], "bytes", where);
    part.package = m.text(parts[i], "package", where);
    if (part.package != package_of(name))
      m.bad(where + "package", "'" + printable(part.package) + "', expected '" + package_of(name) + "'");
    if (i > 0 && part.input_row != state)
      m.bad(where + "input",
            name + " takes " + row_text(part.input_row) + " where the stage before gives " + row_text(state));
    if (!stage && part.output_row != logits_row)
      m.bad(where + "output", name + " gives " + row_text(part.output_row) + ", not logits [rows, " +
                                  std::to_string(manifest.classes) + "]");
    if (stage) state = part.output_row;
    manifest.parts.push_back(std::move(part));
  }
  read_input(m, json, manifest);
  if (const auto it = json.find("confidence_package"); it != json.end() && !it->is_null()) {
    manifest.confidence_package = m.text(json, "confidence_package");
    if (manifest.confidence_package != "confidence.pt2") m.bad("confidence_package", "not \"confidence.pt2\" or null");
  }

  const nlohmann::json& whole = m.field(json, "whole_model", "");
  if (!whole.is_object()) m.bad("whole_model", "not an object");
  for (const char* name : {"cond", "masked"}) {
    const std::string module = name;
    const std::string where = "whole_model." + module;
    const nlohmann::json& entry = m.field(whole, module, "whole_model.");
    if (!entry.is_object()) m.bad(where, "not an object");
    ManifestWholeModel& w = manifest.whole_model[module];
    if (entry.contains("package")) {
      w.package = m.text(entry, "package", where + ".");
      if (w.package != module + ".pt2") m.bad(where + ".package", "not \"" + module + ".pt2\"");
      if (entry.contains("workaround")) {  // compiled again with other options: the default compile was wrong
        w.workaround = printable(m.text(entry, "workaround", where + "."), 200);
        w.default_refused = printable(m.text(entry, "default", where + "."), 300);
      }
    } else {
      w.unavailable = printable(m.text(entry, "unavailable", where + "."), 300);
    }
  }
  manifest.reference = m.text(json, "reference");
  if (manifest.reference != "reference.pt") m.bad("reference", "not \"reference.pt\"");
  // Where the file and its weights were (their real paths), for the check that a compile answered the
  // folder of the file it was given; a folder given whole may come from another machine.
  if (const auto it = json.find("source"); it != json.end() && it->is_string())
    manifest.source = it->get<std::string>();
  if (const auto it = json.find("weights"); it != json.end() && it->is_string())
    manifest.weights = it->get<std::string>();
  // What the module read while it loaded, for the output policy (no output may overwrite it); a
  // folder written before the list was kept has none.
  if (const auto it = json.find("reads"); it != json.end()) {
    if (!it->is_array() || it->size() > kModelFileMaxReads)
      m.bad("reads", "not a list of at most " + std::to_string(kModelFileMaxReads) + " files");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string where = "reads[" + std::to_string(i) + "].";
      if (!(*it)[i].is_object()) m.bad(where, "not an object");
      std::string path = m.text((*it)[i], "path", where);
      if (path.empty() || path.size() > 4096 || path.front() != '/' || path.find('\0') != std::string::npos)
        m.bad(where + "path", "not an absolute path");
      manifest.reads.push_back(std::move(path));
    }
  }
  return manifest;
}

ModelFileManifest read_manifest(const std::string& folder) {
  const fs::path path = fs::path(folder) / "manifest.json";
  std::error_code ec;
  if (!plain_file(path.string()))
    fail("model file " + folder + ": no manifest.json (a folder python -m condbench.model_file compile made?)");
  const auto size = fs::file_size(path, ec);
  if (ec || size > kMaxManifestBytes) fail("model file " + folder + ": manifest.json: unreadable or over 1 MiB");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) fail("model file " + folder + ": manifest.json: unreadable");
  return parse_manifest(text.str(), folder);
}

std::vector<MemoryTerm> ModelFileManifest::memory_terms() const {
  const auto values = [](const std::vector<int64_t>& row) {
    double n = 1;
    for (const int64_t d : row) n *= static_cast<double>(d);
    return n;
  };
  double widest = 0, weights = 0;  // the largest row a part takes or gives; the parts' weights
  for (const ModelFilePart& part : parts) {
    widest = std::max({widest, values(part.input_row), values(part.output_row)});
    weights += part.bytes / kBytesPerFloat;
  }
  const double per_value = integer_input ? 2 : 1;  // floats' worth of bytes of one input value
  return {{"the parts' weights", {}, weights},
          {"the input rows", {"rows"}, 2 * per_value * values(parts.front().input_row)},
          {"the activations", {"rows"}, 4 * widest},
          {"every exit's logits", {"rows", "num_classes", "blocks"}, 3}};
}

}  // namespace condbench
