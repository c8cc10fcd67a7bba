#include "checkpoint_reporter.h"

#include <fstream>

#include "condbench/error.h"
#include "condbench/output_file.h"

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
  install_signal_cleanup();  // a Ctrl-C while the temporary exists removes it
  PendingFile file(path_);
  {
    std::ofstream out(file.temp_path(), std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) fail("--checkpoint-out: cannot write '" + file.temp_path() + "'");
  }
  try {
    file.commit();
  } catch (const Error& e) {
    fail(std::string("--checkpoint-out: ") + e.what());
  }
}

}  // namespace condbench
