#include "charts.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "condbench/output_file.h"

namespace condbench::report {

namespace fs = std::filesystem;

namespace {

// Runs gnuplot on `script` inside `work` (no shell: the command line holds nothing to interpret),
// its output in `log`. Returns whether it succeeded. A SIGINT/SIGTERM while it runs stops it and
// throws Interrupted, so the report is abandoned rather than finished without its charts.
bool run_gnuplot(const std::string& gnuplot, const fs::path& work, const std::string& script, const std::string& log) {
  const pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) {
    if (::chdir(work.c_str()) != 0) ::_exit(127);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || in < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execl(gnuplot.c_str(), "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return false;
    if (const int signal = interrupted()) {
      ::kill(child, SIGTERM);
      ::waitpid(child, &status, 0);
      throw Interrupted(signal);
    }
  }
  throw_if_interrupted();  // the signal reached gnuplot too and ended it
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir) / "gnuplot";
    if (!dir.empty() && fs::exists(candidate)) return candidate.string();
  }
  return "";
}

// No quotes, spaces, '#', '@', '$', backquotes or escapes: the rest becomes '_'. Labels go only into
// data files, which gnuplot reads as data; the scripts hold nothing taken from a result file.
std::string gnuplot_label(const std::string& text) {
  std::string out;
  for (char c : text)
    out += std::isalnum(static_cast<unsigned char>(c)) || std::string_view("._:/+-").find(c) != std::string_view::npos
               ? c
               : '_';
  return out.empty() ? "_" : out.substr(0, 60);
}

void Charts::draw(Document& doc, const std::string& id, const std::string& data, const std::string& settings,
                  const std::string& plot, const std::string& caption, const std::string& size) {
  if (!enabled()) return;
  if (drawn + failed >= kMaxCharts) {
    ++not_drawn;
    return;
  }
  write_text(work / (id + ".dat"), data);
  write_text(work / (id + ".gp"), "set terminal svg size " + size +
                                      " noenhanced font 'sans,13' background rgb 'white'\n"
                                      "set output '" +
                                      id +
                                      ".svg'\nset datafile missing 'NaN'\n"
                                      "set key outside right top\nset grid ytics\n" +
                                      settings + plot + "\n");
  const fs::path svg = work / (id + ".svg");
  if (!run_gnuplot(gnuplot, work, id + ".gp", id + ".log") || !fs::exists(svg)) {
    ++failed;
    doc.paragraph("(A chart is missing here: gnuplot could not draw \"" + caption + "\".)");
    return;
  }
  const std::string text = read_text(svg);
  write_text(dir / (id + ".svg"), text);
  doc.chart("charts/" + id + ".svg", text, caption);
  ++drawn;
}

}  // namespace condbench::report
