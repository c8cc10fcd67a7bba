#include "checkpoint_reporter.h"

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "condbench/error.h"

namespace condbench {

CheckpointReporter::CheckpointReporter(benchmark::BenchmarkReporter& display, std::string path)
    : display_(display), path_(std::move(path)) {
  json_.SetOutputStream(&document_);
  json_.SetErrorStream(&errors_);
}

bool CheckpointReporter::ReportContext(const Context& context) {
  const bool json_ok = json_.ReportContext(context);
  checkpoint(false);
  return display_.ReportContext(context) && json_ok;
}

void CheckpointReporter::ReportRuns(const std::vector<Run>& runs) {
  json_.ReportRuns(runs);
  checkpoint(false);
  display_.ReportRuns(runs);
}

void CheckpointReporter::Finalize() {
  json_.Finalize();
  checkpoint(true);
  display_.Finalize();
}

void CheckpointReporter::checkpoint(bool finished) {
  // Google Benchmark's JSON reporter closes the benchmarks array and the document in Finalize();
  // until then the same closing makes what it has written so far a complete document.
  const std::string text = document_.str() + (finished ? "" : "\n  ]\n}\n");
  const std::string temp = path_ + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::remove(temp.c_str());
      fail("--checkpoint-out: cannot write '" + temp + "'");
    }
  }
  if (std::rename(temp.c_str(), path_.c_str()) != 0) {
    std::remove(temp.c_str());
    fail("--checkpoint-out: cannot rename the checkpoint into '" + path_ + "'");
  }
}

}  // namespace condbench
