#pragma once
// --model-file=FILE.py in condbench and condbench-infer: the Python file compiled into the folder
// they read (condbench/model_file.h) by python/condbench/model_file.py compile, as scripts/run does.
// Cached: a file compiled before with the same weights, device and torch is found by the digest of
// their bytes, neither compiled nor run again. Otherwise the file is code: loading it runs it, with
// the user's rights (docs/your-model.md).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "condbench/config.h"
#include "condbench/strategy.h"

namespace condbench {

// The device a model file is compiled for in a run on `devices`: CUDA when they name it and a GPU
// is here, else the CPU (one device's packages a run).
Device model_file_device(const std::vector<Device>& devices);

// The limit on a compile, --compile-timeout's default (seconds): a first compile takes a minute or
// two on a 2-core machine, three on a lent H200's CPU.
inline constexpr int kDefaultCompileTimeout = 1800;

// --compile-timeout's value (whole seconds, 1 to 86400), or the default when it is not given.
int compile_timeout(const std::map<std::string, std::string>& flags);

// The folder of the model file `given`: `given` itself, unless it names a .py file, which is
// compiled for `device` (with `weights`, a state_dict, when not empty). Throws condbench::Error,
// one line: model_file.py's own when it refuses the file (it names the file and the part), or the
// limit when the compile outlasts `timeout_s`. The compile runs in a process group of its own,
// ended whole at the limit or when SIGINT, SIGTERM or SIGHUP reaches this process (which then dies
// of that signal); it says it is compiling, and every 30 s how long it has, on stderr.
// `max_row_values`: the largest input or state row the caller can run (condbench's pool allows less
// than a folder may hold), given to model_file.py with the stages a folder may hold, which it
// checks before it compiles anything.
std::string model_file_folder(const std::string& given, const std::string& weights, Device device,
                              int64_t max_row_values, int timeout_s = kDefaultCompileTimeout);

// --model-file, --model-weights and --compile-timeout as condbench and condbench-infer read them
// (`flags` by name, cli::take_flags): the last two only beside the first (one line each, alone);
// the file compiled for what `devices` run (model_file_device), or the folder read, within
// `max_row_values`. nullopt when --model-file is not given.
struct ModelFileFlags {
  std::string given, weights;      // as given: inputs no output may overwrite (check_outputs)
  std::string folder;              // the compiled folder read
  ModelConfig config;              // its model
  std::vector<std::string> reads;  // the files its module read while it loaded: inputs too
  // "--model-file: mlp.py: the folder ~/.cache/condbench/aoti/models/1a2b-cpu, compiled 3 min ago":
  // which folder the run uses and how old it is, said on stderr once the flags are all good
  // (a cached folder is used without a word otherwise).
  std::string used;
};
std::optional<ModelFileFlags> read_model_file_flags(const std::map<std::string, std::string>& flags,
                                                    const std::vector<Device>& devices, int64_t max_row_values);

}  // namespace condbench
