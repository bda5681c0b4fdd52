#include "repository_checks.hpp"

#include <algorithm>
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

}  // namespace mlsys::test
