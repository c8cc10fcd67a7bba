// The output policy (condbench/output_file.h) as a property: random combinations of outputs and inputs
// over paths whose nature is known by construction — a file, a hard link to it, the same file by
// another path, a missing file, a folder, a file inside another folder, a FIFO, a symbolic link, a path
// whose folder does not exist — are refused exactly when a rule of the policy says so, and a check
// never changes anything.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "condbench/error.h"
#include "condbench/output_file.h"

namespace condbench {
namespace {

namespace fs = std::filesystem;

// A path of the scratch folder, and what it is: the file it names (paths naming one file share an
// id; 0 for none), whether the policy refuses it as an output file or folder outright.
struct Place {
  std::string name;
  int file = 0;
  bool special = false;  // a FIFO or a symbolic link: never an output
  bool folder = false;   // an existing folder
  bool regular = false;  // an existing regular file
  bool no_parent = false;
  int inside = 0;  // the folder (by id) it lies in, other than the scratch folder
  int target = 0;  // a symbolic link: the file it points to (as an input, it is that file)
};

class OutputPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/condbench-output-policy-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    std::ofstream(root_ / "file") << "precious";
    fs::create_hard_link(root_ / "file", root_ / "hard");
    fs::create_directory(root_ / "folder");
    fs::create_directory(root_ / "sub");
    std::ofstream(root_ / "sub" / "inner") << "precious too";
    ASSERT_EQ(::mkfifo((root_ / "fifo").c_str(), 0600), 0);
    fs::create_symlink(root_ / "file", root_ / "link");
  }
  void TearDown() override { fs::remove_all(root_); }

  std::vector<Place> places() const {
    return {{"file", 1, false, false, true},
            {"hard", 1, false, false, true},
            {"./file", 1, false, false, true},
            {"sub/../file", 1, false, false, true},
            {"missing", 2},
            {"folder", 3, false, true},
            {"sub", 4, false, true},
            {"sub/inner", 5, false, false, true, false, 4},
            {"fifo", 6, true},
            {"link", 7, true, false, false, false, 0, 1},
            {"nowhere/out.json", 8, false, false, false, true}};
  }

  // What the scratch folder holds, for "a check changes nothing".
  std::string listing() const {
    std::string text;
    for (const auto& entry : fs::recursive_directory_iterator(root_)) {
      text += entry.path().string() + " " + std::to_string(static_cast<int>(entry.symlink_status().type()));
      if (entry.is_regular_file() && !entry.is_symlink()) {
        std::ifstream in(entry.path());
        text += " " + std::string(std::istreambuf_iterator<char>(in), {});
      }
      text += "\n";
    }
    return text;
  }

  fs::path root_;
};

TEST_F(OutputPolicy, RefusedExactlyWhenARuleSaysSo) {
  const std::vector<Place> all = places();
  std::mt19937 rng(30);
  const std::string before = listing();
  int refused = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<OutputPath> outputs;
    std::vector<const Place*> chosen;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) {
      const Place& p = all[rng() % all.size()];
      const bool folder = rng() % 4 == 0;
      outputs.push_back({"--out" + std::to_string(i), (root_ / p.name).string(), folder});
      chosen.push_back(&p);
    }
    std::vector<InputPath> inputs;
    const Place* input = rng() % 2 ? &all[rng() % all.size()] : nullptr;
    if (input) inputs.push_back({"--weights", (root_ / input->name).string()});

    bool expected = false;
    for (int i = 0; i < n; ++i) {
      const Place& p = *chosen[i];
      const bool as_folder = outputs[i].folder;
      expected |= p.special || p.no_parent || (as_folder ? p.regular : p.folder);
      for (int j = 0; j < i; ++j) expected |= chosen[j]->file == p.file;
      if (input) {
        const int read = input->target ? input->target : input->file;  // what reading the input opens
        expected |= read == p.file || (as_folder && input->inside == p.file);
      }
    }
    bool threw = false;
    try {
      check_outputs(outputs, inputs);
    } catch (const Error& e) {
      threw = true;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);  // one line
    }
    std::string what;
    for (const OutputPath& o : outputs) what += o.path + (o.folder ? "/ " : " ");
    EXPECT_EQ(threw, expected) << what << (input ? "input " + input->name : "");
    refused += threw;
  }
  EXPECT_EQ(listing(), before);  // a check never changes anything
  EXPECT_GT(refused, 300);       // both outcomes were exercised
  EXPECT_LT(refused, 2900);
}

TEST_F(OutputPolicy, EachRefusalNamesTheFlagThePathAndTheRule) {
  const auto message = [&](std::vector<OutputPath> outputs, std::vector<InputPath> inputs = {}) {
    try {
      check_outputs(outputs, inputs);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string r = root_.string();
  EXPECT_EQ(message({{"--trace", r + "/fifo"}}),
            "--trace: '" + r + "/fifo' is a FIFO; condbench writes only regular files and never replaces a FIFO");
  EXPECT_EQ(message({{"--benchmark_out", r + "/link"}}),
            "--benchmark_out: '" + r +
                "/link' is a symbolic link; condbench writes only regular files and never "
                "replaces a symbolic link");
  EXPECT_EQ(message({{"--benchmark_out", r + "/file"}, {"--trace", r + "/hard"}}),
            "--benchmark_out and --trace name the same file '" + r + "/hard'; give each its own");
  EXPECT_EQ(message({{"--checkpoint-out", r + "/hard"}}, {{"--weights", r + "/file"}}),
            "--checkpoint-out: '" + r + "/hard' is the input of --weights; an output never overwrites an input");
  EXPECT_EQ(
      message({{"--export-workload", r + "/sub", true}}, {{"--weights", r + "/sub/inner"}}),
      "--export-workload: '" + r + "/sub' holds the input of --weights ('" + r + "/sub/inner'); choose another folder");
  EXPECT_EQ(message({{"--checkpoint-out", r + "/nowhere/out.json"}}),
            "--checkpoint-out: '" + r + "/nowhere/out.json': its folder '" + r + "/nowhere' does not exist");
  EXPECT_EQ(message({{"--checkpoint-out", r + "/file/out.json"}}),
            "--checkpoint-out: '" + r + "/file/out.json': '" + r + "/file' is not a folder");
  EXPECT_EQ(message({{"--checkpoint-out", r + "/folder"}}),
            "--checkpoint-out: '" + r + "/folder' is a folder, not a regular file; name a file in it");
  EXPECT_EQ(message({{"--checkpoint-out", ""}}), "--checkpoint-out: needs a file name");
  EXPECT_EQ(message({{"--benchmark_out", r + "/missing"}, {"--trace", r + "/folder/t.json"}}), "accepted");
}

TEST_F(OutputPolicy, ACommitNeverReplacesWhatBecameSomethingElse) {
  install_signal_cleanup();
  const std::string target = (root_ / "out.json").string();
  std::string temp;
  {
    PendingFile pending(target);
    temp = pending.temp_path();
    std::ofstream(temp) << "result";
    ASSERT_EQ(::mkfifo(target.c_str(), 0600), 0);  // appeared during the run
    try {
      pending.commit();
      FAIL() << "a FIFO was replaced";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "'" + target +
                                           "' has become a FIFO during the run; it is never replaced; "
                                           "it is kept in '" +
                                           temp + "'");
    }
  }
  struct stat st {};
  ASSERT_EQ(::lstat(target.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  std::ifstream kept(temp);  // the finished output survives, where the message says
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "result");
  // Two writers of one process get temporaries of their own.
  PendingFile a((root_ / "a").string()), b((root_ / "a").string());
  EXPECT_NE(a.temp_path(), b.temp_path());
}

}  // namespace
}  // namespace condbench
