#include "support.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/json_io.hpp"

namespace mlsys::test {

std::string source_path(const std::string& relative) { return std::string(MLSYS_SOURCE_DIR) + "/" + relative; }

Loaded load(const std::string& problem_path, const std::string& solution_path) {
  Loaded l;
  l.problem = load_problem(problem_path);
  l.graph = analyze_graph(l.problem, problem_path);
  l.schedule = load_schedule(solution_path, l.problem);
  return l;
}

static std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandResult run_command(const std::string& binary, const std::string& args) {
  const std::string dir = temp_dir("cmd");
  const std::string command = "'" + binary + "' " + args + " >'" + dir + "/out' 2>'" + dir + "/err' </dev/null";
  const int status = std::system(command.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp(dir + "/out");
  r.err = slurp(dir + "/err");
  return r;
}

std::string temp_dir(const std::string& name) {
  static int counter = 0;
  auto path = std::filesystem::temp_directory_path() /
              ("mlsys-test-" + std::to_string(::getpid()) + "-" + name + "-" + std::to_string(counter++));
  std::filesystem::create_directories(path);
  return path.string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace mlsys::test
