#include "repository_checks.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>

namespace mlsys::test {

namespace fs = std::filesystem;

namespace {

bool skipped_directory(const fs::path& relative) {
  const std::string first = relative.begin()->string();
  if (first.rfind("build", 0) == 0 || first == "out" || first == ".git") return true;
  const std::string text = relative.generic_string();
  return relative.filename() == "__pycache__" || text == "tests/fuzz/corpus" ||
         text == "tests/fuzz/regressions";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `target`, relative to `folder` (both inside root, relative to it), stays inside the root.
bool stays_inside(const fs::path& folder, const std::string& target) {
  int depth = 0;
  for (const auto& part : folder) depth += part == "." || part.empty() ? 0 : 1;
  for (const auto& part : fs::path(target)) {
    if (part == "..") {
      if (--depth < 0) return false;
    } else if (part != "." && !part.empty()) {
      ++depth;
    }
  }
  return true;
}

}  // namespace

std::string describe(const std::vector<Finding>& findings) {
  std::string text;
  for (const Finding& f : findings)
    text += "\n  " + f.file + ":" + std::to_string(f.line) + ": " + f.text + " (" + f.why + ")";
  return text;
}

std::vector<fs::path> repository_files(const fs::path& root) {
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path relative = fs::relative(it->path(), root);
    if (it->is_directory()) {
      if (skipped_directory(relative)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || it->file_size() > (4 << 20)) continue;
    files.push_back(relative);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<Finding> outside_references(const fs::path& root) {
  static const std::regex parent_path(R"((?:\.\./)+[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*)");
  static const std::regex shared_path(R"(shared/(?:spec|anchors|t10|benchmarks)\b)");
  static const std::regex absolute_work(R"((^|[^A-Za-z0-9_.])/work/)");
  static const std::regex markdown_link(R"(\]\(([^)\s]+)\))");
  std::vector<Finding> findings;
  // The checker and its fixture spell out the patterns they look for.
  const std::vector<std::string> checker{"tests/repository_checks.cpp", "tests/repository_checks.hpp",
                                         "tests/repository_test.cpp"};
  for (const fs::path& file : repository_files(root)) {
    if (std::find(checker.begin(), checker.end(), file.generic_string()) != checker.end()) continue;
    const std::string text = read_text(root / file);
    if (text.find('\0') != std::string::npos) continue;  // binary
    const bool markdown = file.extension() == ".md";
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      auto report = [&](const std::string& found, const std::string& why) {
        findings.push_back({file.generic_string(), number, found, why});
      };
      for (auto m = std::sregex_iterator(line.begin(), line.end(), parent_path); m != std::sregex_iterator();
           ++m)
        if (!stays_inside(file.parent_path(), m->str()))
          report(m->str(), "a relative path that leaves the repository");
      for (auto m = std::sregex_iterator(line.begin(), line.end(), shared_path); m != std::sregex_iterator();
           ++m)
        report(m->str(), "a path into the workplace's shared folder");
      std::smatch work;
      if (std::regex_search(line, work, absolute_work))
        report("/work/", "an absolute path of this workplace");
      if (!markdown) continue;
      for (auto m = std::sregex_iterator(line.begin(), line.end(), markdown_link);
           m != std::sregex_iterator(); ++m) {
        std::string target = (*m)[1].str();
        if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0 || target[0] == '#')
          continue;
        target = target.substr(0, target.find('#'));
        if (!stays_inside(file.parent_path(), target)) continue;  // reported above as a parent path
        if (!fs::exists(root / file.parent_path() / target))
          report(target, "a Markdown link to a file that does not exist in the repository");
      }
    }
  }
  return findings;
}

namespace {

const char* const kLayers[] = {"sim", "verifier", "solver", "traces", "apps"};

bool is_source(const fs::path& file) {
  const std::string ext = file.extension().string();
  return ext == ".cpp" || ext == ".hpp" || ext == ".h" || ext == ".cc";
}

}  // namespace

int layer_of(const std::string& top_folder) {
  for (int i = 0; i < 5; ++i)
    if (top_folder == kLayers[i]) return i;
  return -1;
}

std::vector<Finding> upward_includes(const fs::path& root) {
  static const std::regex quoted_include(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<Finding> findings;
  for (const fs::path& file : repository_files(root)) {
    if (!is_source(file)) continue;
    const int layer = layer_of(file.begin()->string());
    if (layer < 0) continue;
    std::istringstream lines(read_text(root / file));
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      std::smatch m;
      if (!std::regex_search(line, m, quoted_include)) continue;
      const std::string target = m[1].str();
      const size_t slash = target.find('/');
      if (slash == std::string::npos) continue;  // a header next to the file
      const int target_layer = layer_of(target.substr(0, slash));
      if (target_layer < 0) {
        if (fs::exists(root / target))
          findings.push_back({file.generic_string(), number, target, "includes a folder outside the layers"});
        continue;
      }
      if (target_layer > layer)
        findings.push_back(
            {file.generic_string(), number, target,
             std::string("goes up from ") + kLayers[layer] + "/ to " + kLayers[target_layer] + "/"});
    }
  }
  return findings;
}

std::vector<Finding> misplaced_programs(const fs::path& root) {
  static const std::regex entry_point(R"((^|\s)int\s+(main|sc_main)\s*\()");
  std::vector<Finding> findings;
  for (const fs::path& file : repository_files(root)) {
    const int layer = is_source(file) ? layer_of(file.begin()->string()) : -1;
    if (layer < 0 || layer == 4) continue;
    std::istringstream lines(read_text(root / file));
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number)
      if (std::regex_search(line, entry_point))
        findings.push_back({file.generic_string(), number, line, "a program outside apps/"});
  }
  return findings;
}

std::vector<Finding> oversized_sources(const fs::path& root, int max_lines) {
  std::vector<Finding> findings;
  for (const fs::path& file : repository_files(root)) {
    if (!is_source(file) || layer_of(file.begin()->string()) < 0) continue;
    const std::string text = read_text(root / file);
    const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    if (lines > max_lines)
      findings.push_back({file.generic_string(), lines, std::to_string(lines) + " lines",
                          "longer than " + std::to_string(max_lines) + " lines: split it by concern"});
  }
  return findings;
}

namespace {

// The source with comments, string and character literals blanked (newlines kept, so lines still count).
std::string code_only(const std::string& text) {
  std::string out = text;
  size_t i = 0;
  const auto blank = [&](size_t from, size_t to) {
    for (size_t j = from; j < to && j < out.size(); ++j)
      if (out[j] != '\n') out[j] = ' ';
  };
  bool line_start = true;
  while (i < text.size()) {
    if (line_start && text[i] == '#') {  // a preprocessor line, with its continuations
      size_t end = i;
      while (end < text.size() && !(text[end] == '\n' && text[end - 1] != '\\')) ++end;
      blank(i, end);
      i = end;
      continue;
    }
    if (text[i] != ' ' && text[i] != '\t') line_start = text[i] == '\n';
    if (text.compare(i, 2, "//") == 0) {
      const size_t end = text.find('\n', i);
      blank(i, end == std::string::npos ? text.size() : end);
      i = end == std::string::npos ? text.size() : end;
    } else if (text.compare(i, 2, "/*") == 0) {
      const size_t end = text.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? text.size() : end + 2;
      blank(i, stop);
      i = stop;
    } else if (text[i] == 'R' && i + 1 < text.size() && text[i + 1] == '"' &&
               (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_'))) {
      const size_t open = text.find('(', i + 2);
      if (open == std::string::npos) break;
      const std::string closing = ")" + text.substr(i + 2, open - i - 2) + "\"";
      const size_t end = text.find(closing, open);
      const size_t stop = end == std::string::npos ? text.size() : end + closing.size();
      blank(i, stop);
      i = stop;
    } else if (text[i] == '"' ||
               (text[i] == '\'' &&
                !(i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1]))))) {  // not 1'000
      const char quote = text[i];
      size_t j = i + 1;
      while (j < text.size() && text[j] != quote && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      blank(i, j + 1);
      i = j + 1;
    } else {
      ++i;
    }
  }
  return out;
}

std::string function_name(const std::string& header) {
  static const std::regex name(R"(([A-Za-z_~][A-Za-z0-9_:~<>]*|operator\s*\S+)\s*\()");
  std::smatch m;
  return std::regex_search(header, m, name) ? m[1].str() : header;
}

}  // namespace

std::vector<Finding> long_functions(const fs::path& root, const std::vector<std::string>& folders,
                                    int max_lines) {
  static const std::regex container(R"((^|\W)(namespace|class|struct|union|enum|extern)(\W|$))");
  std::vector<Finding> findings;
  for (const fs::path& file : repository_files(root)) {
    if (!is_source(file) ||
        std::find(folders.begin(), folders.end(), file.begin()->string()) == folders.end())
      continue;
    const std::string code = code_only(read_text(root / file));
    enum class Scope { container, function, block };
    struct Open {
      Scope scope;
      int first_line;
      std::string name;
    };
    std::vector<Open> open;
    std::string header;
    int line = 1, header_line = 1;
    const auto in_container = [&] { return open.empty() || open.back().scope == Scope::container; };
    for (const char c : code) {
      if (c == '{') {
        Scope scope = Scope::block;
        if (in_container()) {
          if (std::regex_search(header, container) && header.find('(') == std::string::npos)
            scope = Scope::container;
          else if (header.find(')') != std::string::npos)
            scope = Scope::function;
        }
        open.push_back({scope, header_line, scope == Scope::function ? function_name(header) : ""});
        header.clear();
      } else if (c == '}') {
        if (!open.empty()) {
          const Open done = open.back();
          open.pop_back();
          const int length = line - done.first_line + 1;
          if (done.scope == Scope::function && length > max_lines)
            findings.push_back({file.generic_string(), done.first_line,
                                done.name + " (" + std::to_string(length) + " lines)",
                                "longer than " + std::to_string(max_lines) + " lines: split it"});
        }
        header.clear();
      } else if (c == ';') {
        header.clear();
      } else if (in_container()) {
        if (header.find_first_not_of(" \t\n") == std::string::npos &&
            !std::isspace(static_cast<unsigned char>(c)))
          header_line = line;
        header += c;
      }
      if (c == '\n') {
        ++line;
      }
    }
  }
  return findings;
}

}  // namespace mlsys::test
