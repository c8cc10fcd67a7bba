#pragma once
// The report's document writer: one document written once, rendered both as Markdown (report.md,
// the --table and --compare output) and as a self-contained HTML page (report.html). Every text
// from a result file goes through it escaped, so a crafted name can neither end a table row nor
// inject markup.
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace condbench::report {

// A table written once and rendered both as Markdown and as HTML.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Leave out the columns with no value in any row ("-" throughout: gpu_us on a CPU run).
  bool drop_empty_columns = true;
  // Where given (the shape of `rows`, or shorter), what a cell says at length: the HTML shows it when
  // the reader points at the cell (a title); Markdown has no such place and leaves it out.
  std::vector<std::vector<std::string>> notes = {};
};

class Document {
 public:
  void heading(int level, const std::string& text);
  void paragraph(const std::string& text);
  void bullets(const std::vector<std::string>& items);
  // Numbers are right-aligned, text left-aligned.
  void table(const Table& t);
  // What comes between these two sits side by side in the HTML (a table and its chart); Markdown
  // has no columns and shows them one after the other.
  void begin_side_by_side() { html_ << "<div class=\"pair\">\n"; }
  void end_side_by_side() { html_ << "</div>\n"; }
  // A chart: `file` is where Markdown links it, `svg` what HTML inlines.
  void chart(const std::string& file, const std::string& svg, const std::string& caption);

  std::string markdown() const { return md_.str(); }
  std::string html(const std::string& title) const;

 private:
  std::ostringstream md_, html_;
};

// Text from a result file as Markdown that shows it literally, and as HTML.
std::string escape_markdown(const std::string& text);
std::string escape_html(const std::string& text);

// A figure as the report prints it: `digits` significant figures below 1000, whole numbers above
// (1523, not 1.52e+03); "-" for what is not finite.
std::string number(double value, int digits = 3);

// Writes `text` to `path` whole, or throws condbench::Error naming it.
void write_text(const std::filesystem::path& path, const std::string& text);
std::string read_text(const std::filesystem::path& path);

}  // namespace condbench::report
