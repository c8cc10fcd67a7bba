#pragma once
// A compiled model file's manifest.json (docs/your-model.md has its keys, who writes and who reads
// each), read and checked into a plain struct: no LibTorch, no file opened but the manifest. The
// folder comes from the user's machine: every key is checked, and anything wrong is one line
// naming the folder and the key. What the folder's other files hold (the packages, reference.pt)
// is ModelFileFamily's to check.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "condbench/memory_budget.h"

namespace condbench {

// What a compiled folder may hold, as condbench reads it: one input row's values (a 3 x 1024 x 1024
// image fits) and the stages. model_file.py compile receives them as flags from condbench and
// condbench-infer (model_file_folder), so it refuses a model before compiling it, not after.
constexpr int64_t kModelFileMaxRowValues = 1 << 22;
constexpr int kModelFileMaxStages = 256;
constexpr int kModelFileMaxClasses = 1 << 16;  // a head's logits per row
constexpr size_t kModelFileMaxReads = 4096;    // files the module read while it loaded ("reads")
// The layout a manifest must say it has (FORMAT in python/condbench/model_source.py).
constexpr int kModelFileFormat = 7;
// At most this many inputs (example_input()'s tuple: token ids, an attention mask, ...).
constexpr int kModelFileMaxInputs = 8;

// One stage, exit head or the final head of a model file.
struct ModelFilePart {
  std::string name;                 // "stages[0]", "exits[0]", ..., "final"
  std::vector<int64_t> input_row;   // one row's shape going in
  std::vector<int64_t> output_row;  // ... and coming out; a head's is {classes}
  double flops_per_row = 0;
  double bytes = 0;
  std::string package;  // a file name inside the folder
};

// The aoti engine's whole-model module ("cond", "masked") as the manifest gives it: its package, or
// why there is none; with the workaround's options and why the default compile was refused, where
// it was compiled a second time.
struct ManifestWholeModel {
  std::string package;  // "cond.pt2", or "" when unavailable
  std::string unavailable;
  std::string workaround;
  std::string default_refused;
};

// One of the tensors example_input() gives (its "input"): the rows of every one travel packed into
// one row, their values one after another in example_input()'s order, so every strategy compacts and
// copies one tensor; the compiled first stage unpacks them.
struct ManifestInput {
  std::vector<int64_t> row;  // one row's shape
  int64_t below = 0;         // an integer input: every value in [0, below); 0 for a float input
};

struct ModelFileManifest {
  std::string torch;   // the torch version that compiled the packages, "2.15.0"
  std::string device;  // "cpu" or "cuda"
  std::string file;    // the model file's name: letters, digits, '.', '_', '-'
  std::string digest;  // 16 hexadecimal digits
  int classes = 0;
  bool integer_input = false;         // int64 token ids (and masks), not float32 values
  std::vector<ManifestInput> inputs;  // packed, in order, into stages[0]'s input row
  std::string pool;                   // an integer input's rows for condbench's pool: "pool.pt"; "" for float
  std::vector<ModelFilePart> parts;   // stages[0], exits[0], stages[1], ..., final
  std::string confidence_package;     // "confidence.pt2", or "" for the largest softmax probability
  std::map<std::string, ManifestWholeModel> whole_model;  // "cond" and "masked"
  std::string reference;                                  // "reference.pt"
  std::vector<std::string> reads;                         // absolute paths of the files the module read while it loaded
  std::string source, weights;  // the real paths of the file and its --weights when compiled ("" where not given)

  int stages() const { return static_cast<int>(parts.size() / 2); }
  // What a batch of its model holds beside the weights the family counts (memory_budget.h), as the
  // built-in families count it: the parts' weights, which no state_dict holds; the input rows (an
  // int64 value the bytes of two floats); a few of the widest rows live at once; every exit's logits.
  std::vector<MemoryTerm> memory_terms() const;
};

// Parses and checks `text`, the manifest of `folder` (which only names it in errors): the format,
// each key's type and range, the parts in order, each part's input the stage before's output and
// each head's output [rows, classes], every package's name. Throws condbench::Error, one line:
// "model file FOLDER: manifest.json: KEY: what is wrong".
ModelFileManifest parse_manifest(std::string_view text, const std::string& folder);

// FOLDER/manifest.json, a plain file (not a link) of at most 1 MiB, parsed by parse_manifest.
ModelFileManifest read_manifest(const std::string& folder);

// Whether `path` is a plain file, not a link: a link in a folder could point anywhere, and a
// package is native code.
bool plain_file(const std::string& path);

// A row's shape as messages write it: {3, 32, 32} -> "[rows, 3, 32, 32]".
std::string row_text(const std::vector<int64_t>& row);

}  // namespace condbench
