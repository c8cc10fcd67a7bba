#include "document.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string_view>

#include "condbench/error.h"

namespace condbench::report {

namespace {

// A cell that reads as a figure: "1.03", "1.03 unstable", "≥61×", "[0.32–0.43]", "31.5%".
bool number_like(const std::string& cell) {
  size_t i = 0;
  for (const std::string_view lead : {"\\[", "[", "≥", "≤", "~", "-", "+"})
    if (cell.compare(i, lead.size(), lead) == 0) i += lead.size();
  return i < cell.size() && (std::isdigit(static_cast<unsigned char>(cell[i])) || cell[i] == '.');
}

}  // namespace

std::string escape_html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // a control character is no text (HTML forbids most); a line break or a tab reads as a space
        if ((static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) || c == '\n' || c == '\t') out += c;
    }
  }
  return out;
}

// Text from a result file (names, context values, error messages) as Markdown that shows it
// literally: every character Markdown or inline HTML could act on is backslash-escaped, and line
// breaks become spaces, so a name can neither end a table row nor start a block.
std::string escape_markdown(const std::string& text) {
  auto word = [&](size_t i) { return i < text.size() && std::isalnum(static_cast<unsigned char>(text[i])); };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      // dropped: no control character belongs in a report
    } else if (std::string_view("\\`*[]<>|#!&~").find(c) != std::string_view::npos) {
      out += '\\';
      out += c;
    } else if (c == '_' && !(i > 0 && word(i - 1) && word(i + 1))) {
      out += "\\_";  // an underscore inside a word (torch/eager_host) is literal already
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double value, int digits) {
  if (!std::isfinite(value)) return "-";
  char text[64];
  if (std::abs(value) >= 1000)
    std::snprintf(text, sizeof text, "%.0f", value);  // 1523, not 1.52e+03
  else
    std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) fail("cannot write " + path.string());
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void Document::heading(int level, const std::string& text) {
  md_ << std::string(level, '#') << " " << escape_markdown(text) << "\n\n";
  html_ << "<h" << level << ">" << escape_html(text) << "</h" << level << ">\n";
}

void Document::paragraph(const std::string& text) {
  md_ << escape_markdown(text) << "\n\n";
  html_ << "<p>" << escape_html(text) << "</p>\n";
}

void Document::bullets(const std::vector<std::string>& items) {
  html_ << "<ul>\n";
  for (const std::string& item : items) {
    md_ << "- " << escape_markdown(item) << "\n";
    html_ << "<li>" << escape_html(item) << "</li>\n";
  }
  md_ << "\n";
  html_ << "</ul>\n";
}

void Document::table(const Table& t) {
  std::vector<size_t> shown;
  std::vector<bool> text;
  for (size_t c = 0; c < t.header.size(); ++c) {
    bool any = t.rows.empty(), numeric = true;
    for (const auto& row : t.rows) {
      if (c >= row.size() || row[c] == "-" || row[c].empty()) continue;
      any = true;
      numeric = numeric && number_like(row[c]);
    }
    if (!any && t.drop_empty_columns) continue;
    shown.push_back(c);
    text.push_back(c == 0 || !numeric);
  }
  md_ << "|";
  for (const size_t c : shown) md_ << " " << escape_markdown(t.header[c]) << " |";
  md_ << "\n|";
  for (size_t i = 0; i < shown.size(); ++i) md_ << (text[i] ? ":---|" : "---:|");
  md_ << "\n";
  html_ << "<table>\n<tr>";
  for (size_t i = 0; i < shown.size(); ++i)
    html_ << (text[i] ? "<th class=\"t\">" : "<th>") << escape_html(t.header[shown[i]]) << "</th>";
  html_ << "</tr>\n";
  for (const auto& row : t.rows) {
    md_ << "|";
    html_ << "<tr>";
    const size_t r = static_cast<size_t>(&row - t.rows.data());
    for (size_t i = 0; i < shown.size(); ++i) {
      const std::string& cell = shown[i] < row.size() ? row[shown[i]] : std::string();
      md_ << " " << escape_markdown(cell) << " |";
      const std::string* note = r < t.notes.size() && shown[i] < t.notes[r].size() && !t.notes[r][shown[i]].empty()
                                    ? &t.notes[r][shown[i]]
                                    : nullptr;
      html_ << "<td" << (text[i] ? " class=\"t\"" : "") << (note ? " title=\"" + escape_html(*note) + "\"" : "") << ">"
            << escape_html(cell) << "</td>";
    }
    md_ << "\n";
    html_ << "</tr>\n";
  }
  md_ << "\n";
  html_ << "</table>\n";
}

void Document::chart(const std::string& file, const std::string& svg, const std::string& caption) {
  md_ << "![" << escape_markdown(caption) << "](" << file << ")\n\n";
  const size_t start = svg.find("<svg");
  html_ << "<figure class=\"chart\">" << (start == std::string::npos ? svg : svg.substr(start)) << "<figcaption>"
        << escape_html(caption) << "</figcaption></figure>\n";
}

std::string Document::html(const std::string& title) const {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape_html(title) +
         "</title>\n<style>body{font-family:sans-serif;max-width:1340px;margin:1em auto;padding:0 1em;color:#222}"
         "h1,h2,h3,h4{margin:0.6em 0 0.3em}p{margin:0.4em 0}"
         "table{border-collapse:collapse;margin:0.5em 0;font-size:14px}td,th{border:1px solid #ccc;padding:2px 8px;"
         "text-align:right}td.t,th.t{text-align:left}th{background:#f3f3f3}td[title]{cursor:help}"
         "figure.chart svg{max-width:100%;height:auto}figcaption{color:#666;font-size:90%}div.pair{display:flex;"
         "flex-wrap:wrap;gap:0 1.5em;align-items:flex-start}div.pair figure{margin:0.5em 0;flex:1 1 400px;"
         "max-width:560px}"
         "</style></head><body>\n" +
         html_.str() + "</body></html>\n";
}

}  // namespace condbench::report
